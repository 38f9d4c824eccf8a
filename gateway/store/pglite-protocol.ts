// Messages between the PGlite store and its worker thread.

export type PgliteRequest =
  | { id: number; op: 'query'; sql: string; params?: unknown[] }
  | { id: number; op: 'exec'; sql: string; blob?: string | Uint8Array }
  | { id: number; op: 'close' };

/** id 0 answers the start (PGlite opened or not). */
export type PgliteReply = { id: number; ok: true; rows?: unknown[] } | { id: number; ok: false; error: ErrorFields };

/** What callers read off a database error (the SQLSTATE `code` decides retry or set aside), in a cloneable shape. */
export interface ErrorFields {
  message: string;
  name?: string;
  code?: string;
  detail?: string;
  constraint?: string;
  severity?: string;
}

export function errorFields(err: unknown): ErrorFields {
  const e = err as Partial<Record<keyof ErrorFields, unknown>>;
  const out: ErrorFields = { message: String(e?.message ?? err) };
  for (const k of ['name', 'code', 'detail', 'constraint', 'severity'] as const) if (typeof e?.[k] === 'string') out[k] = e[k];
  return out;
}

export function errorFrom(f: ErrorFields): Error {
  const { message, ...rest } = f;
  return Object.assign(new Error(message), rest);
}
