// Budget spend read from the hourly rollups equals the sum over raw ledger rows for every period start (a whole UTC
// hour), for keys, projects and organizations, with rows replayed from a crashed process's journal counted once; and
// it survives partition retention, which the raw rows do not.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BACKENDS, useTestDatabase } from '../../test/support/databases.ts';
import { freshProject, ledgerRow } from '../../test/support/ledger-rows.ts';
import { periodStart } from '../governance/periods.ts';
import { maintainPartitions } from '../store/partitions.ts';
import type { Queryable } from '../store/store.ts';
import { HOUR_MS } from './hour.ts';
import { createLedger } from './ledger.ts';
import type { LedgerRow } from './row.ts';
import { spendSince } from './spend-rollup.ts';
import type { SpendScope } from './spend-rollup.ts';
import { writeUsageBatch } from './writer.ts';

const quiet = { info() {}, warn() {}, error() {} };

// Deterministic costs with up to 15 decimal places, some whole numbers: sums must stay exact.
function cost(i: number): string {
  if (i % 7 === 0) return String(1 + (i % 5));
  const frac = String((i * 7919 * 104729) % 1_000_000_000_000_000).padStart(15, '0');
  return `${i % 3}.${frac}`;
}

async function rawSpend(q: Queryable, s: SpendScope, since: Date): Promise<string> {
  const [where, params] =
    s.scope === 'key' ? ['api_key_id = $1', [s.apiKeyId]] : s.scope === 'project' ? ['organization = $1 AND project = $2', [s.organization, s.project]] : ['organization = $1', [s.organization]];
  const { rows } = await q.query<{ spent: string }>(
    `SELECT COALESCE(SUM(cost_points), 0)::text AS spent FROM usage_events WHERE ${where} AND occurred_at >= $${params.length + 1}`,
    [...params, since],
  );
  return rows[0].spent;
}

describe.each(BACKENDS)('spend from the rollups on %s', (backend) => {
  const db = useTestDatabase(backend);

  it('equals the raw sum from every whole hour, for key, project and organization, with replayed rows counted once', async () => {
    const now = Date.UTC(2025, 2, 10, 14, 37);
    const org = freshProject('org');
    const project = freshProject();
    const other = freshProject();
    const key = freshProject('key');
    const otherKey = freshProject('key');
    // 60 hours back from now, minutes apart, two keys in two projects of one organization; a few rows sit in the
    // current hour and on the period edges (the first millisecond of the day and month, the last of the previous ones).
    const rows: LedgerRow[] = [];
    for (let i = 0; i < 360; i++) {
      const mine = i % 3 !== 0;
      rows.push(ledgerRow({ organization: org, project: mine ? project : other, apiKeyId: mine ? key : otherKey, occurredAt: now - i * 10 * 60_000 - (i % 11) * 1000, costPoints: cost(i), originalCost: cost(i) }));
    }
    for (const at of [Date.UTC(2025, 2, 10), Date.UTC(2025, 2, 10) - 1, Date.UTC(2025, 2, 1), Date.UTC(2025, 2, 1) - 1, now - 1]) {
      rows.push(ledgerRow({ organization: org, project, apiKeyId: key, occurredAt: at, costPoints: '0.000000000000000001', originalCost: '0' }));
    }

    // A "crashed" process journals everything but its database never answered; some rows were committed before the
    // crash (segment not yet deleted); the restarted process replays the whole journal.
    const dir = join(db().dir, 'journal-replay');
    const down = await db().interruptible({ startDown: true });
    const crashed = createLedger({ store: down.store, journalDir: dir, batchSize: 100, flushIntervalMs: 60_000, retry: { baseMs: 60_000, capMs: 60_000 }, logger: quiet });
    for (const r of rows) await crashed.record(r);
    await down.up();
    await writeUsageBatch(db().store, rows.slice(0, 150));
    const restarted = createLedger({ store: db().store, journalDir: dir, batchSize: 100, logger: quiet });
    await restarted.flush();
    await restarted.close();
    // And the same batch once more, as a retry after a lost acknowledgement would send it.
    await writeUsageBatch(db().store, rows.slice(100, 250));

    const store = db().store;
    const { rows: count } = await store.query<{ n: string }>('SELECT count(*) AS n FROM usage_events WHERE organization = $1', [org]);
    expect(Number(count[0].n)).toBe(rows.length);
    const scopes: SpendScope[] = [
      { scope: 'key', apiKeyId: key },
      { scope: 'key', apiKeyId: otherKey },
      { scope: 'project', organization: org, project },
      { scope: 'organization', organization: org },
    ];
    const starts = [periodStart('day', now), periodStart('month', now), periodStart('total', now)];
    for (let h = Math.floor(now / HOUR_MS) * HOUR_MS; h >= now - 62 * HOUR_MS; h -= HOUR_MS) starts.push(h);
    for (const s of scopes) {
      for (const since of starts) expect([s, since, await spendSince(store, s, new Date(since))]).toEqual([s, since, await rawSpend(store, s, new Date(since))]);
    }
    // Not vacuous: the key spent something today, and the month includes the row on its first millisecond.
    expect(await spendSince(store, scopes[0], new Date(periodStart('day', now)))).not.toBe('0');
    const monthTotal = await spendSince(store, scopes[0], new Date(periodStart('month', now)));
    expect(monthTotal).toBe(await rawSpend(store, scopes[0], new Date(Date.UTC(2025, 2, 1))));
    expect(monthTotal).not.toBe(await rawSpend(store, scopes[0], new Date(Date.UTC(2025, 2, 1) + 1)));
    await expect(spendSince(store, scopes[0], new Date(now))).rejects.toThrow(RangeError);
  });

  it('keeps the spend when retention drops the raw rows', async () => {
    const day0 = Date.UTC(2025, 6, 1);
    const org = freshProject('org');
    const key = freshProject('key');
    const project = freshProject();
    await maintainPartitions(db().store, { now: day0, daysAhead: 3 });
    const rows = Array.from({ length: 96 }, (_, i) =>
      ledgerRow({ organization: org, project, apiKeyId: key, occurredAt: day0 + i * HOUR_MS + 17_000, costPoints: cost(i + 1), originalCost: '0' }),
    );
    for (let i = 0; i < rows.length; i += 24) expect(await writeUsageBatch(db().store, rows.slice(i, i + 24))).toBe(24);
    const total = { scope: 'key', apiKeyId: key } as const;
    const before = await spendSince(db().store, total, new Date(0));
    expect(before).toBe(await rawSpend(db().store, total, new Date(0)));
    // Four days later, keeping one day: the first days' partitions go.
    const gone = await maintainPartitions(db().store, { now: day0 + 4 * 86_400_000, retentionDays: 1 });
    expect(gone.dropped.length).toBeGreaterThanOrEqual(3);
    expect(await rawSpend(db().store, total, new Date(0))).not.toBe(before);
    expect(await spendSince(db().store, total, new Date(0))).toBe(before);
    expect(await spendSince(db().store, { scope: 'organization', organization: org }, new Date(0))).toBe(before);
    expect(await spendSince(db().store, { scope: 'project', organization: org, project }, new Date(0))).toBe(before);
  });
});
