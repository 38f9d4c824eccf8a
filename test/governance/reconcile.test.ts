// Spend counters are raised to what the ledger says was spent in the current period (at start and every minute).
import { describe, expect, it } from 'vitest';
import { generateApiKey } from '../../gateway/auth/api-key.ts';
import { reconcile } from '../../gateway/governance/create.ts';
import { MemoryBackend } from '../../gateway/governance/memory-backend.ts';
import { periodId } from '../../gateway/governance/periods.ts';
import { parseSpendReport } from '../../gateway/governance/spend-report.ts';
import { unitsToPoints } from '../../gateway/governance/spend-units.ts';
import { compileSnapshot } from '../../gateway/snapshot/runtime.ts';
import { snapshotSchema } from '../../gateway/snapshot/schema.ts';
import { useTestDatabase } from '../support/databases.ts';

const db = useTestDatabase(process.env.DATABASE_URL ? 'postgres' : 'pglite');

describe('reconciliation with the ledger', () => {
  it('raises organization, project and key budgets of the current period to the ledger, never lowers them', async () => {
    const store = db().store;
    const now = Date.UTC(2026, 10, 24, 12, 30);
    const hour = (h: number, d = 24) => new Date(Date.UTC(2026, 10, d, h));
    const hourly = 'INSERT INTO usage_hourly VALUES ($1, $2, $3, $4, 0, 0, 0, 0, 0, 0, 0, 1, $5, $5)';
    await store.query(hourly, ['web', hour(3), 'm', 'acme', '1.25']);
    await store.query(hourly, ['web', hour(11), 'm2', 'acme', '0.000000000000001']);
    await store.query(hourly, ['api', hour(5), 'm', 'acme', '2']);
    await store.query(hourly, ['web', hour(23, 23), 'm', 'acme', '100']); // yesterday: not in today's budget
    // Per key: the key rollup the ledger writer maintains beside usage_hourly (gateway/ledger/spend-rollup.test.ts
    // proves it equals the raw rows).
    const byKey = `INSERT INTO usage_hourly_keys VALUES ('k1', $1, 'm', 'acme', 'web', 0, 0, 0, 0, 0, 0, 0, 1, $2, $2)`;
    await store.query(byKey, [hour(2), '0.5']);
    await store.query(byKey, [hour(1, 1), '7']); // earlier this month
    const k = generateApiKey();
    const s = compileSnapshot(
      snapshotSchema.parse({
        providers: [{ id: 'p', baseUrl: 'http://127.0.0.1:9/v1' }],
        pricingGroups: [{ id: 'g', mode: 'flat_tokens', prices: { input: '1', output: '2' } }],
        models: [{ id: 'm', pricingGroup: 'g', protocols: { openai: [{ provider: 'p', model: 'a' }] } }],
        organizations: [{ id: 'acme', models: ['*'], budget: { day: '1000', month: '1000' }, projects: [{ id: 'web', budget: { day: '10' } }] }],
        apiKeys: [{ id: 'k1', hash: k.hash, prefix: k.prefix, organization: 'acme', project: 'web', budget: { day: '5', month: '50' } }],
      }),
    );
    const b = new MemoryBackend();
    const day = periodId('day', now);
    const month = periodId('month', now);
    b.spend.set(`k:k1:spend:${month}`, 10n ** 16n); // 10 points already counted: more than the ledger has (7.5)
    const report = await reconcile(b, store, s, now);
    const pts = (key: string) => unitsToPoints(b.spent(key));
    expect(pts(`o:acme:spend:${day}`)).toBe('3.250000000000001');
    expect(pts(`o:acme:spend:${month}`)).toBe('103.250000000000001');
    expect(pts(`p:acme/web:spend:${day}`)).toBe('1.250000000000001');
    expect(pts(`k:k1:spend:${day}`)).toBe('0.5');
    expect(pts(`k:k1:spend:${month}`)).toBe('10');
    // The same figures, as the ledger has them, are what the pod reports for Organization and ApiKey status.
    expect(parseSpendReport(report)).toEqual({
      day,
      month,
      scopes: { 'Organization/acme': { day: '3.250000000000001', month: '103.250000000000001' }, 'ApiKey/k1': { day: '0.5', month: '7.5' } },
    });
  });
});
