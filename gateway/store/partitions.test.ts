import { describe, expect, it } from 'vitest';
import { BACKENDS, countRows, useTestDatabase } from '../../test/support/databases.ts';
import { freshProject, ledgerRow } from '../../test/support/ledger-rows.ts';
import { writeUsageBatch } from '../ledger/writer.ts';
import type { Queryable } from './store.ts';
import { migrate, readMigrations } from './migrate.ts';
import { maintainPartitions, partitionName } from './partitions.ts';

const DAY = 86_400_000;
const D0 = Date.UTC(2031, 2, 10); // a day no other test writes to

async function partitionOf(q: Queryable, requestId: string): Promise<string> {
  const { rows } = await q.query<{ p: string }>('SELECT tableoid::regclass::text AS p FROM usage_events WHERE request_id = $1', [requestId]);
  return rows.map((r) => r.p).join(',');
}

async function hourly(q: Queryable, project: string): Promise<{ request_count: string; input: string }[]> {
  const { rows } = await q.query<{ request_count: string; input: string }>(
    'SELECT request_count, input FROM usage_hourly WHERE project = $1 ORDER BY hour',
    [project],
  );
  return rows;
}

describe.each(BACKENDS)('usage_events partitions on %s', (backend) => {
  const db = useTestDatabase(backend);

  it('creates today and the days ahead once, and routes rows into their day', async () => {
    const { store } = db();
    const first = await maintainPartitions(store, { now: D0 + 5 * 3_600_000, daysAhead: 2 });
    expect(first).toMatchObject({ ran: true, created: [partitionName(D0), partitionName(D0 + DAY), partitionName(D0 + 2 * DAY)], moved: 0 });
    expect((await maintainPartitions(store, { now: D0, daysAhead: 2 })).created).toEqual([]);
    const project = freshProject();
    const a = ledgerRow({ project, occurredAt: D0 + 1 });
    const b = ledgerRow({ project, occurredAt: D0 + DAY + 2 * 3_600_000 + 0.7 });
    expect(await writeUsageBatch(store, [a, b])).toBe(2);
    expect(await partitionOf(store, a.requestId)).toBe(partitionName(D0));
    expect(await partitionOf(store, b.requestId)).toBe(partitionName(D0 + DAY));
  });

  it('keeps replays exactly-once: a replayed batch inserts nothing and leaves the rollup unchanged', async () => {
    const { store } = db();
    await maintainPartitions(store, { now: D0 });
    const project = freshProject();
    const rows = Array.from({ length: 50 }, (_, i) => ledgerRow({ project, occurredAt: D0 + i * 3_600_000 + 0.25, input: 10 }));
    expect(await writeUsageBatch(store, rows)).toBe(50);
    const before = await hourly(store, project);
    // Journal replay after a crash between commit and segment removal: the same rows again, partly with new ones.
    const extra = ledgerRow({ project, occurredAt: D0 + 3_600_000, input: 10 });
    expect(await writeUsageBatch(store, [...rows, extra])).toBe(1);
    expect(await writeUsageBatch(store, rows)).toBe(0);
    expect(await countRows(store, 'usage_events', 'project = $1', [project])).toBe(51);
    const after = await hourly(store, project);
    expect(after.reduce((n, r) => n + Number(r.request_count), 0)).toBe(51);
    expect(after[1]).toEqual({ request_count: String(Number(before[1].request_count) + 1), input: String(Number(before[1].input) + 10) });
  });

  it('sends a row for a day with no partition to the default one, moves it into its day when created, and a replay still hits it', async () => {
    const { store } = db();
    const day = D0 + 40 * DAY;
    const project = freshProject();
    const row = ledgerRow({ project, occurredAt: day + 123, input: 7 });
    expect(await writeUsageBatch(store, [row])).toBe(1);
    expect(await partitionOf(store, row.requestId)).toBe('usage_events_default');
    const made = await maintainPartitions(store, { now: day, daysAhead: 0 });
    expect(made).toMatchObject({ created: [partitionName(day)], moved: 1 });
    expect(await partitionOf(store, row.requestId)).toBe(partitionName(day));
    expect(await writeUsageBatch(store, [row])).toBe(0);
    expect(await hourly(store, project)).toEqual([{ request_count: '1', input: '7' }]);
  });

  it('drops day partitions and default rows past retention, keeping the hourly rollup', async () => {
    const { store } = db();
    const start = D0 + 100 * DAY;
    await maintainPartitions(store, { now: start, daysAhead: 3 });
    const project = freshProject();
    const rows = [0, 1, 2, 3].map((d) => ledgerRow({ project, occurredAt: start + d * DAY + 60_000, input: 1 }));
    const stray = ledgerRow({ project, occurredAt: start - 10 * DAY, input: 1 }); // no partition: default
    expect(await writeUsageBatch(store, [...rows, stray])).toBe(5);
    // Four days later with two days' retention: start and start+1 are past it, start+2 and start+3 are kept.
    const result = await maintainPartitions(store, { now: start + 4 * DAY + 1, daysAhead: 0, retentionDays: 2 });
    expect(result.dropped).toEqual(expect.arrayContaining([partitionName(start), partitionName(start + DAY)]));
    expect(result.dropped).not.toContain(partitionName(start + 2 * DAY));
    expect(result.purged).toBeGreaterThanOrEqual(1);
    const { rows: left } = await store.query<{ request_id: string }>('SELECT request_id FROM usage_events WHERE project = $1', [project]);
    expect(left.map((r) => r.request_id).sort()).toEqual([rows[2].requestId, rows[3].requestId].sort());
    expect((await hourly(store, project)).reduce((n, r) => n + Number(r.request_count), 0)).toBe(5);
  });

  it('lets one of several concurrent maintainers do the work', async () => {
    const d = db();
    const day = D0 + 200 * DAY;
    const stores = backend === 'postgres' ? [d.openStore(), d.openStore(), d.openStore()] : [d.store, d.store, d.store];
    const results = await Promise.all(stores.map((s) => maintainPartitions(s, { now: day, daysAhead: 1 })));
    expect(results.flatMap((r) => r.created).sort()).toEqual([partitionName(day), partitionName(day + DAY)]);
  });
});

describe.each(BACKENDS)('migration 0002 on %s', (backend) => {
  const db = useTestDatabase(backend, { migrate: false });

  it('moves existing rows into day partitions, keeps the rollup, and replays stay exactly-once', async () => {
    const { store } = db();
    const all = readMigrations();
    await migrate(store, all.filter((m) => m.version === '0001'));
    const project = freshProject();
    const rows = [0, 1, 1, 5].map((d, i) => ledgerRow({ project, occurredAt: D0 + d * DAY + i * 1000 + 0.5, input: 3 }));
    // Written with 0001's statement shape: ON CONFLICT on the old key.
    await store.query(
      `INSERT INTO usage_events SELECT r.request_id, r.occurred_at, 'o', $1, 'k', 'm', 'm', 'p', 'u', '/e', false, 3, 0, 0, 0, 0, 0, 0, false, 1, 1, NULL
       FROM unnest($2::text[], $3::timestamptz[]) AS r(request_id, occurred_at)`,
      [project, rows.map((r) => r.requestId), rows.map((r) => new Date(Math.trunc(r.occurredAt)).toISOString())],
    );
    expect(await migrate(store, all)).toEqual(all.map((m) => m.version).filter((v) => v !== '0001'));
    const { rows: parts } = await store.query<{ p: string; n: string }>(
      'SELECT tableoid::regclass::text AS p, count(*) AS n FROM usage_events WHERE project = $1 GROUP BY 1 ORDER BY 1',
      [project],
    );
    expect(parts).toEqual([
      { p: partitionName(D0), n: '1' },
      { p: partitionName(D0 + DAY), n: '2' },
      { p: partitionName(D0 + 5 * DAY), n: '1' },
    ]);
    // The journal replays the rows it wrote before the upgrade: nothing new.
    expect(await writeUsageBatch(store, rows.map((r) => ({ ...r, project, organization: 'o' })))).toBe(0);
  });
});
