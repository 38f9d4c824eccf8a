// The benchmark: every scenario of issue 6 in one invocation, against the same upstream and the same load.
//   npm run bench         full run, writes docs/benchmarks.md (about 15 minutes)
//   npm run bench:smoke   each scenario for about a second; asserts the harness ran (not that it was fast)
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, release, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { openStore } from '../gateway/store/open.ts';
import { createBenchDatabase, quietPostgres, DEFAULT_POSTGRES_URL, postgresReachable } from './databases.ts';
import type { BenchDatabase } from './databases.ts';
import { renderBenchmarks } from './benchmarks-doc.ts';
import type { BenchResults, ChunkResult, ConcurrentResult, StartupResult } from './benchmarks-doc.ts';
import { cpuWithDb, floorOf, FLOORS } from './benchmarks-doc.ts';
import { fixedRateRounds, medianRun } from './fixed-rate.ts';
import type { LedgerThroughput } from './ledger-throughput.ts';
import { chatBody, chatStreamEvents, concurrentStreams, messagesBody, saturate, streamLoad, streamOnce, ttfbRun } from './load.ts';
import type { RunResult, Target } from './load.ts';
import { parseLimitsResult } from './limits-result.ts';
import { FULL, SMOKE } from './plan.ts';
import { memory } from './proc.ts';
import { summarizeProfile } from './profile-summary.ts';
import { reportLatency } from './report-latency.ts';
import { seedLedger, seedOrganization, seedProject } from './seed-ledger.ts';
import { GATEWAY_NODE_OPTIONS, startBare, startPortkey, startTollgate, startUpstream } from './targets.ts';
import type { Running } from './targets.ts';
import { Pool } from 'undici';

const plan = process.argv.includes('--smoke') ? SMOKE : FULL;
const smoke = plan.name === 'smoke';
const t0 = performance.now();
const log = (msg: string) => console.error(`[bench ${((performance.now() - t0) / 1000).toFixed(0).padStart(4)}s] ${msg}`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const pgAdmin = process.env.DATABASE_URL || DEFAULT_POSTGRES_URL;
const fdLimit = Number(/^Max open files\s+\d+\s+(\d+)/m.exec(readFileSync('/proc/self/limits', 'utf8'))?.[1] ?? 1024);

const results: BenchResults = {
  plan,
  command: smoke ? 'npm run bench:smoke' : 'npm run bench',
  startedAt: new Date().toISOString(),
  machine: {
    cpu: cpus()[0]?.model ?? 'unknown',
    cores: cpus().length,
    memoryGb: Math.round(totalmem() / 1024 ** 3),
    kernel: release(),
    node: process.version,
    postgres: '',
    fdLimit,
    loadBefore: loadavg()[0],
    loadAfter: NaN,
    portkey: JSON.parse(readFileSync('node_modules/@portkey-ai/gateway/package.json', 'utf8')).version,
    autocannon: JSON.parse(readFileSync('node_modules/autocannon/package.json', 'utf8')).version,
  },
  json: [],
  sse: [],
  ttfb: [],
  chunks: [],
  messages: { available: false, ttfb: [], saturation: [] },
  concurrent: [],
  ledger: [],
  notes: [],
};

const closers: (() => Promise<void>)[] = [];
async function closeAll(): Promise<void> {
  while (closers.length) await closers.pop()!().catch((err: unknown) => log(`close failed: ${(err as Error).message}`));
}

/** The ledger scenario in a fresh process (bench/ledger-child.ts): what earlier scenarios left in this heap stays out of it. */
function ledgerInChild(args: string[]): Promise<LedgerThroughput> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['bench/ledger-child.ts', '--rows', String(plan.ledgerRows), ...args], { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, NODE_OPTIONS: GATEWAY_NODE_OPTIONS } });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve(JSON.parse(out) as LedgerThroughput) : reject(new Error(`bench/ledger-child.ts exited with ${code}`))));
  });
}

/** One request through a target: the harness must not measure error pages. */
async function check(t: Target, path: string, headers: Record<string, string>, body: string, stream: boolean): Promise<string | undefined> {
  const pool = new Pool(t.origin, { connections: 1 });
  try {
    if (stream) {
      const r = await streamOnce(pool, path, headers, body);
      return r.ok ? undefined : r.error;
    }
    const res = await pool.request({ path, method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
    const text = await res.body.text();
    return res.statusCode === 200 && text.includes('"usage"') ? undefined : `status ${res.statusCode}: ${text.slice(0, 200)}`;
  } finally {
    await pool.close();
  }
}

function startupOf(r: Running): StartupResult {
  return { target: r.target.name, readyMs: r.proc.readyMs, startPeakRss: r.proc.startPeakRss, idleRss: memory(r.proc.pid).rss };
}

function better(a: RunResult | undefined, b: RunResult): RunResult {
  // Best of the rounds: the least disturbed one (least CPU per request) on a shared machine.
  if (!a) return b;
  return cpuWithDb(b) < cpuWithDb(a) ? b : a;
}

async function main(): Promise<void> {
  const pgOk = await postgresReachable(pgAdmin);
  if (pgOk) {
    const c = await openStore({ databaseUrl: pgAdmin, migrate: false });
    results.machine.postgres = (await c.query<{ v: string }>("SELECT current_setting('server_version') AS v")).rows[0].v;
    await c.close();
  } else results.notes.push(`Postgres at ${pgAdmin} is not reachable: the Postgres scenarios were skipped.`);

  log(`plan ${plan.name}; starting upstream, bare pass-through (streamed, buffered), tollgate (PGlite${pgOk ? ', Postgres' : ''}), Portkey ${results.machine.portkey}`);
  const up = await startUpstream();
  closers.push(() => up.close());
  const upstreamUrl = up.target.origin;
  const bare = await startBare(upstreamUrl);
  closers.push(() => bare.close());
  const bareBuffered = await startBare(upstreamUrl, { buffered: true });
  closers.push(() => bareBuffered.close());
  // Concurrent streams need one upstream socket each; undici's default cap (1024 per origin) would queue the rest.
  const gwEnv = { TOLLGATE_UPSTREAM_CONNECTIONS: String(Math.max(1024, plan.concurrentStreams)) };
  // The embedded default boots twice on one data dir: the first boot (initdb) is reported apart from a restart,
  // which is what every later `npm start` is.
  const liteDir = mkdtempSync(join(tmpdir(), 'tollgate-bench-lite-'));
  closers.push(async () => rmSync(liteDir, { recursive: true, force: true }));
  const firstBoot = await startTollgate({ name: 'tollgate-pglite', upstreamUrl, env: gwEnv, dataDir: liteDir });
  const startup: StartupResult[] = [{ ...startupOf(firstBoot), target: 'tollgate-pglite (first boot)' }];
  await firstBoot.close();
  const tgLite = await startTollgate({ name: 'tollgate-pglite', upstreamUrl, env: gwEnv, dataDir: liteDir });
  closers.push(() => tgLite.close());
  let gwDb: BenchDatabase | undefined;
  let tgPg: Running | undefined;
  if (pgOk) {
    gwDb = await createBenchDatabase(pgAdmin, 'gateway');
    closers.push(() => gwDb!.drop());
    // Started twice too: the first start migrates the fresh database and, for sources changed since Node's compile
    // cache last saw them (the Postgres store's modules load only here), loads Node's type stripper (~17 MB of RSS).
    // Reported apart; the figures are the restart's, as every later start of the same install is.
    const firstPg = await startTollgate({ name: 'tollgate-postgres', upstreamUrl, databaseUrl: gwDb.url, env: gwEnv });
    await sleep(1000);
    startup.push({ ...startupOf(firstPg), target: 'tollgate-postgres (first start)' });
    await firstPg.close();
    tgPg = await startTollgate({ name: 'tollgate-postgres', upstreamUrl, databaseUrl: gwDb.url, backendCpu: gwDb.backendCpu, env: gwEnv });
    closers.push(() => tgPg!.close());
  }
  const portkey = await startPortkey(upstreamUrl);
  closers.push(() => portkey.close());
  // The embedded default leads: it is what `npm start` gives.
  const all: Running[] = [tgLite, ...(tgPg ? [tgPg] : []), bare, bareBuffered, portkey, up];
  await sleep(1000);
  const idle = Object.fromEntries(all.map((r) => [r.target.name, memory(r.proc.pid).rss]));
  results.idleRss = idle;

  for (const r of all) {
    for (const stream of [false, true]) {
      const err = await check(r.target, r.target.chatPath, r.target.headers, chatBody({ stream }), stream);
      if (err) throw new Error(`${r.target.name} does not answer chat ${stream ? 'SSE' : 'JSON'}: ${err}`);
    }
    startup.push({ ...startupOf(r), idleRss: idle[r.target.name], firstRequestRss: memory(r.proc.pid).rss });
  }
  results.startup = startup;

  // --- Chat JSON at saturation (autocannon), interleaved rounds; the best round per target.
  const json = chatBody();
  const best = new Map<string, RunResult>();
  for (let round = 1; round <= plan.rounds; round++) {
    for (const r of all) {
      log(`chat JSON round ${round}: ${r.target.name}`);
      await saturate(r.target, json, { connections: plan.connections, seconds: plan.warmupSeconds });
      const sat = await saturate(r.target, json, { connections: plan.connections, seconds: plan.saturateSeconds, upstreamPid: up.proc.pid });
      best.set(r.target.name, better(best.get(r.target.name), sat));
    }
  }
  // --- Chat JSON at a fixed rate (open loop): many short interleaved rounds, added p99 per round (bench/fixed-rate.ts).
  log(`chat JSON fixed rate: ${plan.rateRounds} rounds of ${plan.rateSeconds} s at ${plan.rate} req/s`);
  const fixedRate = await fixedRateRounds(
    all.map((r) => r.target),
    FLOORS,
    json,
    { rate: plan.rate, seconds: plan.rateSeconds, rounds: plan.rateRounds, upstreamPid: up.proc.pid, log },
  );
  results.fixedRate = fixedRate;
  results.json = all.map((r) => ({ target: r.target.name, saturation: best.get(r.target.name)!, rate: medianRun(fixedRate.targets.find((t) => t.target === r.target.name)!) }));

  // --- Chat SSE at saturation (every event in one upstream write).
  const sse = chatBody({ stream: true });
  for (const r of all) {
    log(`chat SSE saturation: ${r.target.name}`);
    await saturate(r.target, sse, { connections: plan.connections, seconds: plan.warmupSeconds });
    results.sse.push(await saturate(r.target, sse, { connections: plan.connections, seconds: plan.sseSaturateSeconds, upstreamPid: up.proc.pid }));
  }

  // --- Time to first byte: one stream at a time, the upstream's events 2 ms apart (the first leaves with the headers).
  const ttfbBody = chatBody({ stream: true, paceMs: 2 });
  for (const r of all) {
    log(`chat SSE time to first byte: ${r.target.name}`);
    await ttfbRun(r.target, ttfbBody, { count: Math.max(5, plan.ttfbCount / 10), expectEvents: chatStreamEvents(4) });
    results.ttfb.push(await ttfbRun(r.target, ttfbBody, { count: plan.ttfbCount, expectEvents: chatStreamEvents(4) }));
  }

  // --- Per-chunk cost: streams of 6 and of 25 events, each event its own upstream write (1 ms apart).
  for (const r of all) {
    log(`chat SSE per-chunk cost: ${r.target.name}`);
    const short = await streamLoad(r.target, chatBody({ stream: true, words: 1, paceMs: 1 }), { concurrency: plan.chunkConcurrency, seconds: plan.chunkSeconds, expectEvents: chatStreamEvents(1) });
    const long = await streamLoad(r.target, chatBody({ stream: true, words: 20, paceMs: 1 }), { concurrency: plan.chunkConcurrency, seconds: plan.chunkSeconds, expectEvents: chatStreamEvents(20) });
    const perEvent = (long.cpuPerStream - short.cpuPerStream) / (chatStreamEvents(20) - chatStreamEvents(1));
    const c: ChunkResult = { target: r.target.name, short, long, cpuPerExtraEvent: perEvent };
    results.chunks.push(c);
  }

  // --- Anthropic messages streaming, once tollgate serves POST /api/v1/messages.
  const mBody = messagesBody({ paceMs: 2 });
  const tgMsgErr = await check(tgLite.target, tgLite.target.messagesPath!, tgLite.target.messagesHeaders!, mBody, true);
  if (tgMsgErr) results.notes.push(`Anthropic messages streaming skipped: tollgate's /api/v1/messages did not stream (${tgMsgErr}).`);
  else {
    results.messages.available = true;
    for (const r of all) {
      const err = await check(r.target, r.target.messagesPath!, r.target.messagesHeaders!, mBody, true);
      if (err) {
        results.notes.push(`Anthropic messages through ${r.target.name}: ${err}; not measured.`);
        continue;
      }
      log(`messages SSE: ${r.target.name}`);
      const opts = { path: r.target.messagesPath, headers: r.target.messagesHeaders };
      await ttfbRun(r.target, mBody, { count: Math.max(5, plan.ttfbCount / 10), ...opts });
      results.messages.ttfb.push(await ttfbRun(r.target, mBody, { count: Math.max(10, plan.ttfbCount / 2), ...opts }));
      const satBody = messagesBody();
      await saturate(r.target, satBody, { connections: plan.connections, seconds: plan.warmupSeconds, ...opts });
      results.messages.saturation.push(await saturate(r.target, satBody, { connections: plan.connections, seconds: plan.sseSaturateSeconds, upstreamPid: up.proc.pid, ...opts }));
    }
  }

  // --- Concurrent slow streams. A relayed stream holds two sockets in the proxy (client + upstream); the
  // hard fd limit bounds how many one process can hold.
  const relayable = Math.min(plan.concurrentStreams, Math.floor((fdLimit - 200) / 2));
  if (relayable < plan.concurrentStreams) {
    results.notes.push(
      `Concurrent streams: this machine's hard limit on open files is ${fdLimit} per process and cannot be raised here; a relayed stream holds two sockets in the proxy, so ${relayable} streams were run and peak RSS is also given extrapolated to ${plan.concurrentStreams} from the measured growth per stream.`,
    );
  }
  const slowBody = chatBody({ stream: true, words: 20, paceMs: plan.concurrentPaceMs });
  for (const r of [tgLite, ...(tgPg ? [tgPg] : []), bare]) {
    log(`${relayable} concurrent slow streams: ${r.target.name}`);
    await sleep(1000);
    const baseRss = memory(r.proc.pid).rss;
    const c = await concurrentStreams(r.target, slowBody, { count: relayable, rampMs: plan.concurrentRampMs, expectEvents: chatStreamEvents(20), baseRss });
    const perStream = (c.peakRss - baseRss) / Math.max(1, c.requested);
    const cr: ConcurrentResult = { ...c, extrapolatedPeakRss: baseRss + perStream * plan.concurrentStreams, wanted: plan.concurrentStreams };
    results.concurrent.push(cr);
  }

  // --- Profile where the CPU target is missed (full run only): tollgate on Postgres at saturation.
  const tgForProfile = tgPg ?? tgLite;
  const bareCpu = floorOf(results.json, (j) => j.saturation.cpuPerRequest)!;
  const tgCpu = cpuWithDb(results.json.find((j) => j.target === tgForProfile.target.name)!.saturation);
  await closeAll();

  if (plan.profileSeconds > 0 && tgCpu > 1.25 * bareCpu) {
    log(`profiling ${tgForProfile.target.name} (CPU per request ${(tgCpu / bareCpu).toFixed(2)}× bare)`);
    results.profile = await profileGateway(tgForProfile.target.name, pgOk);
  }

  // --- Ledger writer throughput.
  const ledgerDir = mkdtempSync(join(tmpdir(), 'tollgate-bench-ledger-'));
  try {
    if (pgOk) {
      // After the gateways' scenarios: Postgres checkpoints what they left and the machine goes quiet first; three
      // runs, each on a fresh database, the median reported with all three.
      const busyBefore = await quietPostgres(pgAdmin);
      const runs: LedgerThroughput[] = [];
      for (let i = 0; i < plan.ledgerRuns; i++) {
        log(`ledger: ${plan.ledgerRows} rows into Postgres (run ${i + 1} of ${plan.ledgerRuns})`);
        const db = await createBenchDatabase(pgAdmin, 'ledger');
        try {
          runs.push(await ledgerInChild(['--database-url', db.url, '--journal-dir', join(ledgerDir, `pg-${i}`)]));
        } finally {
          await db.drop();
        }
      }
      const ordered = [...runs].sort((a, b) => a.endToEnd - b.endToEnd);
      results.ledger.push({ ...ordered[(ordered.length - 1) >> 1], runs: runs.map((r) => r.endToEnd), busyBefore });
    }
    log(`ledger: ${plan.ledgerRows} rows into PGlite`);
    results.ledger.push(await ledgerInChild(['--data-dir', join(ledgerDir, 'lite'), '--journal-dir', join(ledgerDir, 'lite-journal')]));
  } finally {
    rmSync(ledgerDir, { recursive: true, force: true });
  }

  // --- Usage report over a seeded ledger (Postgres: the seed is SQL on a fresh database the gateway then reads).
  if (pgOk) {
    const db = await createBenchDatabase(pgAdmin, 'report');
    const store = await openStore({ databaseUrl: db.url });
    let gw: Awaited<ReturnType<typeof startTollgate>> | undefined;
    let upstream: Running | undefined;
    try {
      log(`seeding ${plan.seedRows.toLocaleString('en-US')} ledger rows into Postgres`);
      // The range ends a few minutes past an hour boundary, so the report reads partial hours from raw rows too.
      const end = Math.floor(Date.now() / 60_000) * 60_000 - 7 * 60_000;
      const seed = await seedLedger(store, { rows: plan.seedRows, days: 30, end });
      log(`seeded in ${seed.seconds.toFixed(0)} s; measuring the usage report`);
      upstream = await startUpstream();
      gw = await startTollgate({
        name: 'tollgate-report',
        upstreamUrl: upstream.target.origin,
        databaseUrl: db.url,
        extraKeys: [{ organization: seedOrganization(0, seed.organizations), project: seedProject(0) }],
      });
      const latency = await reportLatency({
        gatewayUrl: gw.target.origin,
        key: gw.keyFor(seedProject(0)),
        store,
        organization: seedOrganization(0, seed.organizations),
        from: seed.from,
        to: seed.to,
        repeats: plan.reportRepeats,
      });
      results.report = { seed, latency };
    } finally {
      await gw?.close();
      await upstream?.close();
      await store.close();
      await db.drop();
    }
  }

  // --- Image edit memory (the images engineer's scenario), when present.
  if (existsSync('bench/image-edit-memory.ts')) {
    log('image edit memory');
    const args = smoke ? ['--mb', '2', '--concurrency', '2'] : ['--mb', '60', '--concurrency', '8'];
    results.imageEdit = await runChild(['bench/image-edit-memory.ts', ...args], { DATABASE_URL: pgOk ? pgAdmin : '' });
  }

  // --- Rate limits and budgets: CPU per request off / in-process / Redis, beside its own bare floor.
  log('limits: off, in-process, Redis');
  const lim = await runChild(
    ['bench/limits.ts', '--requests', String(plan.limitsRequests), '--rounds', String(plan.limitsRounds), '--rate', String(plan.rate), '--rate-seconds', String(plan.limitsRateSeconds), '--rate-rounds', String(plan.limitsRateRounds), '--instr-requests', String(plan.limitsInstrRequests)],
    {},
  );
  results.limits = parseLimitsResult(lim.output) ?? { error: `exit ${lim.code}: ${lim.output.slice(-400)}` };

  results.machine.loadAfter = loadavg()[0];
  results.seconds = (performance.now() - t0) / 1000;
}

async function profileGateway(name: string, pg: boolean): Promise<NonNullable<BenchResults['profile']>> {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-bench-prof-'));
  const up = await startUpstream();
  const db = pg ? await createBenchDatabase(pgAdmin, 'profile') : undefined;
  const gw = await startTollgate({ name, upstreamUrl: up.target.origin, databaseUrl: db?.url, nodeArgs: ['--cpu-prof', '--cpu-prof-dir', dir] });
  try {
    const json = chatBody();
    await saturate(gw.target, json, { connections: plan.connections, seconds: plan.warmupSeconds });
    await saturate(gw.target, json, { connections: plan.connections, seconds: plan.profileSeconds });
  } finally {
    await gw.close();
    await up.close();
    await db?.drop();
  }
  const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
  if (!file) throw new Error('no CPU profile written');
  const s = summarizeProfile(join(dir, file), 40);
  rmSync(dir, { recursive: true, force: true });
  return { target: name, seconds: plan.profileSeconds, ...s };
}

function runChild(args: string[], env: Record<string, string>): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.stderr.on('data', (d: Buffer) => (out += d.toString()));
    p.on('close', (code) => resolve({ code: code ?? 1, output: out.trim() }));
  });
}

/** Smoke: the harness ran every scenario and produced numbers; speed is not judged. */
function assertHarnessRan(r: BenchResults): string[] {
  const problems: string[] = [];
  const expectTargets = r.json.map((j) => j.target);
  if (expectTargets.length < 5) problems.push(`only ${expectTargets.length} targets ran`);
  for (const j of r.json) {
    if (j.saturation.ok === 0 || j.saturation.failed > 0) problems.push(`${j.target} JSON saturation: ${j.saturation.ok} ok, ${j.saturation.failed} failed`);
    if (j.rate.ok === 0 || j.rate.failed > 0) problems.push(`${j.target} JSON fixed rate: ${j.rate.ok} ok, ${j.rate.failed} failed`);
    if (!(j.saturation.cpuPerRequest >= 0) || !(j.saturation.peakRss > 0)) problems.push(`${j.target}: no CPU/RSS figures`);
  }
  for (const s of r.sse) if (s.ok === 0 || s.failed > 0) problems.push(`${s.target} SSE saturation: ${s.ok} ok, ${s.failed} failed`);
  for (const t of r.ttfb) if (t.ok === 0 || t.failed > 0) problems.push(`${t.target} TTFB: ${t.ok} ok, ${t.failed} failed`);
  for (const c of r.chunks) if (c.short.ok === 0 || c.long.ok === 0 || c.short.failed + c.long.failed > 0) problems.push(`${c.target} per-chunk: ${c.short.firstError ?? c.long.firstError ?? 'no streams'}`);
  for (const c of r.concurrent) if (c.ok !== c.requested) problems.push(`${c.target} concurrent streams: ${c.ok}/${c.requested} (${c.firstError})`);
  if (r.concurrent.length === 0) problems.push('no concurrent-stream run');
  if (!r.startup?.some((x) => x.target === 'tollgate-pglite' && x.readyMs > 0 && x.firstRequestRss)) problems.push('no start-up figures for tollgate-pglite');
  const pgJson = r.json.find((j) => j.target === 'tollgate-postgres');
  // (A short smoke window may see no whole clock tick of backend CPU: measured, even if zero, is what counts.)
  if (pgJson && pgJson.saturation.dbCpuPerRequest === undefined) problems.push('tollgate-postgres: no database backend CPU measured');
  if (r.ledger.length === 0 || r.ledger.some((l) => l.stored !== 2 * l.rows)) problems.push(`ledger: ${JSON.stringify(r.ledger.map((l) => [l.backend, l.stored, l.rows]))}`);
  if (r.machine.postgres && (!r.report || r.report.latency.projectRows === 0 || r.report.latency.project.count === 0)) problems.push('usage report did not run over the seeded rows');
  if (r.imageEdit && r.imageEdit.code !== 0) problems.push(`image edit memory exited ${r.imageEdit.code}`);
  if (!r.limits || 'error' in r.limits) problems.push(`limits: ${r.limits ? r.limits.error : 'not run'}`);
  else if (r.limits.targets.length !== 5 || r.limits.governorAlone.length === 0) problems.push(`limits: ${r.limits.targets.length} targets measured`);
  return problems;
}

try {
  await main();
  const doc = renderBenchmarks(results);
  if (smoke) {
    const out = join(mkdtempSync(join(tmpdir(), 'tollgate-bench-smoke-')), 'benchmarks.md');
    writeFileSync(out, doc);
    const problems = assertHarnessRan(results);
    if (!doc.includes('## Targets')) problems.push('document not rendered');
    if (problems.length) {
      console.error(`bench:smoke FAILED:\n- ${problems.join('\n- ')}`);
      process.exitCode = 1;
    } else log(`bench:smoke ok in ${results.seconds?.toFixed(0)} s (document rendered to ${out})`);
  } else {
    mkdirSync('docs', { recursive: true });
    writeFileSync('docs/benchmarks.md', doc);
    writeFileSync(join(tmpdir(), 'tollgate-bench-results.json'), JSON.stringify(results, null, 2));
    log(`wrote docs/benchmarks.md in ${results.seconds?.toFixed(0)} s`);
  }
} catch (err) {
  console.error(`bench failed: ${(err as Error).stack ?? err}`);
  process.exitCode = 1;
} finally {
  await closeAll();
}
