// Seeds a ledger with synthetic usage: rows spread evenly over `days` ending at `end`, written by
// generate_series in SQL straight into usage_events, then usage_hourly and usage_hourly_keys built from exactly
// those rows, so the rollups and the raw table agree as if the ledger writer had written them.
//   node bench/seed-ledger.ts --database-url postgres://… [--rows 10000000] [--days 30]
// Use a fresh database: on a large seed the primary key and index are dropped and rebuilt around the insert.
import { parseArgs } from 'node:util';
import type { Store } from '../gateway/store/store.ts';

export interface SeedOptions {
  rows: number;
  days: number;
  /** End of the seeded range (exclusive), epoch ms. */
  end: number;
  projects?: number;
  organizations?: number;
}

export interface SeedResult {
  rows: number;
  hourlyRows: number;
  /** Rows of the per-key rollup (usage_hourly_keys). */
  hourlyKeyRows: number;
  seconds: number;
  /** Seconds per step: insert, index (when rebuilt), rollup, analyze. */
  phases: Record<string, number>;
  from: Date;
  to: Date;
  projects: number;
  organizations: number;
  models: number;
}

export const SEED_MODELS = ['gpt-4o-mini', 'gpt-4o', 'gpt-4.1', 'o3-mini', 'claude-sonnet-4-5', 'claude-haiku-4-5', 'gemini-2.5-flash', 'gemini-2.5-pro'];

/** Project p belongs to organization p mod organizations. */
export const seedProject = (p: number) => `proj-${p}`;
export const seedOrganization = (p: number, organizations: number) => `org-${p % organizations}`;

export async function seedLedger(store: Store, opts: SeedOptions): Promise<SeedResult> {
  const t0 = performance.now();
  const phases: Record<string, number> = {};
  let mark = t0;
  const phase = (name: string) => {
    const now = performance.now();
    phases[name] = (now - mark) / 1000;
    mark = now;
  };
  const projects = opts.projects ?? 50;
  const organizations = opts.organizations ?? 10;
  const from = opts.end - opts.days * 86_400_000;
  const spacingMs = (opts.end - from) / opts.rows;
  const models = `ARRAY[${SEED_MODELS.map((m) => `'${m}'`).join(',')}]`;
  // Rebuilding the indexes once is far cheaper than maintaining them row by row.
  const rebuild = opts.rows >= 1_000_000;
  if (rebuild) {
    await store.exec('ALTER TABLE usage_events DROP CONSTRAINT usage_events_pkey; DROP INDEX usage_events_project_occurred_at;');
  }
  const insert = `
INSERT INTO usage_events (request_id, occurred_at, organization, project, api_key_id, client_model, model_id,
  provider, upstream_model, endpoint, stream, input, output, cache_read, cache_write, reasoning, artifacts,
  cache_explicit_read, estimated, cost_points, original_cost, detail)
SELECT 'seed-' || g,
  to_timestamp(${from / 1000}::float8 + (g - 1) * ${spacingMs / 1000}::float8),
  'org-' || ((g % ${projects}) % ${organizations}),
  'proj-' || (g % ${projects}),
  'key-' || (g % ${projects}),
  m, m, 'bench', m, '/api/v1/chat/completions', g % 2 = 0,
  i, o, c, 0, 0, 0, 0, false,
  (i * 0.15 + o * 0.6 + c * 0.075) / 1000000 * 0.9,
  (i * 0.15 + o * 0.6 + c * 0.075) / 1000000,
  -- A constant, realistic provider detail: building one per row would double the seeding time.
  '{"prompt_tokens":1000,"completion_tokens":200,"total_tokens":1200,"prompt_tokens_details":{"cached_tokens":128}}'::jsonb
FROM (
  SELECT g, (${models})[1 + (g / ${projects}) % ${SEED_MODELS.length}] AS m,
    200 + g % 1800 AS i, 20 + g % 700 AS o, CASE WHEN g % 3 = 0 THEN 128 ELSE 0 END AS c
  FROM generate_series($1::bigint, $2::bigint) g
) s`;
  // Two writers: the machine has two cores; PGlite runs them one after the other.
  const chunks = Math.max(1, Math.min(2, Math.floor(opts.rows / 100_000)));
  const per = Math.ceil(opts.rows / chunks);
  await Promise.all(
    Array.from({ length: chunks }, (_, k) => {
      const lo = k * per + 1;
      const hi = Math.min(opts.rows, (k + 1) * per);
      return store.query(insert, [lo, hi]);
    }),
  );
  phase('insert');
  if (rebuild) {
    await store.transaction(async (q) => {
      await q.query(`SET LOCAL maintenance_work_mem = '512MB'`);
      await q.query('ALTER TABLE usage_events ADD CONSTRAINT usage_events_pkey PRIMARY KEY (occurred_at, request_id)');
    });
    await store.transaction(async (q) => {
      await q.query(`SET LOCAL maintenance_work_mem = '512MB'`);
      await q.query('CREATE INDEX usage_events_project_occurred_at ON usage_events (project, occurred_at)');
    });
    phase('index');
  }
  const select = `
  SELECT project, date_trunc('hour', occurred_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC', coalesce(nullif(client_model, ''), model_id),
    max(organization), sum(input), sum(output), sum(cache_read), sum(cache_write), sum(cache_explicit_read),
    sum(reasoning), sum(artifacts), count(*), sum(cost_points), sum(original_cost)
  FROM usage_events WHERE request_id LIKE 'seed-%' AND project = ANY($1::text[])
  GROUP BY 1, 2, 3`;
  const columns = `project, hour, client_model, organization, input, output, cache_read, cache_write,
    cache_explicit_read, reasoning, artifacts, request_count, cost_points, original_cost`;
  // On a fresh large seed the rollup is empty: plain insert, keys rebuilt after; else add to what is there.
  const rollupSql = rebuild
    ? `WITH r AS (INSERT INTO usage_hourly (${columns}) ${select} RETURNING 1) SELECT count(*) AS n FROM r`
    : `WITH r AS (INSERT INTO usage_hourly AS h (${columns}) ${select}
  ON CONFLICT (project, hour, client_model) DO UPDATE SET
    input = h.input + EXCLUDED.input, output = h.output + EXCLUDED.output,
    cache_read = h.cache_read + EXCLUDED.cache_read, cache_write = h.cache_write + EXCLUDED.cache_write,
    cache_explicit_read = h.cache_explicit_read + EXCLUDED.cache_explicit_read, reasoning = h.reasoning + EXCLUDED.reasoning,
    artifacts = h.artifacts + EXCLUDED.artifacts, request_count = h.request_count + EXCLUDED.request_count,
    cost_points = h.cost_points + EXCLUDED.cost_points, original_cost = h.original_cost + EXCLUDED.original_cost
  RETURNING 1) SELECT count(*) AS n FROM r`;
  // The same rows per key (key-p is only ever used in proj-p, so the projects' split divides the keys too).
  const keySelect = `
  SELECT api_key_id, date_trunc('hour', occurred_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC', coalesce(nullif(client_model, ''), model_id),
    max(organization), max(project), sum(input), sum(output), sum(cache_read), sum(cache_write), sum(cache_explicit_read),
    sum(reasoning), sum(artifacts), count(*), sum(cost_points), sum(original_cost)
  FROM usage_events WHERE request_id LIKE 'seed-%' AND project = ANY($1::text[])
  GROUP BY 1, 2, 3`;
  const keyColumns = `api_key_id, hour, client_model, organization, project, input, output, cache_read, cache_write,
    cache_explicit_read, reasoning, artifacts, request_count, cost_points, original_cost`;
  const keyRollupSql = rebuild
    ? `WITH r AS (INSERT INTO usage_hourly_keys (${keyColumns}) ${keySelect} RETURNING 1) SELECT count(*) AS n FROM r`
    : `WITH r AS (INSERT INTO usage_hourly_keys AS k (${keyColumns}) ${keySelect}
  ON CONFLICT (api_key_id, hour, client_model) DO UPDATE SET
    input = k.input + EXCLUDED.input, output = k.output + EXCLUDED.output,
    cache_read = k.cache_read + EXCLUDED.cache_read, cache_write = k.cache_write + EXCLUDED.cache_write,
    cache_explicit_read = k.cache_explicit_read + EXCLUDED.cache_explicit_read, reasoning = k.reasoning + EXCLUDED.reasoning,
    artifacts = k.artifacts + EXCLUDED.artifacts, request_count = k.request_count + EXCLUDED.request_count,
    cost_points = k.cost_points + EXCLUDED.cost_points, original_cost = k.original_cost + EXCLUDED.original_cost
  RETURNING 1) SELECT count(*) AS n FROM r`;
  if (rebuild) {
    await store.exec(
      'ALTER TABLE usage_hourly DROP CONSTRAINT usage_hourly_pkey; DROP INDEX usage_hourly_organization_hour; ' +
        'ALTER TABLE usage_hourly_keys DROP CONSTRAINT usage_hourly_keys_pkey; DROP INDEX usage_hourly_keys_organization_hour; DROP INDEX usage_hourly_keys_hour;',
    );
  }
  // Projects split between the two writers; each bucket belongs to exactly one project.
  const halves = [0, 1].map((h) => Array.from({ length: projects }, (_, p) => p).filter((p) => p % chunks === h || chunks === 1).map(seedProject));
  const counts = await Promise.all(
    halves.slice(0, chunks).map((list) =>
      store.transaction(async (q) => {
        // The hash aggregate (hundreds of thousands of buckets with NUMERIC sums) stays in memory instead of spilling.
        await q.query(`SET LOCAL work_mem = '1GB'`);
        const hourly = Number((await q.query<{ n: string }>(rollupSql, [list])).rows[0].n);
        const byKey = Number((await q.query<{ n: string }>(keyRollupSql, [list])).rows[0].n);
        return [hourly, byKey] as const;
      }),
    ),
  );
  if (rebuild) {
    await store.exec(
      'ALTER TABLE usage_hourly ADD CONSTRAINT usage_hourly_pkey PRIMARY KEY (project, hour, client_model); CREATE INDEX usage_hourly_organization_hour ON usage_hourly (organization, hour); ' +
        'ALTER TABLE usage_hourly_keys ADD CONSTRAINT usage_hourly_keys_pkey PRIMARY KEY (api_key_id, hour, client_model); ' +
        'CREATE INDEX usage_hourly_keys_organization_hour ON usage_hourly_keys (organization, hour); CREATE INDEX usage_hourly_keys_hour ON usage_hourly_keys (hour);',
    );
  }
  phase('rollup');
  await store.exec('ANALYZE usage_events; ANALYZE usage_hourly; ANALYZE usage_hourly_keys;');
  phase('analyze');
  return {
    rows: opts.rows,
    hourlyRows: counts.reduce((a, [h]) => a + h, 0),
    hourlyKeyRows: counts.reduce((a, [, k]) => a + k, 0),
    seconds: (performance.now() - t0) / 1000,
    phases,
    from: new Date(from),
    to: new Date(opts.end),
    projects,
    organizations,
    models: SEED_MODELS.length,
  };
}

if (import.meta.main) {
  const { values } = parseArgs({ options: { 'database-url': { type: 'string' }, rows: { type: 'string', default: '10000000' }, days: { type: 'string', default: '30' } } });
  const { openStore } = await import('../gateway/store/open.ts');
  const store = await openStore({ databaseUrl: values['database-url'] ?? process.env.DATABASE_URL, dataDir: process.env.TOLLGATE_DATA_DIR });
  try {
    const end = Math.floor(Date.now() / 60_000) * 60_000;
    const r = await seedLedger(store, { rows: Number(values.rows), days: Number(values.days), end });
    console.log(JSON.stringify(r));
  } finally {
    await store.close();
  }
}
