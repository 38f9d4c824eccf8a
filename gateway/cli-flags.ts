// Command-line values checked as flags: a wrong one is a usage error naming the flag, never a stack or a bad file.

/** A mistake on the command line: reported with the usage, exit code 2. */
export class UsageError extends Error {}

export function intFlag(name: string, raw: string | undefined, min: number, max: number): number | undefined {
  if (raw === undefined || raw === '') return undefined;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) throw new UsageError(`${name} must be a whole number from ${min} to ${max} (got "${raw}")`);
  return n;
}

const RFC3339 = /^\d{4}-\d{2}-\d{2}(?:[Tt ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:[Zz]|[+-]\d{2}:\d{2}))?$/;

/** --expires: an RFC 3339 timestamp (or a date, midnight UTC) later than now; returned as an ISO timestamp. */
export function expiryFlag(raw: string | undefined, now = Date.now()): string | undefined {
  if (raw === undefined) return undefined;
  const t = RFC3339.test(raw) ? Date.parse(raw.length === 10 ? `${raw}T00:00:00Z` : raw) : Number.NaN;
  if (Number.isNaN(t)) throw new UsageError(`--expires "${raw}" is not an RFC 3339 timestamp or date (e.g. 2027-01-31T00:00:00Z or 2027-01-31)`);
  if (t <= now) throw new UsageError(`--expires ${raw} is in the past; a new key must expire later than now`);
  return new Date(t).toISOString();
}
