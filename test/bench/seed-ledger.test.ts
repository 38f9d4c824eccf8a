// The bench's seeded ledger must look as if the ledger writer had written it: both rollups equal the raw rows, so the
// admin API's usage views (which read the per-key rollup) and the key budgets see the seeded spend.
import { describe, expect, it } from 'vitest';
import { seedLedger } from '../../bench/seed-ledger.ts';
import { adminUsage } from '../../gateway/ledger/admin-queries.ts';
import { spendSince } from '../../gateway/ledger/spend-rollup.ts';
import { BACKENDS, useTestDatabase } from '../support/databases.ts';

describe.each(BACKENDS)('seeded ledger on %s', (backend) => {
  const db = useTestDatabase(backend);

  it('fills usage_hourly_keys consistently with usage_events', async () => {
    const { store } = db();
    const end = Date.UTC(2026, 10, 24, 12);
    const r = await seedLedger(store, { rows: 20_000, days: 2, end, projects: 6, organizations: 2 });
    expect(r.hourlyKeyRows).toBeGreaterThan(0);
    const diff = `
      SELECT count(*) AS n FROM (
        (SELECT api_key_id, hour, client_model, organization, project, input, output, cache_read, request_count, cost_points FROM usage_hourly_keys
         EXCEPT
         SELECT api_key_id, date_trunc('hour', occurred_at, 'UTC'), coalesce(nullif(client_model, ''), model_id), max(organization), max(project),
           sum(input), sum(output), sum(cache_read), count(*), sum(cost_points) FROM usage_events GROUP BY 1, 2, 3)
        UNION ALL
        (SELECT api_key_id, date_trunc('hour', occurred_at, 'UTC'), coalesce(nullif(client_model, ''), model_id), max(organization), max(project),
           sum(input), sum(output), sum(cache_read), count(*), sum(cost_points) FROM usage_events GROUP BY 1, 2, 3
         EXCEPT
         SELECT api_key_id, hour, client_model, organization, project, input, output, cache_read, request_count, cost_points FROM usage_hourly_keys)
      ) d`;
    expect((await store.query<{ n: string }>(diff)).rows[0].n).toBe('0');
    const { rows } = await store.query<{ n: string }>('SELECT count(*) AS n FROM usage_hourly_keys');
    expect(Number(rows[0].n)).toBe(r.hourlyKeyRows);
    // What the admin API shows per key over the whole range is the raw total.
    const usage = await adminUsage(store, { from: new Date(end - 2 * 86_400_000), to: new Date(end), bucket: 'day', groupBy: 'key' });
    expect(usage.totals.map((t) => t.group).sort()).toEqual(['key-0', 'key-1', 'key-2', 'key-3', 'key-4', 'key-5']);
    expect(usage.total.requests).toBe(20_000);
    const { rows: raw } = await store.query<{ spent: string }>("SELECT sum(cost_points)::text AS spent FROM usage_events WHERE api_key_id = 'key-1'");
    expect(await spendSince(store, { scope: 'key', apiKeyId: 'key-1' }, new Date(0))).toBe(raw[0].spent);
  });
});
