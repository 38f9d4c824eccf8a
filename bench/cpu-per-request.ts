// CPU time per non-streaming chat request of the bare floors (streamed and buffered), tollgate on Postgres (with its
// database backends' CPU) and tollgate on PGlite, at their defaults, in one run: the same fixed request count through
// each (closed loop, fixed concurrency), CPU read from /proc before and after. Ratios are against the best floor.
// Rounds interleave the targets so a noisy neighbour on the shared cores hits all of them alike.
//   node bench/cpu-per-request.ts [--requests 20000] [--concurrency 32] [--rounds 3] [--profile DIR] [--baseline DIR]
// --profile DIR: every server under test (bare floors, tollgate, baseline) runs with --cpu-prof into DIR (written when
// it stops; bench/profile-summary.ts --skip-ms drops the start-up).
// --baseline DIR: also runs the tollgate checkout in DIR (e.g. `git archive` of an older commit), as *-baseline.
// --together: each round loads every target at the same time, so whatever else the machine runs slows them alike
// (on a shared machine this beats sequential rounds for comparing CPU per request).
// --variant NAME:K=V[,K=V]: one more tollgate-postgres target with these environment variables (repeatable), e.g.
// `--variant quiet:LOG_LEVEL=warn --variant untraced:TOLLGATE_TELEMETRY=off` to price the access log or telemetry.
// --rate N: afterwards, N req/s open loop through the upstream directly and each target, --rate-rounds interleaved
// rounds of --rate-seconds each (bench/fixed-rate.ts): p99 added over the same round's best bare floor, median and
// spread over rounds, and the raw rounds (all of it as JSON with --rate-json FILE). --rounds 0 skips the CPU rounds.
// --loop-probe: every server under test runs bench/loop-probe.ts; each paced run also reports its event-loop delay
// and GC pauses.
import { mkdirSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { backendCpuSpent, createBenchDatabase, DEFAULT_POSTGRES_URL, postgresReachable } from './databases.ts';
import type { BenchDatabase } from './databases.ts';
import { chatBody, closedLoop, settle } from './load.ts';
import { fixedRateLines, fixedRateRounds } from './fixed-rate.ts';
import type { Target } from './load.ts';
import { median } from './stats.ts';
import { cpuSeconds, ownCpuSeconds } from './proc.ts';
import { startBare, startTollgate, startUpstream } from './targets.ts';
import type { Running } from './targets.ts';

const { values } = parseArgs({
  options: {
    requests: { type: 'string', default: '20000' },
    concurrency: { type: 'string', default: '32' },
    rounds: { type: 'string', default: '3' },
    warmup: { type: 'string', default: '3000' },
    profile: { type: 'string' },
    only: { type: 'string' },
    together: { type: 'boolean', default: false },
    baseline: { type: 'string' },
    variant: { type: 'string', multiple: true },
    rate: { type: 'string' },
    'rate-seconds': { type: 'string', default: '2.5' },
    'rate-rounds': { type: 'string', default: '10' },
    'rate-json': { type: 'string' },
    'loop-probe': { type: 'boolean', default: false },
  },
});
const requests = Number(values.requests);
const concurrency = Number(values.concurrency);
const rounds = Number(values.rounds);
const FLOORS = ['bare', 'bare-buffered'];

/** Sends exactly `n` requests, `concurrency` at a time; every answer must be 200. */
async function fixedCount(t: Target, body: string, n: number): Promise<{ cpuPerRequest: number; dbPerRequest: number; childPerRequest: number; seconds: number }> {
  await settle(t);
  const db0 = await t.backendCpu?.();
  const cpu0 = cpuSeconds(t.pid);
  const own0 = ownCpuSeconds(t.pid);
  const t0 = performance.now();
  const failed = await closedLoop(t, body, n, concurrency);
  const seconds = (performance.now() - t0) / 1000;
  // The ledger's rows of these requests, written after their answers, count here (bench/load.ts settle).
  await settle(t);
  const db1 = await t.backendCpu?.();
  const dbCpu = db0 && db1 ? backendCpuSpent(db0, db1) : 0;
  const tree = cpuSeconds(t.pid) - cpu0;
  const childCpu = tree - (ownCpuSeconds(t.pid) - own0);
  const cpu = tree + dbCpu;
  if (failed > 0) throw new Error(`${t.name}: ${failed} of ${n} requests failed`);
  return { cpuPerRequest: cpu / n, dbPerRequest: dbCpu / n, childPerRequest: childCpu / n, seconds };
}

const up = await startUpstream();
const running: Running[] = [];
let db: BenchDatabase | undefined;
let baseDb: BenchDatabase | undefined;
const variantDbs: BenchDatabase[] = [];
try {
  const nodeArgs = [...(values.profile ? ['--cpu-prof', '--cpu-prof-dir', values.profile] : []), ...(values['loop-probe'] ? ['--import', resolve('bench/loop-probe.ts')] : [])];
  if (values.profile) mkdirSync(values.profile, { recursive: true });
  const wanted = new Set((values.only ?? 'bare,bare-buffered,tollgate-postgres,tollgate-pglite').split(','));
  if (wanted.has('bare')) running.push(await startBare(up.target.origin, { nodeArgs }));
  if (wanted.has('bare-buffered')) running.push(await startBare(up.target.origin, { buffered: true, nodeArgs }));
  if (wanted.has('tollgate-postgres')) {
    if (!(await postgresReachable(DEFAULT_POSTGRES_URL))) throw new Error('Postgres is not reachable at ' + DEFAULT_POSTGRES_URL);
    db = await createBenchDatabase(DEFAULT_POSTGRES_URL, 'cpu');
    running.push(await startTollgate({ name: 'tollgate-postgres', upstreamUrl: up.target.origin, databaseUrl: db.url, backendCpu: db.backendCpu, nodeArgs }));
  }
  if (wanted.has('tollgate-pglite')) running.push(await startTollgate({ name: 'tollgate-pglite', upstreamUrl: up.target.origin, nodeArgs }));
  for (const v of values.variant ?? []) {
    const [name, assignments = ''] = v.split(/:(.*)/s);
    const env = Object.fromEntries(assignments.split(',').filter(Boolean).map((a) => a.split(/=(.*)/s).slice(0, 2) as [string, string]));
    const vdb = await createBenchDatabase(DEFAULT_POSTGRES_URL, `cpu${variantDbs.length}`);
    variantDbs.push(vdb);
    running.push(await startTollgate({ name: `tollgate-postgres-${name}`, upstreamUrl: up.target.origin, databaseUrl: vdb.url, backendCpu: vdb.backendCpu, nodeArgs, env }));
  }
  if (values.baseline) {
    if (wanted.has('tollgate-postgres')) {
      baseDb = await createBenchDatabase(DEFAULT_POSTGRES_URL, 'cpubase');
      running.push(await startTollgate({ name: 'tollgate-postgres-baseline', upstreamUrl: up.target.origin, databaseUrl: baseDb.url, backendCpu: baseDb.backendCpu, root: values.baseline, nodeArgs }));
    }
    if (wanted.has('tollgate-pglite')) running.push(await startTollgate({ name: 'tollgate-pglite-baseline', upstreamUrl: up.target.origin, root: values.baseline, nodeArgs }));
  }
  const body = chatBody();
  for (const r of running) console.error(`${r.target.name}: pid ${r.target.pid}`);
  for (const r of running) await fixedCount(r.target, body, Number(values.warmup));
  const per = new Map<string, number[]>();
  for (let round = 0; round < rounds; round++) {
    const one = async (r: Running) => {
      const m = await fixedCount(r.target, body, requests);
      (per.get(r.target.name) ?? per.set(r.target.name, []).get(r.target.name)!).push(m.cpuPerRequest);
      console.error(`round ${round + 1} ${r.target.name}: ${(m.cpuPerRequest * 1e6).toFixed(1)} µs CPU/req${r.target.backendCpu ? ` (database backends ${(m.dbPerRequest * 1e6).toFixed(1)})` : ''}${m.childPerRequest > 0 ? ` (child processes ${(m.childPerRequest * 1e6).toFixed(1)})` : ''}, ${(requests / m.seconds).toFixed(0)} req/s`);
    };
    if (values.together) await Promise.all(running.map(one));
    else for (const r of running) await one(r);
  }
  // Median round and mean over all rounds (the ledger writer's batches land in some rounds, not others).
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  // Contention from other work on the machine only ever adds CPU: the best round is the least noisy figure.
  const min = (xs: number[]) => Math.min(...xs);
  const floors = FLOORS.map((n) => per.get(n)).filter((x) => x !== undefined);
  console.log(`requests ${requests} × ${rounds} rounds, concurrency ${concurrency}; Postgres targets include their database backends' CPU`);
  for (const [name, xs] of per) {
    const ratio = (f: (v: number[]) => number) => (floors.length ? `  ${(f(xs) / Math.min(...floors.map(f))).toFixed(2)}× best floor` : '');
    console.log(
      `${name.padEnd(27)} median ${(median(xs) * 1e6).toFixed(1).padStart(6)} µs/req${ratio(median)}   mean ${(mean(xs) * 1e6).toFixed(1).padStart(6)} µs/req${ratio(mean)}   best ${(min(xs) * 1e6).toFixed(1).padStart(6)} µs/req${ratio(min)}   (rounds: ${xs.map((x) => (x * 1e6).toFixed(0)).join(', ')})`,
    );
  }
  if (values.rate) {
    const probed = new Set(values['loop-probe'] ? running.map((r) => r.target.name) : []);
    const fr = await fixedRateRounds([up.target, ...running.map((r) => r.target)], FLOORS, body, {
      rate: Number(values.rate),
      seconds: Number(values['rate-seconds']),
      rounds: Number(values['rate-rounds']),
      probed,
      log: (l) => console.error(l),
    });
    for (const l of fixedRateLines(fr)) console.log(l);
    if (values['rate-json']) writeFileSync(values['rate-json'], JSON.stringify(fr, null, 2));
  }
} finally {
  for (const r of running) await r.close();
  await up.close();
  await db?.drop();
  await baseDb?.drop();
  for (const d of variantDbs) await d.drop();
}
