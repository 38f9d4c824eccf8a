// Spend so far per budget scope, read from the ledger: the floor the governor's counters are raised to at start and
// on every reconciliation, so a lost Redis (or a restarted pod) never forgets what was spent.
import type { Queryable } from '../store/store.ts';

export type SpendScope = { scope: 'organization'; organization: string } | { scope: 'project'; organization: string; project: string } | { scope: 'key'; apiKeyId: string };

/** Points spent by the scope at or after `since` (a UTC hour boundary), as the exact decimal text the database sums. */
export async function spendSince(q: Queryable, s: SpendScope, since: Date): Promise<string> {
  let sql: string;
  let params: unknown[];
  if (s.scope === 'organization') {
    sql = 'SELECT COALESCE(SUM(cost_points), 0)::text AS spent FROM usage_hourly WHERE organization = $1 AND hour >= $2';
    params = [s.organization, since];
  } else if (s.scope === 'project') {
    sql = 'SELECT COALESCE(SUM(cost_points), 0)::text AS spent FROM usage_hourly WHERE organization = $1 AND project = $2 AND hour >= $3';
    params = [s.organization, s.project, since];
  } else {
    sql = 'SELECT COALESCE(SUM(cost_points), 0)::text AS spent FROM usage_events WHERE api_key_id = $1 AND occurred_at >= $2';
    params = [s.apiKeyId, since];
  }
  const { rows } = await q.query<{ spent: string }>(sql, params);
  return rows[0]?.spent ?? '0';
}
