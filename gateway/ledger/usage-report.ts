// Usage per project over [from, to): full UTC hours from the rollup, the partial hours at the
// edges from raw rows, so any from/to is exact while long ranges read mostly the small table.
import { add, parseDecimal, toPlainString, ZERO } from '../billing/decimal.ts';
import { USAGE_REPORT_SCHEMA } from './report-types.ts';
import type { Decimal } from '../billing/decimal.ts';
import type { Queryable } from '../store/store.ts';
import { rollupRanges } from './hour.ts';
import type { UsageReport, UsageReportQuery, UsageRow } from './report-types.ts';

interface SumRow {
  model: string;
  input: string;
  output: string;
  cache_read: string;
  cache_write: string;
  cache_explicit_read: string;
  reasoning: string;
  artifacts: string;
  request_count: string;
  cost_points: string;
  original_cost: string;
}

// $2..$3: full hours read from usage_hourly; $4..$5 and $6..$7: the edges read from usage_events.
// Ordered here by NUMERIC cost and byte-wise model name, the same on every server collation.
const REPORT_SQL = `
SELECT model,
  sum(input) AS input, sum(output) AS output, sum(cache_read) AS cache_read, sum(cache_write) AS cache_write,
  sum(cache_explicit_read) AS cache_explicit_read, sum(reasoning) AS reasoning, sum(artifacts) AS artifacts,
  sum(request_count) AS request_count, sum(cost_points) AS cost_points, sum(original_cost) AS original_cost
FROM (
  SELECT client_model AS model, input, output, cache_read, cache_write, cache_explicit_read, reasoning, artifacts,
    request_count, cost_points, original_cost
  FROM usage_hourly
  WHERE project = $1 AND hour >= $2::timestamptz AND hour < $3::timestamptz
  UNION ALL
  SELECT coalesce(nullif(client_model, ''), model_id), input, output, cache_read, cache_write, cache_explicit_read,
    reasoning, artifacts, 1, cost_points, original_cost
  FROM usage_events
  WHERE project = $1 AND (
    (occurred_at >= $4::timestamptz AND occurred_at < $5::timestamptz) OR
    (occurred_at >= $6::timestamptz AND occurred_at < $7::timestamptz))
) u
GROUP BY model
ORDER BY sum(cost_points) DESC, model COLLATE "C" ASC`;

export async function usageReport(q: Queryable, query: UsageReportQuery): Promise<UsageReport> {
  const from = query.from.getTime();
  const to = query.to.getTime();
  if (!Number.isFinite(from) || !Number.isFinite(to)) throw new RangeError('usage report: invalid from/to');
  const iso = (ms: number) => new Date(ms).toISOString();

  const params = rollupRanges(from, to);
  const { rows } = await q.query<SumRow>(REPORT_SQL, [query.project, ...params]);

  const by_model = rows.map((r) => ({ model: r.model, ...usageRow(r) }));
  return {
    $schema: USAGE_REPORT_SCHEMA,
    project_id: query.project,
    from: iso(from),
    to: iso(to),
    totals: sumRows(by_model),
    by_model,
  };
}

function usageRow(r: SumRow): UsageRow {
  const input = Number(r.input);
  const cacheRead = Number(r.cache_read);
  const cacheWrite = Number(r.cache_write);
  const output = Number(r.output);
  const prompt = input + cacheRead + cacheWrite;
  return {
    prompt_tokens: prompt,
    billable_prompt_tokens: input,
    cached_tokens: cacheRead,
    cache_explicit_read_tokens: Number(r.cache_explicit_read),
    cache_creation_tokens: cacheWrite,
    completion_tokens: output,
    reasoning_tokens: Number(r.reasoning),
    total_tokens: prompt + output,
    generated_artifacts: Number(r.artifacts),
    request_count: Number(r.request_count),
    cost_points: toPlainString(parseDecimal(r.cost_points)),
    original_cost: toPlainString(parseDecimal(r.original_cost)),
  };
}

const INT_FIELDS = [
  'prompt_tokens', 'billable_prompt_tokens', 'cached_tokens', 'cache_explicit_read_tokens', 'cache_creation_tokens',
  'completion_tokens', 'reasoning_tokens', 'total_tokens', 'generated_artifacts', 'request_count',
] as const;

function sumRows(rows: readonly UsageRow[]): UsageRow {
  const totals = Object.fromEntries(INT_FIELDS.map((f) => [f, 0])) as Record<(typeof INT_FIELDS)[number], number>;
  let cost: Decimal = ZERO;
  let original: Decimal = ZERO;
  for (const r of rows) {
    for (const f of INT_FIELDS) totals[f] += r[f];
    cost = add(cost, parseDecimal(r.cost_points));
    original = add(original, parseDecimal(r.original_cost));
  }
  return { ...totals, cost_points: toPlainString(cost), original_cost: toPlainString(original) };
}
