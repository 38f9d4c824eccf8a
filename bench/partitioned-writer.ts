// The ledger writer against Postgres at volume: several writer processes at once (as several gateway pods would be),
// each with its own pool, writing `--rows` rows in total in batches of `--batch`, `--writers` batches in flight per
// process, into usage_events partitioned by day (migration 0002) or, with --unpartitioned, one plain table with the
// same key.
// Rows in time order over three days, 50 projects. Prints rows/s for the whole run, the Postgres backend CPU per row
// (utime + stime from /proc of the writers' server processes: Postgres must run on this machine) and the load average.
// --with-key-index puts back the (api_key_id, occurred_at) index migration 0006 dropped, to see what it costs.
//   node bench/partitioned-writer.ts [--rows 200000] [--procs 4] [--batch 2000] [--writers 3] [--unpartitioned] [--with-key-index]
import { fork } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { writeUsageBatch } from '../gateway/ledger/writer.ts';
import type { LedgerRow } from '../gateway/ledger/row.ts';
import { migrate, readMigrations } from '../gateway/store/migrate.ts';
import { maintainPartitions } from '../gateway/store/partitions.ts';
import { openPgStore } from '../gateway/store/pg-store.ts';

const { values } = parseArgs({
  options: {
    rows: { type: 'string', default: '200000' },
    procs: { type: 'string', default: '4' },
    batch: { type: 'string', default: '2000' },
    writers: { type: 'string', default: '3' },
    unpartitioned: { type: 'boolean', default: false },
    'with-key-index': { type: 'boolean', default: false },
    child: { type: 'string' },
    count: { type: 'string' },
  },
});
const serverUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const batch = Number(values.batch);
const writers = Number(values.writers);
const DAY0 = Date.UTC(2030, 0, 1);
// USER_HZ: 100 on every Linux this runs on (sysconf(_SC_CLK_TCK)).
const TICKS_PER_SECOND = 100;

// Rows in time order over three days, as a ledger receives them: a batch covers moments, so almost always one day.
function row(i: number, total: number): LedgerRow {
  return {
    requestId: randomUUID(), occurredAt: DAY0 + Math.floor((i * 3 * 86_400_000) / total), organization: 'org',
    project: `p${i % 50}`, apiKeyId: 'key', clientModel: 'gpt-4o-mini', modelId: 'gpt-4o-mini', provider: 'openai',
    upstreamModel: 'gpt-4o-mini-2024-07-18', endpoint: '/api/v1/chat/completions', stream: false, input: 120, output: 40,
    cacheRead: 0, cacheWrite: 0, reasoning: 0, artifacts: 0, explicitCache: false, estimated: false,
    costPoints: '0.000042', originalCost: '0.000042', detail: null,
  };
}

if (values.child) {
  // One writer process: its own pool, `writers` batches in flight, as the ledger runs them.
  const store = openPgStore(values.child, { max: writers });
  const total = Number(values.count);
  const batches: LedgerRow[][] = [];
  for (let i = 0; i < total; i += batch) batches.push(Array.from({ length: Math.min(batch, total - i) }, (_, k) => row(i + k, total)));
  // Open every connection now, so the parent sees their server processes before the run starts.
  await Promise.all(Array.from({ length: writers }, () => store.query('SELECT pg_sleep(0.05)')));
  process.send!({ ready: true });
  await new Promise((r) => process.once('message', r));
  let next = 0;
  let inserted = 0;
  await Promise.all(
    Array.from({ length: writers }, async () => {
      while (next < batches.length) {
        const n = await writeUsageBatch(store, batches[next++]);
        inserted += n;
      }
    }),
  );
  process.send!({ inserted });
  // Connections stay open until the parent has read their backends' CPU.
  await new Promise((r) => process.once('message', r));
  await store.close();
  process.disconnect();
} else {
  const name = `tollgate_bench_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  const store = openPgStore(url.toString());
  try {
    // Unpartitioned: every migration but 0002 (the partitioning), so the table has the same columns and indexes.
    const migrations = readMigrations().filter((m) => !values.unpartitioned || m.version !== '0002');
    await migrate(store, migrations);
    // Unpartitioned, 0007 gives the table the partitioned table's key, so the same writer statement runs against both.
    if (!values.unpartitioned) await maintainPartitions(store, { now: DAY0, daysAhead: 2 });
    if (values['with-key-index']) await store.exec('CREATE INDEX usage_events_api_key_occurred_at ON usage_events (api_key_id, occurred_at)');
    const procs = Number(values.procs);
    const rows = Number(values.rows);
    const children = Array.from({ length: procs }, () =>
      fork(new URL(import.meta.url).pathname, ['--child', url.toString(), '--count', String(Math.ceil(rows / procs)), '--batch', String(batch), '--writers', String(writers)], {
        stdio: 'inherit',
      }),
    );
    const died = Promise.all(children.map((c) => new Promise((_, reject) => c.once('exit', (code) => code && reject(new Error(`writer process exited with code ${code}`))))));
    died.catch(() => {});
    await Promise.race([Promise.all(children.map((c) => new Promise((r) => c.once('message', r)))), died]);
    const { rows: backends } = await store.query<{ pid: number }>(
      "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND backend_type = 'client backend' AND pid <> pg_backend_pid()",
    );
    const cpu0 = backendTicks(backends.map((b) => b.pid));
    const load = loadavg();
    const t0 = performance.now();
    const done = children.map((c) => new Promise<{ inserted: number }>((r) => c.once('message', r)));
    for (const c of children) c.send('go');
    const results = (await Promise.race([Promise.all(done), died])) as { inserted: number }[];
    const seconds = (performance.now() - t0) / 1000;
    const cpu = backendTicks(backends.map((b) => b.pid)) - cpu0;
    for (const c of children) c.send('bye');
    const inserted = results.reduce((n, r) => n + r.inserted, 0);
    const backendMicros = ((cpu / TICKS_PER_SECOND) * 1e6) / inserted;
    const { rows: check } = await store.query<{ n: string }>('SELECT sum(request_count) AS n FROM usage_hourly');
    // Heap + indexes + TOAST of every partition (pg_partition_tree lists the parent and its leaves).
    const { rows: size } = await store.query<{ bytes: string }>(
      "SELECT coalesce((SELECT sum(pg_total_relation_size(relid)) FROM pg_partition_tree('usage_events')), pg_total_relation_size('usage_events')) AS bytes",
    );
    console.log(
      `${values.unpartitioned ? 'unpartitioned' : 'partitioned by day'}${values['with-key-index'] ? ', with the (api_key_id, occurred_at) index' : ''}: ${inserted} rows (rollup counts ${check[0].n}), ${procs} processes × ${writers} writers, ` +
        `batch ${batch}: ${seconds.toFixed(2)} s, ${Math.round(inserted / seconds)} rows/s, ${backendMicros.toFixed(2)} µs backend CPU per row (${backends.length} backends), ${Math.round(Number(size[0].bytes) / inserted)} bytes/row on disk; load average before ${load.map((l) => l.toFixed(2)).join(' ')}, after ${loadavg().map((l) => l.toFixed(2)).join(' ')}`,
    );
  } finally {
    await store.close();
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  }
}

/** utime + stime of these processes, in clock ticks (fields 14 and 15 of /proc/<pid>/stat, after the command name). */
function backendTicks(pids: number[]): number {
  let ticks = 0;
  for (const pid of pids) {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    ticks += Number(f[11]) + Number(f[12]);
  }
  return ticks;
}
