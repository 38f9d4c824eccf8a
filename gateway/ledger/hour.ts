// UTC hour buckets computed in JS, so no result depends on a session's TimeZone setting.
export const HOUR_MS = 3_600_000;

export function floorHour(ms: number): number {
  return ms - (((ms % HOUR_MS) + HOUR_MS) % HOUR_MS);
}

export function ceilHour(ms: number): number {
  const f = floorHour(ms);
  return f === ms ? f : f + HOUR_MS;
}

/**
 * How a report reads [from, to): whole hours from a rollup, the partial edges from raw rows. Six ISO instants, the
 * SQL parameters in this order: rollup [start, end), first raw edge [start, end), last raw edge [start, end). With no
 * whole hour inside, everything comes from raw rows; an empty range reads nothing.
 */
export function rollupRanges(from: number, to: number): string[] {
  const iso = (ms: number) => new Date(ms).toISOString();
  if (from >= to) return Array<string>(6).fill(iso(from));
  const fullFrom = ceilHour(from);
  const fullTo = floorHour(to);
  return fullFrom < fullTo ? [iso(fullFrom), iso(fullTo), iso(from), iso(fullFrom), iso(fullTo), iso(to)] : [iso(from), iso(from), iso(from), iso(to), iso(to), iso(to)];
}
