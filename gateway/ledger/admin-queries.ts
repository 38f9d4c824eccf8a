// What the admin API reads from the ledger: usage grouped by organization, project, key or model per hour or day
// (full hours from the per-key rollup, partial edge hours from raw rows, as the key's own report does), and the
// recent requests, newest first, paged by (occurred_at, request_id). Sums stay exact decimal text.
import { add, parseDecimal, toPlainString, ZERO } from '../billing/decimal.ts';
import type { Decimal } from '../billing/decimal.ts';
import type { Queryable } from '../store/store.ts';
import { rollupRanges } from './hour.ts';
import { msTimestamp } from './sql-time.ts';

export type UsageBucket = 'hour' | 'day';
export type UsageGroupBy = 'model' | 'project' | 'key' | 'organization';

export interface AdminUsageQuery {
  from: Date;
  to: Date;
  bucket: UsageBucket;
  groupBy: UsageGroupBy;
  organization?: string;
  /** Absent or empty: every project (organization-wide). */
  project?: string;
  key?: string;
}

export interface UsageCounts {
  requests: number;
  input: number;
  output: number;
  cache_read: number;
  cache_write: number;
  reasoning: number;
  cost_points: string;
}

export interface AdminUsage {
  from: string;
  to: string;
  bucket: UsageBucket;
  group_by: UsageGroupBy;
  series: { start: string; groups: UsageGroup[] }[];
  totals: UsageGroup[];
  total: UsageCounts;
}

/** One group's counts; grouped by project it also names the organization (project ids are unique per organization only). */
export type UsageGroup = { group: string; organization?: string } & UsageCounts;

// Column names only from this table, never from the caller.
const GROUP_COLUMN: Record<UsageGroupBy, string> = { model: 'model', project: 'project', key: 'api_key_id', organization: 'organization' };

const FILTERS = `($8::text IS NULL OR organization = $8) AND ($9::text IS NULL OR project = $9) AND ($10::text IS NULL OR api_key_id = $10)`;

function usageSql(group: string): string {
  // Projects are grouped with their organization: two organizations may both have a project called "web".
  const org = group === 'project' ? 'organization' : 'NULL::text';
  return `
SELECT to_char(date_trunc($1, t, 'UTC') AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS start, ${group} AS grp, ${org} AS org,
  sum(request_count) AS requests, sum(input) AS input, sum(output) AS output, sum(cache_read) AS cache_read,
  sum(cache_write) AS cache_write, sum(reasoning) AS reasoning, sum(cost_points)::text AS cost_points
FROM (
  SELECT hour AS t, organization, project, api_key_id, client_model AS model, input, output, cache_read, cache_write,
    reasoning, request_count, cost_points
  FROM usage_hourly_keys
  WHERE hour >= $2::timestamptz AND hour < $3::timestamptz AND ${FILTERS}
  UNION ALL
  SELECT occurred_at, organization, project, api_key_id, coalesce(nullif(client_model, ''), model_id), input, output,
    cache_read, cache_write, reasoning, 1, cost_points
  FROM usage_events
  WHERE ((occurred_at >= $4::timestamptz AND occurred_at < $5::timestamptz) OR
    (occurred_at >= $6::timestamptz AND occurred_at < $7::timestamptz)) AND ${FILTERS}
) u
GROUP BY 1, 2, 3
ORDER BY 1, sum(cost_points) DESC, ${group} COLLATE "C"${group === 'project' ? ', organization COLLATE "C"' : ''}`;
}

interface UsageSqlRow {
  start: string;
  grp: string;
  org: string | null;
  requests: string;
  input: string;
  output: string;
  cache_read: string;
  cache_write: string;
  reasoning: string;
  cost_points: string;
}

const COUNTS = ['requests', 'input', 'output', 'cache_read', 'cache_write', 'reasoning'] as const;

export async function adminUsage(q: Queryable, query: AdminUsageQuery): Promise<AdminUsage> {
  const from = query.from.getTime();
  const to = query.to.getTime();
  if (!Number.isFinite(from) || !Number.isFinite(to)) throw new RangeError('usage: invalid from/to');
  const iso = (ms: number) => new Date(ms).toISOString();
  const range = rollupRanges(from, to);
  const { rows } = await q.query<UsageSqlRow>(usageSql(GROUP_COLUMN[query.groupBy]), [
    query.bucket, ...range, query.organization || null, query.project || null, query.key || null,
  ]);
  const series: AdminUsage['series'] = [];
  const totals = new Map<string, { group: string; organization: string | null; counts: Record<(typeof COUNTS)[number], number>; cost: Decimal }>();
  const all = { counts: zeroCounts(), cost: ZERO };
  for (const r of rows) {
    const counts = Object.fromEntries(COUNTS.map((c) => [c, Number(r[c])])) as Record<(typeof COUNTS)[number], number>;
    const cost = parseDecimal(r.cost_points);
    if (series.at(-1)?.start !== r.start) series.push({ start: r.start, groups: [] });
    series.at(-1)!.groups.push({ ...named(r.grp, r.org), ...counts, cost_points: toPlainString(cost) });
    const id = r.org === null ? r.grp : `${r.org}/${r.grp}`;
    let t = totals.get(id);
    if (!t) totals.set(id, (t = { group: r.grp, organization: r.org, counts: zeroCounts(), cost: ZERO }));
    for (const c of COUNTS) {
      t.counts[c] += counts[c];
      all.counts[c] += counts[c];
    }
    t.cost = add(t.cost, cost);
    all.cost = add(all.cost, cost);
  }
  const out = (t: { counts: Record<string, number>; cost: Decimal }) => ({ ...(t.counts as Omit<UsageCounts, 'cost_points'>), cost_points: toPlainString(t.cost) });
  return {
    from: iso(from),
    to: iso(to),
    bucket: query.bucket,
    group_by: query.groupBy,
    series,
    totals: [...totals.values()]
      .map((t) => ({ ...named(t.group, t.organization), ...out(t) }))
      .sort((a, b) => compareCost(b.cost_points, a.cost_points) || (a.group < b.group ? -1 : a.group > b.group ? 1 : (a.organization ?? '') < (b.organization ?? '') ? -1 : 1)),
    total: out(all),
  };
}

function named(group: string, organization: string | null): { group: string; organization?: string } {
  return organization === null ? { group } : { group, organization };
}

function zeroCounts(): Record<(typeof COUNTS)[number], number> {
  return { requests: 0, input: 0, output: 0, cache_read: 0, cache_write: 0, reasoning: 0 };
}

function compareCost(a: string, b: string): number {
  const x = parseDecimal(a);
  const y = parseDecimal(b);
  const scale = Math.max(x.scale, y.scale);
  const ax = x.units * 10n ** BigInt(scale - x.scale);
  const by = y.units * 10n ** BigInt(scale - y.scale);
  return ax < by ? -1 : ax > by ? 1 : 0;
}

export interface RecentRequestsQuery {
  limit: number;
  /** The last row of the previous page. */
  after?: { occurredAtMs: number; requestId: string };
  organization?: string;
  project?: string;
  key?: string;
  model?: string;
  status?: number;
}

export interface RecentRequest {
  request_id: string;
  occurred_at: string;
  key_id: string;
  key_prefix: string | null;
  organization: string;
  project: string;
  route: string;
  model: string;
  model_id: string;
  provider: string;
  upstream_model: string;
  status: number | null;
  stream: boolean;
  input: number;
  output: number;
  cache_read: number;
  cache_write: number;
  reasoning: number;
  cost_points: string;
  estimated: boolean;
  latency_ms: number | null;
  attempts: number;
}

const REQUESTS_SQL = `
SELECT request_id, (extract(epoch FROM occurred_at) * 1000)::bigint::text AS occurred_ms, api_key_id, key_prefix,
  organization, project, endpoint, client_model, model_id, provider, upstream_model, status, stream,
  input::text, output::text, cache_read::text, cache_write::text, reasoning::text, cost_points::text, estimated,
  latency_ms, attempts
FROM usage_events
WHERE ($2::text IS NULL OR organization = $2) AND ($3::text IS NULL OR project = $3)
  AND ($4::text IS NULL OR api_key_id = $4) AND ($5::text IS NULL OR client_model = $5 OR model_id = $5)
  AND ($6::integer IS NULL OR status = $6)
  AND ($7::text IS NULL OR (occurred_at, request_id) < (${msTimestamp('$7::bigint')}, $8::text))
  -- By key, the per-key rollup bounds the walk down the (occurred_at, request_id) index, which is all there is (no
  -- per-key index on raw rows: it cost every ledger row ~2 µs): nothing after the key's last hour; and unless the
  -- model or status filters (the rollup cannot count those), nothing before the latest hour from which the key's
  -- whole hours before the cursor's hour hold a full page, or before its first hour. A key with no rows answers at
  -- once. (Also bounding the filtered case by the first hour misleads the planner into sorting the whole range.)
  AND ($4::text IS NULL OR occurred_at < (SELECT max(hour) + interval '1 hour' FROM usage_hourly_keys WHERE api_key_id = $4))
  AND ($4::text IS NULL OR $5::text IS NOT NULL OR $6::integer IS NOT NULL OR occurred_at >= coalesce((
    SELECT hour FROM (
      SELECT hour, sum(sum(request_count)) OVER (ORDER BY hour DESC) AS seen FROM usage_hourly_keys
      WHERE api_key_id = $4 AND ($7::text IS NULL OR hour < date_trunc('hour', ${msTimestamp('$7::bigint')}, 'UTC'))
      GROUP BY hour
    ) h WHERE seen >= $1 ORDER BY hour DESC LIMIT 1), (SELECT min(hour) FROM usage_hourly_keys WHERE api_key_id = $4)))
ORDER BY occurred_at DESC, request_id DESC
LIMIT $1`;

interface RequestSqlRow {
  request_id: string;
  occurred_ms: string;
  api_key_id: string;
  key_prefix: string | null;
  organization: string;
  project: string;
  endpoint: string;
  client_model: string;
  model_id: string;
  provider: string;
  upstream_model: string;
  status: number | null;
  stream: boolean;
  input: string;
  output: string;
  cache_read: string;
  cache_write: string;
  reasoning: string;
  cost_points: string;
  estimated: boolean;
  latency_ms: number | null;
  attempts: number;
}

/** One page, newest first; `more` tells whether another page follows. */
export async function recentRequests(q: Queryable, query: RecentRequestsQuery): Promise<{ rows: RecentRequest[]; more: boolean }> {
  const { rows } = await q.query<RequestSqlRow>(REQUESTS_SQL, [
    query.limit + 1, query.organization ?? null, query.project || null, query.key ?? null, query.model ?? null, query.status ?? null,
    query.after ? String(query.after.occurredAtMs) : null, query.after?.requestId ?? null,
  ]);
  const more = rows.length > query.limit;
  return {
    more,
    rows: rows.slice(0, query.limit).map((r) => ({
      request_id: r.request_id,
      occurred_at: new Date(Number(r.occurred_ms)).toISOString(),
      key_id: r.api_key_id,
      key_prefix: r.key_prefix,
      organization: r.organization,
      project: r.project,
      route: r.endpoint,
      model: r.client_model || r.model_id,
      model_id: r.model_id,
      provider: r.provider,
      upstream_model: r.upstream_model,
      status: r.status === null ? null : Number(r.status),
      stream: r.stream,
      input: Number(r.input),
      output: Number(r.output),
      cache_read: Number(r.cache_read),
      cache_write: Number(r.cache_write),
      reasoning: Number(r.reasoning),
      cost_points: toPlainString(parseDecimal(r.cost_points)),
      estimated: r.estimated,
      latency_ms: r.latency_ms === null ? null : Number(r.latency_ms),
      attempts: Number(r.attempts),
    })),
  };
}
