import { describe, expect, it } from 'vitest';
import { BACKENDS, useTestDatabase } from '../../test/support/databases.ts';
import { freshProject, ledgerRow } from '../../test/support/ledger-rows.ts';
import { add, compare, parseDecimal, toPlainString, ZERO } from '../billing/decimal.ts';
import { HOUR_MS } from './hour.ts';
import type { UsageRow } from './report-types.ts';
import type { LedgerRow } from './row.ts';
import { usageReport } from './usage-report.ts';
import { writeUsageBatch } from './writer.ts';

const T0 = Date.UTC(2025, 2, 10, 0, 0);
const MIN = 60_000;

// The report computed the slow, obvious way: every raw row in [from, to), summed in JS.
function bruteForce(rows: LedgerRow[], project: string, from: number, to: number) {
  const groups = new Map<string, LedgerRow[]>();
  for (const r of rows) {
    if (r.project !== project || r.occurredAt < from || r.occurredAt >= to) continue;
    const model = r.clientModel || r.modelId;
    groups.set(model, [...(groups.get(model) ?? []), r]);
  }
  const sum = (rs: LedgerRow[]): UsageRow => {
    const f = (pick: (r: LedgerRow) => number) => rs.reduce((n, r) => n + pick(r), 0);
    const prompt = f((r) => r.input + r.cacheRead + r.cacheWrite);
    return {
      prompt_tokens: prompt,
      billable_prompt_tokens: f((r) => r.input),
      cached_tokens: f((r) => r.cacheRead),
      cache_explicit_read_tokens: f((r) => (r.explicitCache ? r.cacheRead : 0)),
      cache_creation_tokens: f((r) => r.cacheWrite),
      completion_tokens: f((r) => r.output),
      reasoning_tokens: f((r) => r.reasoning),
      total_tokens: prompt + f((r) => r.output),
      generated_artifacts: f((r) => r.artifacts),
      request_count: rs.length,
      cost_points: toPlainString(rs.reduce((d, r) => add(d, parseDecimal(r.costPoints)), ZERO)),
      original_cost: toPlainString(rs.reduce((d, r) => add(d, parseDecimal(r.originalCost)), ZERO)),
    };
  };
  const by_model = [...groups].map(([model, rs]) => ({ model, ...sum(rs) }));
  by_model.sort((a, b) => compare(parseDecimal(b.cost_points), parseDecimal(a.cost_points)) || (a.model < b.model ? -1 : a.model > b.model ? 1 : 0));
  return { totals: sum([...groups.values()].flat()), by_model };
}

const EMPTY_ROW: UsageRow = {
  prompt_tokens: 0,
  billable_prompt_tokens: 0,
  cached_tokens: 0,
  cache_explicit_read_tokens: 0,
  cache_creation_tokens: 0,
  completion_tokens: 0,
  reasoning_tokens: 0,
  total_tokens: 0,
  generated_artifacts: 0,
  request_count: 0,
  cost_points: '0',
  original_cost: '0',
};

describe.each(BACKENDS)('usage report on %s', (backend) => {
  const db = useTestDatabase(backend);

  it('answers every field, zeros and "0", when there is no usage', async () => {
    const report = await usageReport(db().store, { project: freshProject(), from: new Date(T0), to: new Date(T0 + HOUR_MS) });
    expect(report).toEqual({
      $schema: 'https://tollgate.dev/schemas/usage-report.json',
      project_id: report.project_id,
      from: '2025-03-10T00:00:00.000Z',
      to: '2025-03-10T01:00:00.000Z',
      totals: EMPTY_ROW,
      by_model: [],
    });
  });

  it('derives the report fields from the four billed dimensions', async () => {
    const { store } = db();
    const project = freshProject();
    await writeUsageBatch(store, [
      ledgerRow({ project, occurredAt: T0 + 5 * MIN, input: 10, cacheRead: 20, cacheWrite: 30, output: 40, reasoning: 4, artifacts: 2, explicitCache: true, costPoints: '1.25', originalCost: '2.50' }),
      ledgerRow({ project, occurredAt: T0 + 6 * MIN, input: 1, cacheRead: 2, cacheWrite: 0, output: 3, explicitCache: false, costPoints: '0.75', originalCost: '1' }),
    ]);
    const report = await usageReport(store, { project, from: new Date(T0), to: new Date(T0 + HOUR_MS) });
    const expected: UsageRow = {
      prompt_tokens: 63,
      billable_prompt_tokens: 11,
      cached_tokens: 22,
      cache_explicit_read_tokens: 20,
      cache_creation_tokens: 30,
      completion_tokens: 43,
      reasoning_tokens: 4,
      total_tokens: 106,
      generated_artifacts: 2,
      request_count: 2,
      cost_points: '2',
      original_cost: '3.5',
    };
    expect(report.totals).toEqual(expected);
    expect(report.by_model).toEqual([{ model: 'gpt-4o', ...expected }]);
  });

  it('equals a brute-force sum over raw rows for ranges that start and end mid-hour', async () => {
    const { store } = db();
    const project = freshProject();
    const other = freshProject();
    const models = ['gpt-4o', 'claude', '', 'gemini'];
    const rows: LedgerRow[] = [];
    // Six hours of traffic, deterministic but irregular; some rows on exact hour boundaries.
    for (let i = 0; i < 900; i++) {
      const at = i % 50 === 0 ? T0 + (i % 6) * HOUR_MS : T0 + ((i * 104_729) % (6 * HOUR_MS));
      rows.push(
        ledgerRow({
          project: i % 10 === 0 ? other : project,
          occurredAt: at,
          clientModel: models[i % 4],
          modelId: models[i % 4] ? `id-${models[i % 4]}` : 'configured-id',
          input: (i * 13) % 1000,
          output: (i * 7) % 500,
          cacheRead: i % 17,
          cacheWrite: i % 3,
          reasoning: i % 5,
          artifacts: i % 9 === 0 ? 1 : 0,
          explicitCache: i % 2 === 0,
          costPoints: `0.${String((i * 31) % 1000).padStart(4, '0')}7`,
          originalCost: `${i % 4}.00001`,
        }),
      );
    }
    for (let i = 0; i < rows.length; i += 250) await writeUsageBatch(store, rows.slice(i, i + 250));

    const ranges: [number, number][] = [
      [T0 + 17 * MIN + 123, T0 + 4 * HOUR_MS + 41 * MIN + 7], // partial, full hours, partial
      [T0 + HOUR_MS + 10 * MIN, T0 + HOUR_MS + 50 * MIN], // inside one hour
      [T0 + HOUR_MS + 30 * MIN, T0 + 2 * HOUR_MS + 30 * MIN], // two partial hours, no full one
      [T0 + HOUR_MS, T0 + 3 * HOUR_MS], // whole hours exactly
      [T0 + HOUR_MS, T0 + 3 * HOUR_MS + 1], // whole hours and one millisecond
      [T0 - 1, T0 + 6 * HOUR_MS + 1], // everything
      [T0 - 5 * HOUR_MS, T0], // before anything
      [T0 + 2 * HOUR_MS, T0 + 2 * HOUR_MS], // empty range
    ];
    for (const [from, to] of ranges) {
      const report = await usageReport(store, { project, from: new Date(from), to: new Date(to) });
      expect({ totals: report.totals, by_model: report.by_model }, `range ${new Date(from).toISOString()}..${new Date(to).toISOString()}`).toEqual(
        bruteForce(rows, project, from, to),
      );
    }
  });

  it('orders models by cost as a number, descending, ties by model name', async () => {
    const { store } = db();
    const project = freshProject();
    const at = T0 + 10 * MIN;
    await writeUsageBatch(store, [
      ledgerRow({ project, occurredAt: at, clientModel: 'small', costPoints: '9.5' }),
      ledgerRow({ project, occurredAt: at, clientModel: 'big', costPoints: '10' }),
      ledgerRow({ project, occurredAt: at, clientModel: 'tie-b', costPoints: '2.50' }),
      ledgerRow({ project, occurredAt: at, clientModel: 'tie-a', costPoints: '2.5' }),
      ledgerRow({ project, occurredAt: at, clientModel: 'Tie-C', costPoints: '1' }),
      ledgerRow({ project, occurredAt: at, clientModel: 'tie-c', costPoints: '1' }),
      ledgerRow({ project, occurredAt: at, clientModel: '', modelId: 'configured', costPoints: '0.000000000000000000001' }),
      ledgerRow({ project, occurredAt: at, clientModel: 'free', costPoints: '0' }),
    ]);
    const report = await usageReport(store, { project, from: new Date(T0), to: new Date(T0 + HOUR_MS) });
    expect(report.by_model.map((m) => [m.model, m.cost_points])).toEqual([
      ['big', '10'],
      ['small', '9.5'],
      ['tie-a', '2.5'],
      ['tie-b', '2.5'],
      ['Tie-C', '1'],
      ['tie-c', '1'],
      ['configured', '0.000000000000000000001'],
      ['free', '0'],
    ]);
    expect(report.totals.cost_points).toBe('26.500000000000000000001');
  });

  it('reports money exactly: 30,000 requests of 0.0000001 make 0.003, across rollup and edges', async () => {
    const { store } = db();
    const project = freshProject();
    const rows = Array.from({ length: 30_000 }, (_, i) =>
      ledgerRow({ project, occurredAt: T0 + ((i * 997) % (3 * HOUR_MS)), costPoints: '0.0000001', originalCost: '1e-7' }),
    );
    for (let i = 0; i < rows.length; i += 2000) await writeUsageBatch(store, rows.slice(i, i + 2000));
    const all = await usageReport(store, { project, from: new Date(T0), to: new Date(T0 + 3 * HOUR_MS) });
    expect(all.totals.cost_points).toBe('0.003');
    expect(all.totals.original_cost).toBe('0.003');
    const from = T0 + 20 * MIN;
    const to = T0 + 2 * HOUR_MS + 20 * MIN;
    const part = await usageReport(store, { project, from: new Date(from), to: new Date(to) });
    expect(part.totals).toEqual(bruteForce(rows, project, from, to).totals);
  });

  it('keeps each project to itself', async () => {
    const { store } = db();
    const mine = freshProject();
    const theirs = freshProject();
    await writeUsageBatch(store, [ledgerRow({ project: mine, occurredAt: T0 }), ledgerRow({ project: theirs, occurredAt: T0, clientModel: 'secret' })]);
    const report = await usageReport(store, { project: mine, from: new Date(T0), to: new Date(T0 + HOUR_MS) });
    expect(report.by_model.map((m) => m.model)).toEqual(['gpt-4o']);
    expect(report.totals.request_count).toBe(1);
  });
});
