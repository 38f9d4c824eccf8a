// Writes a batch of ledger rows in ONE statement: raw insert (exactly once by request_id) and
// the hourly rollup of exactly the rows that were new, so replays change nothing.
import type { Queryable } from '../store/store.ts';
import { floorHour } from './hour.ts';
import type { LedgerRow } from './row.ts';

// Column order of the unnest below; `hour` and `model` are derived here, not stored raw.
const WRITE_SQL = `
WITH src AS (
  SELECT * FROM unnest(
    $1::text[], $2::timestamptz[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
    $8::text[], $9::text[], $10::text[], $11::boolean[],
    $12::bigint[], $13::bigint[], $14::bigint[], $15::bigint[], $16::bigint[], $17::bigint[], $18::bigint[],
    $19::boolean[], $20::numeric[], $21::numeric[], $22::jsonb[], $23::timestamptz[], $24::text[]
  ) AS s(request_id, occurred_at, organization, project, api_key_id, client_model, model_id,
         provider, upstream_model, endpoint, stream,
         input, output, cache_read, cache_write, reasoning, artifacts, cache_explicit_read,
         estimated, cost_points, original_cost, detail, hour, model)
),
ins AS (
  INSERT INTO usage_events (request_id, occurred_at, organization, project, api_key_id, client_model, model_id,
    provider, upstream_model, endpoint, stream,
    input, output, cache_read, cache_write, reasoning, artifacts, cache_explicit_read,
    estimated, cost_points, original_cost, detail)
  SELECT request_id, occurred_at, organization, project, api_key_id, client_model, model_id,
    provider, upstream_model, endpoint, stream,
    input, output, cache_read, cache_write, reasoning, artifacts, cache_explicit_read,
    estimated, cost_points, original_cost, detail
  FROM src
  ON CONFLICT (request_id) DO NOTHING
  RETURNING request_id
)
INSERT INTO usage_hourly AS h (project, hour, client_model, organization,
  input, output, cache_read, cache_write, cache_explicit_read, reasoning, artifacts,
  request_count, cost_points, original_cost)
SELECT src.project, src.hour, src.model, max(src.organization),
  sum(src.input), sum(src.output), sum(src.cache_read), sum(src.cache_write), sum(src.cache_explicit_read),
  sum(src.reasoning), sum(src.artifacts), count(*), sum(src.cost_points), sum(src.original_cost)
FROM src JOIN ins ON ins.request_id = src.request_id
GROUP BY src.project, src.hour, src.model
-- One lock order for every pod: concurrent batches touching the same buckets cannot deadlock.
ORDER BY src.project COLLATE "C", src.hour, src.model COLLATE "C"
ON CONFLICT (project, hour, client_model) DO UPDATE SET
  input = h.input + EXCLUDED.input,
  output = h.output + EXCLUDED.output,
  cache_read = h.cache_read + EXCLUDED.cache_read,
  cache_write = h.cache_write + EXCLUDED.cache_write,
  cache_explicit_read = h.cache_explicit_read + EXCLUDED.cache_explicit_read,
  reasoning = h.reasoning + EXCLUDED.reasoning,
  artifacts = h.artifacts + EXCLUDED.artifacts,
  request_count = h.request_count + EXCLUDED.request_count,
  cost_points = h.cost_points + EXCLUDED.cost_points,
  original_cost = h.original_cost + EXCLUDED.original_cost
RETURNING (SELECT count(*) FROM ins) AS inserted`;

/** The model a report groups by: what the client sent, else the configured model id. */
export function reportModel(row: Pick<LedgerRow, 'clientModel' | 'modelId'>): string {
  return row.clientModel || row.modelId;
}

/**
 * Inserts rows not yet in the ledger and adds them to the hourly rollup, atomically.
 * Returns how many rows were new. Safe to call again with the same rows.
 */
export async function writeUsageBatch(q: Queryable, batch: readonly LedgerRow[]): Promise<number> {
  const rows = uniqueByRequestId(batch);
  if (rows.length === 0) return 0;
  const cols: unknown[][] = Array.from({ length: 24 }, () => new Array(rows.length));
  for (let i = 0; i < rows.length; i++) {
    const r = rows[i];
    cols[0][i] = r.requestId;
    cols[1][i] = new Date(r.occurredAt).toISOString();
    cols[2][i] = r.organization;
    cols[3][i] = r.project;
    cols[4][i] = r.apiKeyId;
    cols[5][i] = r.clientModel;
    cols[6][i] = r.modelId;
    cols[7][i] = r.provider;
    cols[8][i] = r.upstreamModel;
    cols[9][i] = r.endpoint;
    cols[10][i] = r.stream;
    cols[11][i] = r.input;
    cols[12][i] = r.output;
    cols[13][i] = r.cacheRead;
    cols[14][i] = r.cacheWrite;
    cols[15][i] = r.reasoning;
    cols[16][i] = r.artifacts;
    cols[17][i] = r.explicitCache ? r.cacheRead : 0;
    cols[18][i] = r.estimated;
    cols[19][i] = r.costPoints;
    cols[20][i] = r.originalCost;
    cols[21][i] = JSON.stringify(r.detail ?? null);
    cols[22][i] = new Date(floorHour(r.occurredAt)).toISOString();
    cols[23][i] = reportModel(r);
  }
  // One row per touched bucket, each carrying the statement's insert count (none when all were replays).
  const { rows: buckets } = await q.query<{ inserted: string }>(WRITE_SQL, cols);
  return buckets.length === 0 ? 0 : Number(buckets[0].inserted);
}

// Within one statement a duplicate id would be skipped by the insert but still joined into the
// rollup twice; the first occurrence wins, as it would across statements.
function uniqueByRequestId(rows: readonly LedgerRow[]): LedgerRow[] {
  const seen = new Set<string>();
  const out: LedgerRow[] = [];
  for (const r of rows) {
    if (seen.has(r.requestId)) continue;
    seen.add(r.requestId);
    out.push(r);
  }
  return out;
}
