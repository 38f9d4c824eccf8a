// Spend so far per budget scope, read from the hourly rollups: the floor the governor's counters are raised to at
// start and on every reconciliation, so a lost Redis (or a restarted pod) never forgets what was spent.
// Exact, not an approximation: a period starts at a whole UTC hour, a row's rollup hour is its occurred_at cut to the
// UTC hour, so `hour >= since` selects exactly the rows at or after `since`; and the writer adds a row to both rollups
// in the statement that inserts it (replays add nothing), so the current hour is in them too. Unlike the raw rows,
// the rollups outlive partition retention, so a budget keeps its spend when old days are dropped.
import type { Queryable } from '../store/store.ts';

export type SpendScope = { scope: 'organization'; organization: string } | { scope: 'project'; organization: string; project: string } | { scope: 'key'; apiKeyId: string };

// Each reads a prefix of its table's primary key or index: (organization, hour), (project, hour, …), (api_key_id, hour, …).
const ORGANIZATION_SQL = 'SELECT COALESCE(SUM(cost_points), 0)::text AS spent FROM usage_hourly WHERE organization = $1 AND hour >= $2';
const PROJECT_SQL = 'SELECT COALESCE(SUM(cost_points), 0)::text AS spent FROM usage_hourly WHERE organization = $1 AND project = $2 AND hour >= $3';
const KEY_SQL = 'SELECT COALESCE(SUM(cost_points), 0)::text AS spent FROM usage_hourly_keys WHERE api_key_id = $1 AND hour >= $2';

/** Points spent by the scope at or after `since` (a UTC hour boundary), as the exact decimal text the database sums. */
export async function spendSince(q: Queryable, s: SpendScope, since: Date): Promise<string> {
  if (since.getTime() % 3_600_000 !== 0) throw new RangeError('spendSince: since must be a whole UTC hour');
  const { rows } =
    s.scope === 'organization'
      ? await q.query<{ spent: string }>(ORGANIZATION_SQL, [s.organization, since])
      : s.scope === 'project'
        ? await q.query<{ spent: string }>(PROJECT_SQL, [s.organization, s.project, since])
        : await q.query<{ spent: string }>(KEY_SQL, [s.apiKeyId, since]);
  return rows[0]?.spent ?? '0';
}
