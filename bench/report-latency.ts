// Usage report latency over a seeded ledger: the HTTP endpoint for one project (what a key sees), and the
// organization-wide rollup query measured directly (there is no organization endpoint).
import { Pool } from 'undici';
import type { Store } from '../gateway/store/store.ts';
import { Samples } from './stats.ts';
import type { LatencySummary } from './stats.ts';

export interface ReportLatency {
  project: LatencySummary;
  projectRequests: number;
  /** request_count the endpoint reported for the project (proves it read the seeded rows). */
  projectRows: number;
  organization: LatencySummary;
  organizationRows: number;
  from: string;
  to: string;
}

// Whole hours of one organization straight from the rollup, grouped by model as the project report is.
const ORG_SQL = `
SELECT client_model AS model, sum(input) AS input, sum(output) AS output, sum(cache_read) AS cache_read,
  sum(cache_write) AS cache_write, sum(request_count) AS request_count, sum(cost_points) AS cost_points,
  sum(original_cost) AS original_cost
FROM usage_hourly
WHERE organization = $1 AND hour >= $2::timestamptz AND hour < $3::timestamptz
GROUP BY client_model
ORDER BY sum(cost_points) DESC, client_model COLLATE "C"`;

export async function reportLatency(opts: { gatewayUrl: string; key: string; store: Store; organization: string; from: Date; to: Date; repeats: number }): Promise<ReportLatency> {
  const pool = new Pool(opts.gatewayUrl, { connections: 1 });
  const project = new Samples();
  let projectRows = 0;
  const path = `/api/business/v1/customer/usage?from=${encodeURIComponent(opts.from.toISOString())}&to=${encodeURIComponent(opts.to.toISOString())}`;
  try {
    for (let i = 0; i < opts.repeats + 3; i++) {
      const t0 = performance.now();
      const res = await pool.request({ path, method: 'GET', headers: { authorization: `Bearer ${opts.key}` } });
      const body = (await res.body.json()) as { totals?: { request_count?: number } };
      const ms = performance.now() - t0;
      if (res.statusCode !== 200) throw new Error(`usage report answered ${res.statusCode}: ${JSON.stringify(body)}`);
      projectRows = body.totals?.request_count ?? 0;
      if (i >= 3) project.add(ms); // the first few warm the connection, the plan cache and the buffers
    }
  } finally {
    await pool.close();
  }
  // The organization query over whole hours of the same range.
  const fromHour = new Date(Math.ceil(opts.from.getTime() / 3_600_000) * 3_600_000).toISOString();
  const toHour = new Date(Math.floor(opts.to.getTime() / 3_600_000) * 3_600_000).toISOString();
  const organization = new Samples();
  let organizationRows = 0;
  for (let i = 0; i < opts.repeats + 3; i++) {
    const t0 = performance.now();
    const { rows } = await opts.store.query<{ request_count: string }>(ORG_SQL, [opts.organization, fromHour, toHour]);
    const ms = performance.now() - t0;
    organizationRows = rows.reduce((a, r) => a + Number(r.request_count), 0);
    if (i >= 3) organization.add(ms);
  }
  return { project: project.summary(), projectRequests: opts.repeats, projectRows, organization: organization.summary(), organizationRows, from: opts.from.toISOString(), to: opts.to.toISOString() };
}
