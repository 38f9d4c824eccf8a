// Reading untrusted JSON (upstream answers, error bodies, stream events) without throwing: one set of guards for all.

export function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** The value as a plain object, or undefined when it is anything else (null, an array, a scalar). */
export function asObject(v: unknown): Record<string, unknown> | undefined {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
}

/** A token count as providers send it: a finite positive number floored; anything else is 0. */
export function nonNegativeInt(v: unknown): number {
  return typeof v === 'number' && Number.isFinite(v) && v > 0 ? Math.floor(v) : 0;
}

/** JSON.parse that returns undefined instead of throwing: upstream bytes are untrusted. */
export function parseJson(data: string | Buffer): unknown {
  try {
    return JSON.parse(typeof data === 'string' ? data : data.toString('utf8'));
  } catch {
    return undefined;
  }
}
