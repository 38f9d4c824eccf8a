// Renders one benchmark run as docs/benchmarks.md: machine, date, command, a table per scenario, and the targets.
import type { LedgerThroughput } from './ledger-throughput.ts';
import type { ConcurrentStreamsResult, RunResult, StreamLoadResult, TtfbResult } from './load.ts';
import type { FixedRateResult } from './fixed-rate.ts';
import type { BenchPlan } from './plan.ts';
import type { HotFunction } from './profile-summary.ts';
import type { ReportLatency } from './report-latency.ts';
import type { SeedResult } from './seed-ledger.ts';
import { mb, ms, ratio, us } from './stats.ts';

export interface ChunkResult {
  target: string;
  short: StreamLoadResult;
  long: StreamLoadResult;
  /** CPU seconds per additional SSE event: (long − short per stream) / (events difference). */
  cpuPerExtraEvent: number;
}

export interface ConcurrentResult extends ConcurrentStreamsResult {
  wanted: number;
  extrapolatedPeakRss: number;
}

/** What a target costs before any load: start-to-ready, peak RSS during start, idle, and after its first request. */
export interface StartupResult {
  target: string;
  readyMs: number;
  startPeakRss: number;
  idleRss: number;
  firstRequestRss?: number;
}

export interface BenchResults {
  plan: BenchPlan;
  command: string;
  startedAt: string;
  seconds?: number;
  machine: {
    cpu: string;
    cores: number;
    memoryGb: number;
    kernel: string;
    node: string;
    postgres: string;
    fdLimit: number;
    loadBefore: number;
    loadAfter: number;
    portkey: string;
    autocannon: string;
  };
  idleRss?: Record<string, number>;
  startup?: StartupResult[];
  /** `rate`: the fixed-rate round with the target's median p99 (all rounds: fixedRate). */
  json: { target: string; saturation: RunResult; rate: RunResult }[];
  /** The fixed-rate rounds (bench/fixed-rate.ts); absent in results from before it. */
  fixedRate?: FixedRateResult;
  sse: RunResult[];
  ttfb: TtfbResult[];
  chunks: ChunkResult[];
  messages: { available: boolean; ttfb: TtfbResult[]; saturation: RunResult[] };
  concurrent: ConcurrentResult[];
  ledger: LedgerThroughput[];
  report?: { seed: SeedResult; latency: ReportLatency };
  imageEdit?: { code: number; output: string };
  /** bench/limits.ts: CPU per request with rate limits and budgets off, counted in-process, counted in Redis. */
  limits?: LimitsResult | { error: string };
  profile?: { target: string; seconds: number; self: HotFunction[]; inclusive: HotFunction[]; samples: number };
  notes: string[];
}

export interface LimitsTargetRow {
  target: string;
  /** Median over the rounds, gateway process CPU per request. */
  cpuUsPerRequest: number;
  /** Median over the rounds of (this target − limits off) in the same round (limits-redis: its own gateway's "off"). */
  addedVsOffUs: number;
  /** The first and third quartiles of those per-round differences. */
  addedQuartilesUs?: [number, number];
  p99AtRateMs: number;
  p99AddedVsOffMs: number;
  /**
   * Redis gateways, when the Redis server runs on this machine: its CPU per request in this target's segments (all
   * its threads, schedstat), median over the rounds of (this − its gateway's "off"), µs. Part of what the target adds.
   */
  redisServerUs?: number;
}

export interface LimitsResult {
  /** Requests per segment (one state of one gateway in one round), after `warmup` unmeasured ones. */
  requests: number;
  warmup?: number;
  rounds: number;
  /** p99 rounds at the fixed rate. */
  rateRounds?: number;
  /** "toggle": keys with and without limits compared inside each gateway process, CPU from schedstat (ns). Absent: one process per state, /proc ticks. */
  method?: 'toggle';
  concurrency: number;
  rate: number;
  rateSeconds: number;
  loadBefore: number;
  loadAfter: number;
  governorAlone: { rules: string; cpuUsPerRequest: number }[];
  targets: LimitsTargetRow[];
  /** One clock tick of /proc CPU time spread over a round's requests: no smaller difference can be read. */
  cpuResolutionUs?: number;
  /**
   * bench/limits.ts --instr-requests: the in-process gateway under callgrind, keys alternated. "added" is the median over the
   * rounds of (state − off) in instructions other than GC and compiler, in µs at this run's native µs per instruction.
   */
  instructions?: {
    requests: number;
    rounds: number;
    usPerInstruction: number;
    targets: { target: string; instructionsPerRequest: number; restPerRequest: number; addedInstructions: number; addedUs: number }[];
  };
  /** limits-redis: script calls sent to Redis per request in the closed-loop rounds (median), from its /metrics. */
  redisCallsPerRequest?: number;
}

/** Goals for the CPU a governed request adds over limits off: in-process and in Redis (µs). */
const LIMITS_GOAL_US: Record<string, number> = { 'limits-in-process': 3, 'limits-redis': 25 };

const TOLLGATES = ['tollgate-pglite', 'tollgate-postgres'];
/** The two bare pass-throughs; the floor of a measure is the better of them in the same run. */
export const FLOORS = ['bare', 'bare-buffered'];
const TARGET_CPU: Record<string, number> = { 'tollgate-pglite': 1.4, 'tollgate-postgres': 1.25 };
const TARGET_IDLE_RSS: Record<string, number> = { 'tollgate-pglite': 200, 'tollgate-postgres': 120 };
/** What each tollgate target's first start is called; its row (`<target> (<that>)`) is reported apart from the restart the figures come from. */
const FIRST_START: Record<string, string> = { 'tollgate-pglite': 'first boot', 'tollgate-postgres': 'first start' };
const firstStartRow = (tg: string) => `${tg} (${FIRST_START[tg]})`;

/** The target's CPU per request with its database's backends (Postgres), the figure every ratio uses. */
export function cpuWithDb(r: RunResult): number {
  return r.cpuPerRequest + (r.dbCpuPerRequest ?? 0);
}

/** The best (lowest) of the bare floors' figures, or undefined when neither ran. */
export function floorOf<T extends { target: string }>(rows: T[], f: (row: T) => number): number | undefined {
  const xs = rows.filter((x) => FLOORS.includes(x.target)).map(f);
  return xs.length ? Math.min(...xs) : undefined;
}

function floorName<T extends { target: string }>(rows: T[], f: (row: T) => number): string {
  const best = floorOf(rows, f);
  return rows.find((x) => FLOORS.includes(x.target) && f(x) === best)?.target ?? 'bare';
}

function table(head: string[], rows: (string | number)[][]): string {
  const line = (cells: (string | number)[]) => `| ${cells.join(' | ')} |`;
  return [line(head), line(head.map((h, i) => (i === 0 ? '---' : '---:'))), ...rows.map(line)].join('\n');
}

interface Target {
  name: string;
  goal: string;
  figure: string;
  met: boolean | undefined;
  /** The bare pass-through's figure for the same measure in the same run: where Node itself stands on this machine. */
  floor?: string;
}

function targets(r: BenchResults): Target[] {
  const out: Target[] = [];
  const json = (n: string) => r.json.find((j) => j.target === n);
  const direct = json('direct');
  const portkey = json('portkey');
  const floorCpu = floorOf(r.json, (j) => j.saturation.cpuPerRequest);
  const floorCpuName = floorName(r.json, (j) => j.saturation.cpuPerRequest);
  for (const tg of TOLLGATES) {
    const j = json(tg);
    if (!j || floorCpu === undefined) continue;
    const total = cpuWithDb(j.saturation);
    const cpu = total / floorCpu;
    const db = j.saturation.dbCpuPerRequest === undefined ? '' : ` incl. ${us(j.saturation.dbCpuPerRequest)} µs database backend`;
    const goal = TARGET_CPU[tg];
    out.push({
      name: `CPU per non-streaming request, ${tg}${tg === 'tollgate-postgres' ? ' incl. DB backend' : ''}, default log level / best bare floor`,
      goal: `≤ ${goal}×`,
      figure: `${cpu.toFixed(2)}× (${us(total)} µs${db} vs ${us(floorCpu)} µs ${floorCpuName})`,
      met: cpu <= goal,
    });
  }
  for (const tg of TOLLGATES) {
    const j = json(tg);
    if (!j || !portkey) continue;
    const x = j.saturation.rps / portkey.saturation.rps;
    const floorRps = Math.max(...r.json.filter((b) => FLOORS.includes(b.target)).map((b) => b.saturation.rps));
    const floor = Number.isFinite(floorRps) ? `${(floorRps / portkey.saturation.rps).toFixed(2)}×` : undefined;
    out.push({ name: `Throughput at saturation, ${tg} / Portkey, default settings`, goal: '≥ 5×', figure: `${x.toFixed(2)}× (${j.saturation.rps.toFixed(0)} vs ${portkey.saturation.rps.toFixed(0)} req/s)`, met: x >= 5, floor });
  }
  const fr = r.fixedRate;
  const floorP99 = floorOf(r.json, (j) => j.rate.latency.p99);
  for (const tg of TOLLGATES) {
    const j = json(tg);
    const rounds = fr?.targets.find((t) => t.target === tg);
    if (fr && rounds) {
      // Median over rounds of (p99 − the same round's best floor p99): see bench/fixed-rate.ts.
      const a = rounds.addedP99Spread;
      const directRounds = fr.targets.find((t) => t.target === 'direct');
      const floor = directRounds ? `${ms(-directRounds.addedP99Spread.median)} ms over direct` : undefined;
      out.push({
        name: `Added p99 at ${fr.rate} req/s over the best bare floor, ${tg}`,
        goal: '≤ 0.5 ms',
        figure: `${ms(a.median, 3)} ms, median of ${fr.rounds} rounds (quartiles ${ms(a.q1)} – ${ms(a.q3)} ms; p99 ${ms(rounds.p99Spread.median, 3)} ms; steady rounds ${rounds.addedP99Steady ? `${ms(rounds.addedP99Steady.median, 3)} ms, ${fr.steadyRounds.length}` : 'none'})`,
        met: a.median <= 0.5,
        floor,
      });
      continue;
    }
    if (!j || floorP99 === undefined) continue;
    const added = j.rate.latency.p99 - floorP99;
    const floor = direct ? `${ms(floorP99 - direct.rate.latency.p99)} ms over direct` : undefined;
    out.push({ name: `Added p99 at ${r.plan.rate} req/s over the best bare floor, ${tg}`, goal: '≤ 0.5 ms', figure: `${ms(added, 3)} ms (p99 ${ms(j.rate.latency.p99, 3)} vs ${ms(floorP99, 3)} ms)`, met: added <= 0.5, floor });
  }
  const floorIdle = floorOf(r.startup ?? [], (x) => x.idleRss);
  for (const tg of TOLLGATES) {
    const st = r.startup?.find((x) => x.target === tg);
    if (!st) continue;
    const goal = TARGET_IDLE_RSS[tg];
    const first = r.startup?.find((x) => x.target === firstStartRow(tg));
    const firstText = first?.idleRss ? `; ${FIRST_START[tg]} ${mb(first.idleRss)} MB` : '';
    out.push({ name: `Idle RSS, ${tg}`, goal: `≤ ${goal} MB`, figure: `${mb(st.idleRss)} MB (after first request ${st.firstRequestRss ? mb(st.firstRequestRss) : 'n/a'} MB${firstText})`, met: st.idleRss <= goal * 1024 * 1024, floor: floorIdle === undefined ? undefined : `${mb(floorIdle)} MB` });
  }
  const lite = r.startup?.find((x) => x.target === 'tollgate-pglite');
  if (lite) {
    const first = r.startup?.find((x) => x.target === firstStartRow('tollgate-pglite'));
    out.push({ name: 'Start to ready, tollgate-pglite (not first boot)', goal: '≤ 1.5 s', figure: `${(lite.readyMs / 1000).toFixed(2)} s (first boot ${first ? (first.readyMs / 1000).toFixed(2) : 'n/a'} s)`, met: lite.readyMs <= 1500 });
  }
  const cb = r.concurrent.find((x) => x.target === 'bare');
  const streamRss = (c: ConcurrentResult) => (c.requested < c.wanted ? c.extrapolatedPeakRss : c.peakRss);
  for (const c of r.concurrent.filter((x) => TOLLGATES.includes(x.target))) {
    const none = c.ok === c.requested;
    const growth = streamRss(c) - c.baseRss;
    out.push({
      name: `${c.wanted.toLocaleString('en-US')} concurrent slow streams, ${c.target}: RSS growth over idle, dropped`,
      goal: '≤ 250 MB, 0',
      figure: `${mb(growth)} MB${c.requested < c.wanted ? ` (extrapolated; ${mb(c.peakRss - c.baseRss)} MB measured at ${c.requested.toLocaleString('en-US')})` : ''}, ${c.requested - c.ok} dropped`,
      met: none && growth <= 250 * 1024 * 1024,
      floor: cb ? `${mb(streamRss(cb) - cb.baseRss)} MB, ${cb.requested - cb.ok} dropped` : undefined,
    });
  }
  const lp = r.ledger.find((l) => l.backend === 'postgres');
  if (lp) out.push({ name: 'Ledger into Postgres (end to end)', goal: '≥ 60,000 rows/s', figure: `${lp.endToEnd.toFixed(0)} rows/s (statement alone ${lp.statement.toFixed(0)}${lp.runs && lp.runs.length > 1 ? `; median of ${lp.runs.length} runs: ${lp.runs.map((x) => x.toFixed(0)).join(', ')}` : ''})`, met: lp.endToEnd >= 60_000 });
  const dt = r.ttfb.find((t) => t.target === 'direct');
  const tb = r.ttfb.find((t) => t.target === 'bare');
  for (const tg of TOLLGATES) {
    const t = r.ttfb.find((x) => x.target === tg);
    if (!t || !dt) continue;
    const added = t.ttfb.p50 - dt.ttfb.p50;
    const floor = tb ? `${ms(tb.ttfb.p50 - dt.ttfb.p50, 3)} ms` : undefined;
    out.push({ name: `Streaming first-byte overhead (p50), ${tg} − direct`, goal: '≤ 0.5 ms', figure: `${ms(added, 3)} ms (p99: ${ms(t.ttfb.p99 - dt.ttfb.p99, 3)} ms)`, met: added <= 0.5, floor });
  }
  if (r.limits && 'targets' in r.limits) {
    const bare = r.limits.targets.find((t) => t.target === 'bare');
    const control = r.limits.targets.find((t) => t.target === 'limits-off-again');
    const counted = r.limits.instructions?.targets;
    const instrControl = counted?.find((t) => t.target === 'limits-off-again');
    for (const t of r.limits.targets) {
      const goal = LIMITS_GOAL_US[t.target];
      if (goal === undefined) continue;
      // In-process: the instruction count (converted to µs) decides when it was measured; no neighbour moves it.
      const instr = counted?.find((c) => c.target === t.target);
      if (instr && instrControl) {
        out.push({
          name: 'CPU a governed request adds over limits off, counters in-process (13 rules: key, project, organization)',
          goal: `≤ ${goal} µs`,
          figure: `${instr.addedUs.toFixed(2)} µs from ${instr.addedInstructions.toLocaleString('en-US')} instructions (control, limits off twice: ${instrControl.addedUs.toFixed(2)} µs; CPU time: ${t.addedVsOffUs.toFixed(1)} µs, control ${control ? control.addedVsOffUs.toFixed(1) : 'n/a'} µs)`,
          met: Math.abs(instrControl.addedUs) > goal ? undefined : instr.addedUs <= goal,
          floor: bare ? `${bare.cpuUsPerRequest.toFixed(1)} µs` : undefined,
        });
        continue;
      }
      // Counters in Redis: the Redis server's CPU for the request is part of what it costs (when it was counted).
      const total = t.addedVsOffUs + (t.redisServerUs ?? 0);
      const split = t.redisServerUs !== undefined ? `: gateway ${t.addedVsOffUs.toFixed(1)} + Redis server ${t.redisServerUs.toFixed(1)} µs` : '';
      out.push({
        name: `CPU a governed request adds over limits off, ${t.target === 'limits-redis' ? 'counters in Redis, the Redis server included' : 'counters in-process'} (13 rules: key, project, organization)`,
        goal: `≤ ${goal} µs`,
        figure: `${total.toFixed(1)} µs${split} (${t.cpuUsPerRequest.toFixed(1)} µs; p99 at ${r.limits.rate} req/s ${t.p99AddedVsOffMs >= 0 ? '+' : ''}${t.p99AddedVsOffMs.toFixed(2)} ms${control ? `; control, limits off twice: ${control.addedVsOffUs.toFixed(1)} µs` : ''})`,
        // When two identical gateways differ by more than the goal, this run cannot tell whether it is met.
        met: (control && Math.abs(control.addedVsOffUs) > goal) || (r.limits.cpuResolutionUs ?? 0) > goal ? undefined : total <= goal,
        floor: bare ? `${bare.cpuUsPerRequest.toFixed(1)} µs` : undefined,
      });
    }
  }
  if (r.report) {
    const l = r.report.latency;
    out.push({ name: `Usage report, 30 days over ${r.report.seed.rows.toLocaleString('en-US')} rows, one project (p50)`, goal: '≤ 50 ms', figure: `${ms(l.project.p50)} ms (p99 ${ms(l.project.p99)} ms)`, met: l.project.p50 <= 50 });
    out.push({ name: 'Usage report, organization-wide rollup query (p50)', goal: '≤ 50 ms', figure: `${ms(l.organization.p50)} ms (p99 ${ms(l.organization.p99)} ms)`, met: l.organization.p50 <= 50 });
  }
  return out;
}

export function renderBenchmarks(r: BenchResults): string {
  const m = r.machine;
  const s: string[] = [];
  s.push('# Benchmarks');
  s.push('');
  s.push(
    'What tollgate adds to every request, measured against the same fake upstream under the same load as a bare Node pass-through (the floor) and Portkey\'s gateway (the peer). All servers are child processes on loopback; the figures below come from one run of the command shown. Absolute numbers on a shared 2-core machine are noise; the **ratios** in the same run are what we track.',
  );
  s.push('');
  s.push(`- Command: \`${r.command}\` (plan \`${r.plan.name}\`; ${r.seconds ? `${(r.seconds / 60).toFixed(1)} minutes` : 'incomplete'})`);
  s.push(`- Date: ${r.startedAt}`);
  s.push(`- Machine: ${m.cpu}, ${m.cores} cores, ${m.memoryGb} GB RAM, Linux ${m.kernel}; Node ${m.node}; Postgres ${m.postgres || 'not reachable'}; open-file limit ${m.fdLimit}`);
  s.push(`- Load average (1 min) before/after: ${m.loadBefore.toFixed(2)} / ${Number.isFinite(m.loadAfter) ? m.loadAfter.toFixed(2) : 'n/a'} (other work shares this machine)`);
  s.push(`- Tools: autocannon ${m.autocannon} (saturation), an open-loop undici pacer (fixed rate), undici stream clients; Portkey \`@portkey-ai/gateway\` ${m.portkey}`);
  s.push('');

  s.push('## Targets');
  s.push('');
  s.push('Every tollgate target runs with its defaults (log level info: the access log is on). The floor is the better of two bare fastify + undici pass-throughs measured the same way in the same run, one streaming the answer back and one buffering it: what Node itself reaches on this machine. On Postgres, CPU includes the database backends serving the gateway\'s connections over the same interval (PGlite does that work in-process). The last column is the floor\'s own figure where it has one; every figure is reported whether met or not.');
  s.push('');
  s.push(table(['target', 'goal', 'this run', 'met', 'bare pass-through, same run'], targets(r).map((t) => [t.name, t.goal, t.figure, t.met === undefined ? 'n/a' : t.met ? 'met' : '**missed**', t.floor ?? '—'])));
  s.push('');

  s.push('## What runs');
  s.push('');
  s.push('- **direct**: the fake upstream (`test/upstream/main.ts`), OpenAI chat JSON and SSE and Anthropic messages; its own figures show it is not the bottleneck.');
  s.push('- **bare / bare-buffered**: `bench/bare-proxy.ts`, fastify + one undici Agent that only forwards (no auth, no parsing, no metering); `bare` streams the upstream body back, `bare-buffered` (`--buffered`) reads a JSON answer whole and sends one Buffer. The floor of each measure is the better of the two.');
  s.push('- **tollgate-pglite / tollgate-postgres**: `node bin/tollgate.js start --config <generated> --host 127.0.0.1` (what `npm start` runs) at its defaults (log level info, access log to stdout), auth + billing + ledger on (journal + background writer into embedded PGlite, or a fresh Postgres database). Each is started twice (PGlite on one data dir, Postgres on one database); the first start (initdb or migrations, and Node\'s type stripper for sources its compile cache has not seen) is reported apart, the figures are the restart\'s.');
  s.push('- **portkey**: `node_modules/@portkey-ai/gateway/build/start-server.js --headless`, routed per request by `x-portkey-provider: openai` + `x-portkey-custom-host: <upstream>/v1`. The preload `bench/loopback-only.ts` binds it to 127.0.0.1 and keeps Node\'s own `Request`/`Response` globals: with @hono/node-server 1.19\'s replacements every Portkey stream fails (`TypeError: immutable`, Portkey appends headers to the upstream fetch response\'s immutable Headers).');
  s.push(`- Request: \`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"a b c d"}]}\` (SSE: \`stream: true\`, \`stream_options.include_usage\`). Idle RSS before load: ${Object.entries(r.idleRss ?? {}).map(([k, v]) => `${k} ${mb(v)} MB`).join(', ')}.`);
  s.push('');

  s.push('## Start and idle memory');
  s.push('');
  s.push('Start to ready: spawn to the first answer of the health endpoint (polled every 20 ms). Peak RSS during start: VmHWM at ready. Idle: RSS a second after every target started. After first request: RSS after one JSON and one SSE chat request.');
  s.push('');
  s.push(
    table(
      ['target', 'start to ready s', 'peak RSS during start MB', 'idle RSS MB', 'RSS after first request MB'],
      (r.startup ?? []).map((x) => [x.target, (x.readyMs / 1000).toFixed(2), mb(x.startPeakRss), mb(x.idleRss), x.firstRequestRss === undefined ? '—' : mb(x.firstRequestRss)]),
    ),
  );
  s.push('');

  const floorCpu = floorOf(r.json, (j) => j.saturation.cpuPerRequest);
  const direct = r.json.find((j) => j.target === 'direct');
  const portkey = r.json.find((j) => j.target === 'portkey');
  s.push('## Chat completions, JSON');
  s.push('');
  s.push(`At saturation: autocannon, ${r.plan.connections} connections, ${r.plan.saturateSeconds} s after a ${r.plan.warmupSeconds} s warm-up; best of ${r.plan.rounds} interleaved round(s) (least CPU per request). CPU is the server process's (and its children's) utime + stime from \`/proc/<pid>/stat\` over the run and until the target is idle again (under 2 % of a core over 200 ms: the ledger rows a run leaves behind are written in its window, not the next run's; every measured run also starts from idle), divided by successful requests (for tollgate-postgres also the Postgres backends connected to its database, found in \`pg_stat_activity\`, read the same way over the same interval); peak RSS is VmHWM (reset before each run).`);
  s.push('');
  s.push(
    table(
      ['target', 'req/s', 'p50 ms', 'p99 ms', 'p99.9 ms', 'CPU µs/req', 'DB backend CPU µs/req', 'CPU (incl. DB) vs best floor', 'req/s vs Portkey', 'peak RSS MB', 'upstream CPU µs/req', 'errors'],
      r.json.map((j) => [
        j.target,
        j.saturation.rps.toFixed(0),
        ms(j.saturation.latency.p50),
        ms(j.saturation.latency.p99),
        ms(j.saturation.latency.p999),
        us(j.saturation.cpuPerRequest),
        j.saturation.dbCpuPerRequest === undefined ? '—' : us(j.saturation.dbCpuPerRequest),
        floorCpu !== undefined ? ratio(cpuWithDb(j.saturation), floorCpu) : 'n/a',
        portkey ? ratio(j.saturation.rps, portkey.saturation.rps) : 'n/a',
        mb(j.saturation.peakRss),
        j.saturation.upstreamCpuPerRequest === undefined ? '—' : us(j.saturation.upstreamCpuPerRequest),
        j.saturation.failed,
      ]),
    ),
  );
  s.push('');
  const fr = r.fixedRate;
  const frOf = (target: string) => fr?.targets.find((t) => t.target === target);
  s.push(
    fr
      ? `At a fixed rate: ${fr.rate} req/s, open loop (requests leave on schedule whatever the answers do; autocannon's own rate limit sends each connection's quota back to back at the start of every second, which measures burst queueing). Latency is send to last byte. ${fr.rounds} rounds of ${fr.seconds} s per target after a 1 s warm-up, every target once per round, the order reversed every other round; a row is the target's median-p99 round. "added p99 over floor" is the median over rounds of (the target's p99 − the best bare floor's p99 in the same round), with its quartiles: a neighbour's burst on the shared cores lands in one round of every target alike, where one long run per target lets it decide the figure.`
      : `At a fixed rate: ${r.plan.rate} req/s for ${r.plan.rateSeconds} s, open loop (requests leave on schedule whatever the answers do; autocannon's own rate limit sends each connection's quota back to back at the start of every second, which measures burst queueing). Latency is send to last byte.`,
  );
  s.push('');
  s.push(
    table(
      ['target', 'achieved req/s', 'p50 ms', 'p99 ms', 'p99.9 ms', 'added p50 ms (vs direct)', 'added p99 ms (vs direct)', 'added p99 over floor, median (quartiles) ms', 'CPU µs/req', 'max send lag ms', 'errors'],
      r.json.map((j) => {
        const a = frOf(j.target)?.addedP99Spread;
        return [
          j.target,
          j.rate.rps.toFixed(0),
          ms(j.rate.latency.p50, 3),
          ms(j.rate.latency.p99, 3),
          ms(j.rate.latency.p999, 3),
          direct ? ms(j.rate.latency.p50 - direct.rate.latency.p50, 3) : 'n/a',
          direct ? ms(j.rate.latency.p99 - direct.rate.latency.p99, 3) : 'n/a',
          a ? `${ms(a.median, 3)} (${ms(a.q1)} – ${ms(a.q3)})` : 'n/a',
          us(j.rate.cpuPerRequest),
          ms(j.rate.maxLagMs ?? NaN, 1),
          j.rate.failed,
        ];
      }),
    ),
  );
  if (fr) {
    s.push('');
    s.push(`p99 of every round, ms (the best floor of each round in the last row; * marks a steady round, in which no run's pacer sent more than ${fr.steadyLagMs} ms behind schedule: the machine gave the bench a core on time throughout):`);
    s.push('');
    s.push(
      table(
        ['target', ...fr.floorP99.map((_, i) => `r${i + 1}${fr.steadyRounds.includes(i) ? '*' : ''}`)],
        [...fr.targets.map((t) => [t.target, ...t.p99.map((x) => ms(x))]), ['best floor', ...fr.floorP99.map((x, i) => `${ms(x)} (${fr.floorName[i]})`)]],
      ),
    );
  }
  s.push('');

  s.push('## Chat completions, SSE');
  s.push('');
  s.push(`At saturation (every event in one upstream write), ${r.plan.connections} connections, ${r.plan.sseSaturateSeconds} s:`);
  s.push('');
  const sseBare = r.sse.find((x) => x.target === 'bare');
  const ssePk = r.sse.find((x) => x.target === 'portkey');
  s.push(
    table(
      ['target', 'streams/s', 'p50 ms', 'p99 ms', 'CPU µs/stream', 'CPU vs bare', 'streams/s vs Portkey', 'peak RSS MB', 'errors'],
      r.sse.map((x) => [x.target, x.rps.toFixed(0), ms(x.latency.p50), ms(x.latency.p99), us(x.cpuPerRequest), sseBare ? ratio(x.cpuPerRequest, sseBare.cpuPerRequest) : 'n/a', ssePk ? ratio(x.rps, ssePk.rps) : 'n/a', mb(x.peakRss), x.failed]),
    ),
  );
  s.push('');
  const dt = r.ttfb.find((t) => t.target === 'direct');
  s.push(`Time to first byte: ${r.plan.ttfbCount} streams one at a time; the upstream sends its first event with the headers and the rest 2 ms apart. TTFB is request sent to first body byte.`);
  s.push('');
  s.push(
    table(
      ['target', 'TTFB p50 ms', 'TTFB p99 ms', 'added p50 ms', 'added p99 ms', 'whole stream p50 ms', 'errors'],
      r.ttfb.map((t) => [t.target, ms(t.ttfb.p50, 3), ms(t.ttfb.p99, 3), dt ? ms(t.ttfb.p50 - dt.ttfb.p50, 3) : 'n/a', dt ? ms(t.ttfb.p99 - dt.ttfb.p99, 3) : 'n/a', ms(t.total.p50, 2), t.failed]),
    ),
  );
  s.push('');
  s.push(`Per-chunk cost: ${r.plan.chunkConcurrency} concurrent streams for ${r.plan.chunkSeconds} s each of 6 and of 25 SSE events, every event its own upstream write 1 ms apart; the cost of one more event is the CPU difference per stream divided by 19.`);
  s.push('');
  const chunkBare = r.chunks.find((c) => c.target === 'bare');
  s.push(
    table(
      ['target', 'CPU µs / 6-event stream', 'CPU µs / 25-event stream', 'CPU µs per extra event', 'vs bare', 'streams (short/long)', 'errors'],
      r.chunks.map((c) => [
        c.target,
        us(c.short.cpuPerStream),
        us(c.long.cpuPerStream),
        us(c.cpuPerExtraEvent),
        chunkBare ? ratio(c.cpuPerExtraEvent, chunkBare.cpuPerExtraEvent) : 'n/a',
        `${c.short.ok}/${c.long.ok}`,
        c.short.failed + c.long.failed,
      ]),
    ),
  );
  s.push('');

  s.push('## Anthropic messages, SSE');
  s.push('');
  if (!r.messages.available) s.push('Not measured in this run (see notes).');
  else {
    const mdt = r.messages.ttfb.find((t) => t.target === 'direct');
    s.push('Pass-through of `POST /api/v1/messages` (`stream: true`) to an anthropic-protocol upstream: time to first byte one stream at a time, then saturation.');
    s.push('');
    s.push(
      table(
        ['target', 'TTFB p50 ms', 'TTFB p99 ms', 'added p50 ms', 'streams/s', 'p99 ms', 'CPU µs/stream', 'errors'],
        r.messages.ttfb.map((t) => {
          const sat = r.messages.saturation.find((x) => x.target === t.target);
          return [t.target, ms(t.ttfb.p50, 3), ms(t.ttfb.p99, 3), mdt ? ms(t.ttfb.p50 - mdt.ttfb.p50, 3) : 'n/a', sat ? sat.rps.toFixed(0) : 'n/a', sat ? ms(sat.latency.p99) : 'n/a', sat ? us(sat.cpuPerRequest) : 'n/a', t.failed + (sat?.failed ?? 0)];
        }),
      ),
    );
  }
  s.push('');

  s.push('## Concurrent slow streams');
  s.push('');
  s.push(`Streams opened over ${(r.plan.concurrentRampMs / 1000).toFixed(0)} s and held together: 25 events each, ${r.plan.concurrentPaceMs} ms apart. "Most open" counts streams past their first byte and not yet ended, as the client saw them.`);
  s.push('');
  s.push(
    table(
      ['target', 'streams', 'completed', 'dropped', 'most open at once', 'RSS before MB', 'peak RSS MB', `peak RSS at ${r.plan.concurrentStreams.toLocaleString('en-US')} MB`, 'KB per stream', 'most fds', 'seconds'],
      r.concurrent.map((c) => [
        c.target,
        c.requested,
        c.ok,
        c.requested - c.ok,
        c.maxOpen,
        mb(c.baseRss),
        mb(c.peakRss),
        c.requested < c.wanted ? `${mb(c.extrapolatedPeakRss)} (extrapolated)` : mb(c.peakRss),
        ((c.peakRss - c.baseRss) / Math.max(1, c.requested) / 1024).toFixed(1),
        c.maxFds,
        c.seconds.toFixed(0),
      ]),
    ),
  );
  const errs = r.concurrent.filter((c) => c.firstError).map((c) => `${c.target}: ${c.firstError}`);
  if (errs.length) s.push('', `First errors: ${errs.join('; ')}`);
  s.push('');

  s.push('## Ledger writer');
  s.push('');
  s.push('End to end: `record()` (one journal append, the request path) for every row, the background writer moving sealed segments into the database (Postgres: three batches in flight; PGlite: one; rows of recent segments handed over from memory, a backlog beyond that read back from its files), until `flush()` returns. Statement alone: `writeUsageBatch` (raw insert + hourly rollup in one statement, the batch as one jsonb parameter) in 2,000-row batches, one at a time.');
  const lpRuns = r.ledger.find((l) => l.runs && l.runs.length > 1);
  if (lpRuns) {
    s.push('');
    s.push(
      `Postgres runs after the gateways' scenarios: first a \`CHECKPOINT\` (their databases' writes), then a wait until the machine is under 10 % busy over half a second (it read ${((lpRuns.busyBefore ?? 0) * 100).toFixed(0)} %), then ${lpRuns.runs!.length} runs, each on a fresh database; the row is the median run (end to end, rows/s: ${lpRuns.runs!.map((x) => x.toFixed(0)).join(', ')}).`,
    );
  }
  s.push('');
  s.push(
    table(
      ['database', 'rows', 'end to end rows/s', 'statement alone rows/s', 'record() µs/row', 'rows stored'],
      r.ledger.map((l) => [l.backend, l.rows.toLocaleString('en-US'), l.endToEnd.toFixed(0), l.statement.toFixed(0), l.recordMicros.toFixed(1), l.stored.toLocaleString('en-US')]),
    ),
  );
  s.push('');

  s.push('## Usage report');
  s.push('');
  if (!r.report) s.push('Not measured in this run (needs Postgres).');
  else {
    const { seed, latency } = r.report;
    s.push(
      `\`bench/seed-ledger.ts\` wrote ${seed.rows.toLocaleString('en-US')} rows (${seed.projects} projects in ${seed.organizations} organizations, ${seed.models} models, evenly over ${seed.from.toISOString()} – ${seed.to.toISOString()}) with generate_series straight into usage_events, then usage_hourly from exactly those rows (${seed.hourlyRows.toLocaleString('en-US')} rollup rows) in ${seed.seconds.toFixed(0)} s (${Object.entries(seed.phases)
        .map(([k, v]) => `${k} ${v.toFixed(0)} s`)
        .join(', ')}). The range is 30 days ending 7 minutes after an hour, so both edges are read from raw rows.`,
    );
    s.push('');
    s.push(
      table(
        ['query', 'requests', 'p50 ms', 'p99 ms', 'max ms', 'requests counted'],
        [
          ['`GET /api/business/v1/customer/usage`, one project, 30 days (HTTP, through the gateway)', latency.project.count, ms(latency.project.p50), ms(latency.project.p99), ms(latency.project.max), latency.projectRows.toLocaleString('en-US')],
          ['organization-wide, whole hours from usage_hourly (SQL directly; there is no organization endpoint)', latency.organization.count, ms(latency.organization.p50), ms(latency.organization.p99), ms(latency.organization.max), latency.organizationRows.toLocaleString('en-US')],
        ],
      ),
    );
  }
  s.push('');

  s.push('## Rate limits and budgets');
  s.push('');
  s.push(renderLimits(r.limits));
  s.push('');

  s.push('## Image edit memory');
  s.push('');
  if (!r.imageEdit) s.push('Not measured in this run (`bench/image-edit-memory.ts` absent).');
  else s.push(`\`bench/image-edit-memory.ts\` (exit ${r.imageEdit.code}):`, '', '```', r.imageEdit.output, '```');
  s.push('');

  if (r.profile) {
    s.push(`## Profile: ${r.profile.target} at saturation`);
    s.push('');
    s.push(`\`node --cpu-prof\` over ${r.profile.seconds} s of JSON load (${r.profile.samples} busy samples; percentages of busy time).`);
    s.push('');
    s.push(table(['self %', 'total %', 'function', 'where'], r.profile.self.slice(0, 20).map((h) => [h.selfPct.toFixed(1), h.totalPct.toFixed(1), `\`${h.name}\``, h.where])));
    s.push('');
    s.push('Inclusive, gateway code only:');
    s.push('');
    s.push(
      table(
        ['total %', 'self %', 'function', 'where'],
        r.profile.inclusive
          .filter((h) => h.where.startsWith('gateway/'))
          .slice(0, 15)
          .map((h) => [h.totalPct.toFixed(1), h.selfPct.toFixed(1), `\`${h.name}\``, h.where]),
      ),
    );
    s.push('');
  }

  if (r.notes.length) {
    s.push('## Notes');
    s.push('');
    for (const n of r.notes) s.push(`- ${n}`);
    s.push('');
  }
  s.push('`npm run bench:smoke` runs every scenario for about a second (and 10,000 seeded rows instead of 10 million) from `.ci/run`; it checks that the harness ran, not how fast.');
  s.push('');
  return s.join('\n');
}

export function renderLimits(l: BenchResults['limits']): string {
  if (l === undefined) return 'Not measured in this run.';
  if ('error' in l) return `\`bench/limits.ts\` failed: ${l.error}`;
  const out: string[] = [];
  if (l.method === 'toggle') {
    out.push(
      `\`bench/limits.ts\` in its own process: the bare floor and tollgate gateways on Postgres, one counting in-process and one in the machine's Redis, every limit far above the load so nothing is refused: what is measured is the cost of counting. Each gateway serves keys in separate organizations, all in one snapshot: one whose key, project and organization carry 13 rules (rpm, tpm and concurrency on each scope, plus month and total budgets on the key and the organization) and one, in the in-process gateway two, without any. Comparing keys inside one process leaves out what used to swamp the figure, the difference between two processes (JIT decisions, heap layout: two identical gateways read up to 18 µs apart), and needs no reload between segments. ${l.rounds} rounds; in each, every key runs a segment of ${(l.warmup ?? 0).toLocaleString('en-US')} unmeasured then ${l.requests.toLocaleString('en-US')} measured requests at concurrency ${l.concurrency} (tens of ms, so the two segments of a pair see the same neighbours), every other round in reverse order. CPU is the gateway's threads' time on a CPU from the scheduler's nanosecond clock (\`/proc/<pid>/task/*/schedstat\`), not 10 ms ticks. "added" is the median over the rounds of (key − unlimited key) in the same round and gateway, with the quartiles of those differences. The control, limits-off-again, is the second unlimited key against the first: its "added" is what the method reads when nothing differs, and a difference smaller than it is not resolved. p99 at ${l.rate} req/s for ${l.rateSeconds} s per key, median over ${l.rateRounds ?? 1} rounds (open loop). Load average ${l.loadBefore.toFixed(1)} before, ${l.loadAfter.toFixed(1)} after.`,
    );
  } else {
    out.push(
      `\`bench/limits.ts\` in its own process, the same way as above: the bare floor and four tollgate gateways on Postgres (limits off; limits off again, the control; limits counted in-process; limits counted in the machine's Redis), every limit far above the load so nothing is refused: what is measured is the cost of counting. ${l.rounds} interleaved rounds of ${l.requests.toLocaleString('en-US')} requests at concurrency ${l.concurrency}, gateway process CPU (user + system from /proc); "added" is the median over the rounds of the difference to limits off in the same round. Load average ${l.loadBefore.toFixed(1)} before, ${l.loadAfter.toFixed(1)} after.`,
    );
  }
  out.push('');
  const quartiles = (t: LimitsTargetRow) => (t.addedQuartilesUs ? ` (${t.addedQuartilesUs[0].toFixed(1)} … ${t.addedQuartilesUs[1].toFixed(1)})` : '');
  const redisCounted = l.targets.some((t) => t.redisServerUs !== undefined);
  out.push(
    table(
      ['target', 'CPU µs / request', 'added vs limits off, µs (quartiles)', ...(redisCounted ? ['Redis server µs / request'] : []), `p99 at ${l.rate} req/s, ms`, 'p99 added, ms'],
      l.targets.map((t) => [t.target, t.cpuUsPerRequest.toFixed(1), t.target === 'limits-off' ? '—' : t.addedVsOffUs.toFixed(1) + quartiles(t), ...(redisCounted ? [t.redisServerUs !== undefined ? t.redisServerUs.toFixed(1) : '—'] : []), t.p99AtRateMs.toFixed(2), t.target === 'limits-off' ? '—' : t.p99AddedVsOffMs.toFixed(2)]),
    ),
  );
  if (redisCounted) {
    out.push('');
    out.push(
      "The Redis server runs on this machine, so its CPU is counted too: all of its threads' time on a CPU (schedstat) over each Redis gateway's segments, lead-in included, per request, paired with the same gateway's unlimited key in the same round (whose requests cost Redis nothing). It is the script that checks and updates the 13 counters; the headline figure for counters in Redis is the gateway's added CPU plus this.",
    );
  }
  if (l.instructions) {
    const i = l.instructions;
    out.push('');
    out.push(
      `Instructions (valgrind callgrind, counting only during each segment): the in-process gateway again, its keys alternated the same way under callgrind, ${i.rounds} rounds of ${i.requests.toLocaleString('en-US')} requests per state. "added" compares instructions other than GC and the optimising compiler (which valgrind's 50× slower clock changes), median over the rounds of (state − off), converted to µs with this run's native CPU per instruction of the "off" state (${(i.usPerInstruction * 1e6).toFixed(1)} µs per million instructions).`,
    );
    out.push('');
    out.push(table(['target', 'instructions / request', 'without GC and compiler', 'added', 'added, µs'], i.targets.map((t) => [t.target, t.instructionsPerRequest.toLocaleString('en-US'), t.restPerRequest.toLocaleString('en-US'), t.target === 'limits-off' ? '—' : t.addedInstructions.toLocaleString('en-US'), t.target === 'limits-off' ? '—' : t.addedUs.toFixed(2)])));
  }
  if (l.redisCallsPerRequest !== undefined) {
    out.push('');
    out.push(`limits-redis sent ${l.redisCallsPerRequest} Redis script calls per request (median over the rounds, from its \`tollgate_limits_redis_calls_total\`): a pod keeps one call in flight, and each call carries the admissions that came since the last one (one operation per rules list) and the settlements queued since, summed, so a request waits for its own call and at most the one ahead of it.`);
  }
  if (l.governorAlone.length) {
    out.push('');
    out.push('The governor alone (no network, in-process counters, its rate-limit headers set on a real fastify reply), CPU per admission + headers + settlement:');
    out.push('');
    out.push(table(['rules on the key', 'µs'], l.governorAlone.map((g) => [g.rules, g.cpuUsPerRequest.toFixed(2)])));
  }
  return out.join('\n');
}
