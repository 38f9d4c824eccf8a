// UTC hour buckets computed in JS, so no result depends on a session's TimeZone setting.
export const HOUR_MS = 3_600_000;

export function floorHour(ms: number): number {
  return ms - (((ms % HOUR_MS) + HOUR_MS) % HOUR_MS);
}

export function ceilHour(ms: number): number {
  const f = floorHour(ms);
  return f === ms ? f : f + HOUR_MS;
}
