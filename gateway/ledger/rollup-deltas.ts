// What a batch of NEW rows adds to the hourly rollups, summed here rather than by the database: one delta per
// (project, hour, model, organization, key), which usage_hourly and usage_hourly_keys each group further in SQL (a
// handful of rows, where max(organization) keeps the database's collation). Only for batches every row of which is
// inserted: a batch with replays must count just the rows the insert took (the writer's ON CONFLICT statement).
import { DecimalSum } from './decimal-sum.ts';
import { HOUR_MS } from './hour.ts';
import type { LedgerRow } from './row.ts';
import { msTimestamp } from './sql-time.ts';

interface Delta {
  project: string;
  hour: number;
  model: string;
  organization: string;
  apiKeyId: string;
  /** input, output, cache_read, cache_write, cache_explicit_read, reasoning, artifacts, request_count. */
  sums: number[];
  cost: DecimalSum;
  /** Undefined while every row's original cost was its cost (no discount): the sum is then cost's. */
  original: DecimalSum | undefined;
}

/**
 * The batch's rollup deltas as a JSON array of positional arrays (numbers and money as exact strings), or undefined
 * when a value cannot be summed exactly here (a count that is not a non-negative safe integer, a money text outside
 * decimal notation): the database then sums it, as before.
 */
export function rollupDeltas(rows: readonly LedgerRow[]): string | undefined {
  // By key first (a key lives in one project), then a short scan: no composite string key built per row.
  const byKey = new Map<string, Delta[]>();
  for (const r of rows) {
    if (!(count(r.input) && count(r.output) && count(r.cacheRead) && count(r.cacheWrite) && count(r.reasoning) && count(r.artifacts))) return undefined;
    // As the database cuts it: occurred_at is the ms truncated, its hour in UTC.
    const hour = Math.floor(Math.trunc(r.occurredAt) / HOUR_MS) * HOUR_MS;
    // The model a report groups by: what the client sent, else the configured model id.
    const model = r.clientModel === '' ? r.modelId : r.clientModel;
    let list = byKey.get(r.apiKeyId);
    if (list === undefined) byKey.set(r.apiKeyId, (list = []));
    let g: Delta | undefined;
    for (const d of list) {
      if (d.hour === hour && d.model === model && d.project === r.project && d.organization === r.organization) {
        g = d;
        break;
      }
    }
    if (g === undefined) {
      g = { project: r.project, hour, model, organization: r.organization, apiKeyId: r.apiKeyId, sums: [0, 0, 0, 0, 0, 0, 0, 0], cost: new DecimalSum(), original: undefined };
      list.push(g);
    }
    const s = g.sums;
    s[0] += r.input;
    s[1] += r.output;
    s[2] += r.cacheRead;
    s[3] += r.cacheWrite;
    if (r.explicitCache) s[4] += r.cacheRead;
    s[5] += r.reasoning;
    s[6] += r.artifacts;
    s[7]++;
    if (g.original === undefined && r.originalCost !== r.costPoints) {
      // The first row whose original cost differs: the original sum of the rows before it is their cost sum (same
      // units and scale). One sum a row otherwise (no discount is the common case).
      g.original = g.cost.clone();
    }
    if (!g.cost.add(r.costPoints) || (g.original !== undefined && !g.original.add(r.originalCost))) return undefined;
  }
  const out: string[][] = [];
  for (const list of byKey.values()) {
    for (const g of list) {
      // Non-negative addends: a sum within the safe range was exact at every step.
      if (g.sums.some((n) => n > Number.MAX_SAFE_INTEGER)) return undefined;
      out.push([g.project, String(g.hour), g.model, g.organization, g.apiKeyId, ...g.sums.map(String), g.cost.toString(), (g.original ?? g.cost).toString()]);
    }
  }
  return JSON.stringify(out);
}

const count = (n: number) => Number.isSafeInteger(n) && n >= 0;

/** The deltas (rollupDeltas' JSON, as `source`) as rows: project, hour, model, organization, api_key_id, then sums. */
export const rollupFrom = (source: string) => `SELECT e->>0 AS project, ${msTimestamp('(e->>1)::bigint')} AS hour,
    e->>2 AS model, e->>3 AS organization, e->>4 AS api_key_id,
    (e->>5)::bigint AS input, (e->>6)::bigint AS output, (e->>7)::bigint AS cache_read, (e->>8)::bigint AS cache_write,
    (e->>9)::bigint AS cache_explicit_read, (e->>10)::bigint AS reasoning, (e->>11)::bigint AS artifacts,
    (e->>12)::bigint AS request_count, (e->>13)::numeric AS cost_points, (e->>14)::numeric AS original_cost
  FROM jsonb_array_elements(${source}) AS e`;
