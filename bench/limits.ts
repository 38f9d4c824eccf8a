// CPU per request of the governor, in one run: what limits add to a gateway's request, counted in-process and in
// Redis (the machine's Redis at 127.0.0.1:6379, own key prefix, removed after), beside the bare proxy floor. Every
// limit is set far above the load so nothing is refused: what is measured is the cost of counting.
// Method, built to resolve a few µs on a shared, noisy 2-core machine:
// - One gateway process serves every state: keys in separate organizations, one with 13 rules (on), two with none
//   (off, off-again), all in the same snapshot. The process-to-process spread of JIT decisions and heap layout (two
//   identical gateways read 18 µs apart) is not in the comparison, and no reload happens between segments.
// - Many short segments: every round runs each key's segment (a short unmeasured lead-in that takes the previous
//   segment's tail of ledger work, then a fixed count of requests), every other round in reverse order. A segment
//   lasts tens of ms, so a pair sees the same neighbours. At load average 6-11 on 2 cores a pair's difference still
//   spreads ±10-20 µs (quartiles); the control's median read -0.4 and -1.2 µs with the in-process gateways alone
//   (150 and 300 rounds) but -8.4 µs with every gateway in the round: read "added" against the control.
// - CPU from the scheduler's nanosecond clock (/proc/<pid>/task/*/schedstat, all threads), not 10 ms ticks.
// - "added" is the median over the rounds of (state − off) in the same round, with its quartiles; the control is
//   off-again − off, the method's own noise.
// - Instruction counts (--instr-requests, off by default): the same alternation under valgrind callgrind, GC and
//   compiler instructions left out, converted to µs with this run's native CPU per instruction of the "off" key.
//   Here they did not resolve µs: under valgrind the ledger's and telemetry's timer-driven work per request follows
//   valgrind's speed, and segments of 300 requests read 510k to 910k instructions per request for the same key.
// The last line of output is the result as JSON after a marker (`npm run bench` reads it; bench/limits-result.ts).
//   node bench/limits.ts [--requests 200] [--warmup 20] [--rounds 150] [--concurrency 32] [--rate 1000]
//     [--rate-seconds 5] [--rate-rounds 3] [--rules all|one] [--baseline DIR]   (another checkout: its in-process and
//     Redis gateways measured in the same rounds, rows limits-*-baseline; each row's "added" is against its own gateway's "off")
//     [--instr-requests 0] [--instr-rounds 6] [--instr-warmup 100]
//   profiling: [--only alone,bare,limits-in-process,limits-redis] [--cpu-prof <dir>]
import { randomUUID } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';
import Fastify from 'fastify';
import type { FastifyReply } from 'fastify';
import { generateApiKey } from '../gateway/auth/api-key.ts';
import { Governor } from '../gateway/governance/governor.ts';
import type { GovernedCall, Ticket } from '../gateway/governance/governor.ts';
import { MemoryBackend } from '../gateway/governance/memory-backend.ts';
import type { LedgerRow } from '../gateway/ledger/row.ts';
import { compileSnapshot } from '../gateway/snapshot/runtime.ts';
import { snapshotSchema } from '../gateway/snapshot/schema.ts';
import type { LimitsResult, LimitsTargetRow } from './benchmarks-doc.ts';
import { RESULT_MARK } from './limits-result.ts';
import { createBenchDatabase, DEFAULT_POSTGRES_URL } from './databases.ts';
import type { BenchDatabase } from './databases.ts';
import { rest, split } from './callgrind-split.ts';
import type { Count } from './callgrind-split.ts';
import { chatBody, closedLoop, paced } from './load.ts';
import type { Target } from './load.ts';
import { median, quantile } from './stats.ts';
import { cpuSecondsFine, freePort, spawnServer } from './proc.ts';
import type { ServerProc } from './proc.ts';
import { benchConfig, GATEWAY_NODE_OPTIONS, startBare, startUpstream } from './targets.ts';
import type { Running } from './targets.ts';
import { deleteRedisPrefix, localRedisPid } from './redis-keys.ts';

const { values } = parseArgs({
  options: {
    requests: { type: 'string', default: '200' },
    warmup: { type: 'string', default: '20' },
    concurrency: { type: 'string', default: '32' },
    rounds: { type: 'string', default: '150' },
    rate: { type: 'string', default: '1000' },
    'rate-seconds': { type: 'string', default: '5' },
    'rate-rounds': { type: 'string', default: '3' },
    redis: { type: 'string', default: 'redis://127.0.0.1:6379' },
    // Redis keys are made under this prefix plus a fresh id, and removed at the end.
    'redis-prefix': { type: 'string', default: 'tollgate-bench:' },
    // Another checkout of tollgate (e.g. `git archive` of main): its gateways are measured the same way, in the same rounds.
    baseline: { type: 'string' },
    // Profiling: only these targets (comma-separated: alone, bare, limits-in-process, limits-redis), and a V8 CPU profile of each gateway into this directory.
    only: { type: 'string' },
    // Which limits the governed key has: all (13 rules on three scopes, the default) or one (the key's rpm).
    rules: { type: 'string', default: 'all' },
    // Leave out the control ("off" against "off again" in the in-process gateway).
    'no-control': { type: 'boolean', default: false },
    'cpu-prof': { type: 'string' },
    // Instruction counts (valgrind callgrind), which a busy machine does not move: the in-process gateway (and the
    // baseline's) under callgrind, the keys alternated the same way, this many requests per segment (0: not run).
    'instr-requests': { type: 'string', default: '0' },
    'instr-rounds': { type: 'string', default: '6' },
    'instr-warmup': { type: 'string', default: '100' },
  },
});
const concurrency = Number(values.concurrency);
const prefix = `${values['redis-prefix']}${randomUUID()}:`;
const dbs: BenchDatabase[] = [];
const HIGH = { rpm: 1_000_000_000, tpm: 1_000_000_000, concurrency: 1_000_000 };
const BUDGET = { month: '1000000000', total: '1000000000' };

const only = values.only?.split(',');
const wanted = (name: string) => only === undefined || only.includes(name);
function nodeOptions(name: string): string {
  const dir = values['cpu-prof'];
  return dir ? `${GATEWAY_NODE_OPTIONS} --cpu-prof --cpu-prof-dir=${dir} --cpu-prof-name=${name}.cpuprofile` : GATEWAY_NODE_OPTIONS;
}

interface Gateway {
  name: string;
  running: Running;
  admin: string;
  /** The states measured, in round order; the first is "off", the one the others are compared to. */
  states: State[];
  /** Each state's key: the same gateway, the same snapshot, a key with or without limits. */
  targets: Record<State, Target>;
}
type State = 'off' | 'off-again' | 'on';

/**
 * A gateway with three keys, each in its own organization and project: "on" has limits on the key, its project and
 * its organization; "off" and "off-again" have none. Names are all four characters, so logs and ledger rows weigh
 * the same whichever key sends.
 */
async function startGateway(name: string, upstreamUrl: string, states: State[], opts: { env?: Record<string, string>; root?: string; wrapper?: string[] } = {}): Promise<Gateway> {
  const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-bench-limits-'));
  const owners: Record<State, string> = { on: 'govd', off: 'offa', 'off-again': 'offb' };
  const keys = Object.fromEntries(states.map((s) => [s, { ...generateApiKey(), organization: owners[s], project: owners[s] }])) as Record<State, ReturnType<typeof generateApiKey> & { organization: string; project: string }>;
  const config = benchConfig(upstreamUrl, states.map((s) => keys[s]));
  const one = values.rules === 'one';
  config.apiKeys = config.apiKeys!.map((k) => (k.organization === owners.on ? { ...k, limits: one ? { rpm: HIGH.rpm } : HIGH, ...(one ? {} : { budget: BUDGET }) } : k));
  config.organizations = config.organizations!.map((o) => (o.id === owners.on && !one ? { ...o, limits: HIGH, budget: BUDGET, projects: [{ id: owners.on, limits: HIGH }] } : o));
  const configPath = join(dataDir, 'tollgate.json');
  writeFileSync(configPath, JSON.stringify(config));
  // Postgres (one database each): the ledger is the same for all, and starts fast on a busy machine.
  const db = await createBenchDatabase(DEFAULT_POSTGRES_URL, name.replaceAll('-', '_'));
  dbs.push(db);
  const port = await freePort();
  const adminPort = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const proc: ServerProc = await spawnServer({
    name,
    args: [join(opts.root ?? '.', 'bin/tollgate.js'), 'start', '--config', configPath, '--port', String(port), '--host', '127.0.0.1'],
    env: { TOLLGATE_DATA_DIR: dataDir, DATABASE_URL: db.url, LOG_LEVEL: 'warn', NODE_OPTIONS: nodeOptions(name), TOLLGATE_ADMIN_PORT: String(adminPort), TOLLGATE_ADMIN_HOST: '127.0.0.1', ...opts.env },
    readyUrl: `${url}/healthz`,
    url,
    timeoutMs: opts.wrapper ? 1_200_000 : 60_000,
    wrapper: opts.wrapper,
  });
  const target = (s: State): Target => ({ name: `${name}/${s}`, origin: url, chatPath: '/api/v1/chat/completions', headers: { authorization: `Bearer ${keys[s].key}` }, pid: proc.pid, messagesPath: '/api/v1/messages', messagesHeaders: {} });
  const targets = Object.fromEntries(states.map((s) => [s, target(s)])) as Record<State, Target>;
  // One request per key: the governed one answers with rate-limit headers, the others without.
  for (const s of states) {
    const t = targets[s];
    const res = await fetch(t.origin + t.chatPath, { method: 'POST', headers: { 'content-type': 'application/json', ...t.headers }, body: chatBody() });
    await res.arrayBuffer();
    if (res.status !== 200 || res.headers.has('x-ratelimit-limit-requests') !== (s === 'on')) throw new Error(`${name}: key ${s}: status ${res.status}, rate-limit headers ${res.headers.has('x-ratelimit-limit-requests')}`);
  }
  const running: Running = {
    proc,
    target: targets.off,
    close: async () => {
      await proc.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  return { name, running, admin: `http://127.0.0.1:${adminPort}`, states, targets };
}

/** The gateway's count of Redis script calls, from its /metrics. */
async function redisCalls(admin: string): Promise<number> {
  const text = await (await fetch(`${admin}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith('tollgate_limits_redis_calls_total'));
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : 0;
}

// One connection pool per target for the whole run: segments are short, and connection setup is not what is measured.
const pools = new Map<string, Pool>();
function poolOf(t: Target): Pool {
  let p = pools.get(t.name);
  if (p === undefined) pools.set(t.name, (p = new Pool(t.origin, { connections: concurrency, pipelining: 1 })));
  return p;
}

/** CPU seconds per request over `n` closed-loop requests after a lead-in of `warmup`. */
async function segment(t: Target, body: string, n: number, warmup: number): Promise<number> {
  if (warmup > 0 && (await closedLoop(t, body, warmup, concurrency, poolOf(t))) > 0) throw new Error(`${t.name}: warm-up requests failed`);
  const cpu0 = cpuSecondsFine(t.pid);
  const failed = await closedLoop(t, body, n, concurrency, poolOf(t));
  const cpu = cpuSecondsFine(t.pid) - cpu0;
  if (failed > 0) throw new Error(`${t.name}: ${failed} of ${n} requests failed`);
  return cpu / n;
}

/**
 * A real fastify reply (of an injected request) for the governor to set its headers on, as in the gateway; Node
 * validates them later in writeHead with the answer's other headers, which the whole-gateway figures count.
 */
async function realReply(): Promise<{ reply: FastifyReply }> {
  const app = Fastify();
  let captured: FastifyReply | undefined;
  app.get('/', (_req, reply) => {
    captured = reply;
    return 'ok';
  });
  const res = await app.inject('/');
  await app.close();
  if (captured === undefined) throw new Error(`no reply captured: ${res.statusCode} ${res.body}`);
  // Wrapped: a fastify reply is thenable, and awaiting it would wait for the (finished) answer instead.
  return { reply: captured };
}

/** The governor alone (no network): CPU per admission + headers + settlement, the part of the in-process figure that is ours. */
async function governorAlone(): Promise<{ rules: string; cpuUsPerRequest: number }[]> {
  const k = generateApiKey();
  const out: { rules: string; cpuUsPerRequest: number }[] = [];
  for (const [label, keyExtra, orgExtra] of [
    ['none', {}, {}],
    ['key rpm', { limits: { rpm: HIGH.rpm } }, {}],
    ['3 scopes x rpm/tpm/concurrency + 4 budgets', { limits: HIGH, budget: BUDGET }, { limits: HIGH, budget: BUDGET, projects: [{ id: 'p', limits: HIGH }] }],
  ] as const) {
    const s = compileSnapshot(
      snapshotSchema.parse({
        providers: [{ id: 'p', baseUrl: 'http://127.0.0.1:9/v1' }],
        pricingGroups: [{ id: 'g', mode: 'flat_tokens', prices: { input: '0.15', output: '0.6' } }],
        models: [{ id: 'm', pricingGroup: 'g', protocols: { openai: [{ provider: 'p', model: 'a' }] } }],
        organizations: [{ id: 'o', models: ['*'], ...orgExtra }],
        apiKeys: [{ id: 'k', hash: k.hash, prefix: k.prefix, organization: 'o', project: 'p', ...keyExtra }],
      }),
    );
    const model = s.byName.get('m')!;
    const call: GovernedCall = { requestId: 'r', key: s.keysByHash.get(k.hash)!, model, family: 'chat', billing: 'text', requestBytes: 300, targets: model.protocols.openai! };
    const { reply } = await realReply();
    const row = { input: 20, output: 30, cacheRead: 0, cacheWrite: 0, costPoints: '0.0000213' } as LedgerRow;
    const g = new Governor({ backend: new MemoryBackend() });
    const n = 200_000;
    const runs: number[] = [];
    for (let pass = 0; pass < 3; pass++) {
      const c0 = process.cpuUsage();
      for (let i = 0; i < n; i++) {
        const t = g.admit(call, reply) as Ticket | undefined;
        if (t) {
          t.charged(row);
          t.finish();
        }
      }
      const c = process.cpuUsage(c0);
      runs.push((c.user + c.system) / n);
    }
    out.push({ rules: label, cpuUsPerRequest: +median(runs).toFixed(2) });
  }
  return out;
}
/** Instructions per request of `n` requests, split (callgrind-split.ts): counting on only for them, then dumped. */
async function countedSegment(t: Target, body: string, n: number, warmup: number): Promise<Count> {
  if (warmup > 0 && (await closedLoop(t, body, warmup, concurrency, poolOf(t))) > 0) throw new Error(`${t.name}: warm-up requests failed`);
  const mine = () => new Set(readdirSync(instrDir).filter((f) => f.includes(`.${t.pid}`)));
  const before = mine();
  execFileSync('callgrind_control', ['-i', 'on', String(t.pid)], { stdio: 'ignore' });
  const failed = await closedLoop(t, body, n, concurrency, poolOf(t));
  execFileSync('callgrind_control', ['-i', 'off', String(t.pid)], { stdio: 'ignore' });
  // A dump zeroes the counters: each segment's dump holds that segment only.
  execFileSync('callgrind_control', ['-d', String(t.pid)], { stdio: 'ignore' });
  if (failed > 0) throw new Error(`${t.name}: ${failed} of ${n} requests failed`);
  const file = [...mine()].find((f) => !before.has(f));
  if (file === undefined) throw new Error(`${t.name}: no callgrind dump`);
  const total = Number(/^totals: (\d+)/m.exec(readFileSync(join(instrDir, file), 'utf8'))?.[1] ?? NaN);
  const parts = split(join(instrDir, file));
  return { total: total / n, majorGc: parts.majorGc / n, otherGc: parts.otherGc / n, compiler: parts.compiler / n };
}
// Made only when instructions are counted (and removed at the end).
const instrDir = Number(values['instr-requests']) > 0 ? mkdtempSync(join(tmpdir(), 'tollgate-limits-callgrind-')) : '';
const callgrind = (name: string) => ['valgrind', '--tool=callgrind', '--instr-atstart=no', `--callgrind-out-file=${join(instrDir, name)}.%p`, '--dump-instr=no'];

const loadBefore = loadavg()[0];
const alone = wanted('alone') ? await governorAlone() : [];
console.log('governor alone, in-process, µs CPU per admission + rate-limit headers + settlement:');
console.table(alone);

const up = await startUpstream();
let bare: Running | undefined;
const gateways: Gateway[] = [];
try {
  if (wanted('bare')) bare = await startBare(up.target.origin);
  if (wanted('limits-in-process')) gateways.push(await startGateway('limits-in-process', up.target.origin, values['no-control'] ? ['off', 'on'] : ['off', 'off-again', 'on']));
  if (values.baseline && wanted('limits-in-process')) gateways.push(await startGateway('limits-in-process-baseline', up.target.origin, ['off', 'on'], { root: values.baseline }));
  if (wanted('limits-redis')) gateways.push(await startGateway('limits-redis', up.target.origin, ['off', 'on'], { env: { REDIS_URL: values.redis, TOLLGATE_REDIS_PREFIX: prefix } }));
  // Its own counters (a sub-prefix): the two gateways must not count each other's requests.
  if (values.baseline && wanted('limits-redis')) gateways.push(await startGateway('limits-redis-baseline', up.target.origin, ['off', 'on'], { root: values.baseline, env: { REDIS_URL: values.redis, TOLLGATE_REDIS_PREFIX: `${prefix}base:` } }));
  const body = chatBody();
  const requests = Number(values.requests);
  const warmup = Number(values.warmup);
  const rounds = Number(values.rounds);
  // Per gateway and state (and the bare floor): CPU per request of each round's segment.
  const cpu = new Map<string, number[]>();
  const push = (m: Map<string, number[]>, k: string, v: number) => m.set(k, [...(m.get(k) ?? []), v]);
  // The Redis server's CPU in each Redis gateway's segments (it does the counting's other half), when it runs here.
  const redisPid = gateways.some((g) => g.name.startsWith('limits-redis')) ? await localRedisPid(values.redis) : undefined;
  const redisCpu = new Map<string, number[]>();
  const callsPerRequest: number[] = [];
  const baseCallsPerRequest: number[] = [];
  for (const g of gateways) for (const state of g.states) await segment(g.targets[state], body, 0, 1000); // first warm-up: every path compiled
  for (let round = 0; round < rounds; round++) {
    const rev = round % 2 === 1;
    const order = rev ? [...gateways].reverse() : gateways;
    if (bare && !rev) push(cpu, 'bare', await segment(bare.target, body, requests, warmup));
    for (const g of order) {
      for (const state of rev ? [...g.states].reverse() : g.states) {
        const redis = g.name.startsWith('limits-redis') && state === 'on';
        const c0 = redis ? await redisCalls(g.admin) : 0;
        const counted = redisPid !== undefined && g.name.startsWith('limits-redis');
        const r0 = counted ? cpuSecondsFine(redisPid) : 0;
        push(cpu, `${g.name}/${state}`, await segment(g.targets[state], body, requests, warmup));
        // Over the whole segment, its lead-in too (the same requests): per request of both.
        if (counted) push(redisCpu, `${g.name}/${state}`, (cpuSecondsFine(redisPid) - r0) / (requests + warmup));
        if (redis && g.name === 'limits-redis') callsPerRequest.push(((await redisCalls(g.admin)) - c0) / requests);
        else if (redis) baseCallsPerRequest.push(((await redisCalls(g.admin)) - c0) / requests);
      }
    }
    if (bare && rev) push(cpu, 'bare', await segment(bare.target, body, requests, warmup));
  }
  // p99 at a fixed rate: fewer rounds (each segment lasts --rate-seconds), same alternation.
  const p99 = new Map<string, number[]>();
  const pacedP99 = async (t: Target) => (await paced(t, body, { rate: Number(values.rate), seconds: Number(values['rate-seconds']) })).latency.p99;
  for (let round = 0; round < Number(values['rate-rounds']); round++) {
    const rev = round % 2 === 1;
    if (bare) push(p99, 'bare', await pacedP99(bare.target));
    for (const g of rev ? [...gateways].reverse() : gateways) {
      for (const state of rev ? [...g.states].reverse() : g.states) {
        push(p99, `${g.name}/${state}`, await pacedP99(g.targets[state]));
      }
    }
  }
  // Paired per round with the same gateway's "off" segment of that round (the bare floor: with the in-process gateway's).
  const med = (xs: number[]) => (xs.length ? median(xs) : NaN);
  const pairedWith = (m: Map<string, number[]>, key: string, off: string) => {
    const a = m.get(key) ?? [];
    const b = m.get(off) ?? [];
    return a.map((x, i) => x - b[i]).filter(Number.isFinite);
  };
  const row = (target: string, key: string, off: string): LimitsTargetRow => {
    const d = pairedWith(cpu, key, off).map((x) => x * 1e6);
    return {
      target,
      cpuUsPerRequest: +(med(cpu.get(key) ?? []) * 1e6).toFixed(2),
      addedVsOffUs: +med(d).toFixed(2),
      addedQuartilesUs: [+quantile(d, 0.25).toFixed(2), +quantile(d, 0.75).toFixed(2)],
      p99AtRateMs: +med(p99.get(key) ?? []).toFixed(2),
      p99AddedVsOffMs: +med(pairedWith(p99, key, off)).toFixed(2),
      ...(redisCpu.has(key) ? { redisServerUs: +(med(pairedWith(redisCpu, key, off)) * 1e6).toFixed(2) } : {}),
    };
  };
  const rows: LimitsTargetRow[] = [];
  for (const [k, v] of cpu) console.log(`${k}: ${v.map((x) => (x * 1e6).toFixed(1)).join(' ')} µs`);
  const off = 'limits-in-process/off';
  if (bare) rows.push(row('bare', 'bare', off));
  for (const g of gateways) {
    if (g.name === 'limits-in-process') {
      rows.push(row('limits-off', off, off));
      if (g.states.includes('off-again')) rows.push(row('limits-off-again', 'limits-in-process/off-again', off));
      rows.push(row('limits-in-process', 'limits-in-process/on', off));
    } else rows.push(row(g.name, `${g.name}/on`, `${g.name}/off`));
  }
  // Instructions: the in-process gateway (and the baseline's) again, under callgrind, keys alternated the same way. Converted
  // to µs with this run's native CPU per instruction of the "off" state (native µs per request / instructions per request).
  let instructions: LimitsResult['instructions'];
  const instrRequests = Number(values['instr-requests']);
  if (instrRequests > 0 && gateways.some((g) => g.name.startsWith('limits-in-process'))) {
    for (const g of gateways) await g.running.close();
    gateways.length = 0;
    const counted: Gateway[] = [await startGateway('instr', up.target.origin, ['off', 'off-again', 'on'], { wrapper: callgrind('instr') })];
    if (values.baseline) counted.push(await startGateway('instr-baseline', up.target.origin, ['off', 'on'], { root: values.baseline, wrapper: callgrind('instr-baseline') }));
    gateways.push(...counted);
    const counts = new Map<string, Count[]>();
    // V8 compiles every path before anything is counted.
    for (const g of counted) for (const state of g.states) await closedLoop(g.targets[state], body, 3 * Number(values['instr-warmup']), concurrency, poolOf(g.targets[state]));
    for (let round = 0; round < Number(values['instr-rounds']); round++) {
      const rev = round % 2 === 1;
      for (const g of rev ? [...counted].reverse() : counted) {
        for (const state of rev ? [...g.states].reverse() : g.states) {
          const c = await countedSegment(g.targets[state], body, instrRequests, Number(values['instr-warmup']));
          counts.set(`${g.name}/${state}`, [...(counts.get(`${g.name}/${state}`) ?? []), c]);
          console.log(`${g.name}/${state}: ${(c.total / 1000).toFixed(1)}k instructions/request, rest ${(rest(c) / 1000).toFixed(1)}k`);
        }
      }
    }
    const usPerInstruction = (med(cpu.get(off) ?? []) * 1e6) / med((counts.get('instr/off') ?? []).map((c) => c.total));
    const instrRow = (target: string, key: string, offKey: string) => {
      const d = (counts.get(key) ?? []).map((c, i) => rest(c) - rest(counts.get(offKey)![i]));
      const added = med(d);
      return { target, instructionsPerRequest: Math.round(med((counts.get(key) ?? []).map((c) => c.total))), restPerRequest: Math.round(med((counts.get(key) ?? []).map(rest))), addedInstructions: Math.round(added), addedUs: +(added * usPerInstruction).toFixed(2) };
    };
    const rowsI = [instrRow('limits-off', 'instr/off', 'instr/off'), instrRow('limits-off-again', 'instr/off-again', 'instr/off'), instrRow('limits-in-process', 'instr/on', 'instr/off')];
    if (values.baseline) rowsI.push(instrRow('limits-in-process-baseline', 'instr-baseline/on', 'instr-baseline/off'));
    instructions = { requests: instrRequests, rounds: Number(values['instr-rounds']), usPerInstruction: +usPerInstruction.toExponential(3), targets: rowsI };
    console.log(`instructions per request (callgrind, ${instrRequests} requests per segment x ${values['instr-rounds']} rounds); µs per instruction from this run's native "off": ${usPerInstruction.toExponential(3)}`);
    console.table(rowsI);
  }
  const result: LimitsResult = {
    requests,
    warmup,
    rounds,
    concurrency,
    rate: Number(values.rate),
    rateSeconds: Number(values['rate-seconds']),
    rateRounds: Number(values['rate-rounds']),
    method: 'toggle',
    loadBefore,
    loadAfter: loadavg()[0],
    governorAlone: alone,
    targets: rows,
    ...(instructions ? { instructions } : {}),
    ...(callsPerRequest.length ? { redisCallsPerRequest: +median(callsPerRequest).toFixed(3) } : {}),
  };
  console.log(`${requests} requests (after ${warmup} warm-up) per segment x ${rounds} rounds, concurrency ${concurrency}; p99 at ${values.rate} req/s for ${values['rate-seconds']} s x ${values['rate-rounds']} rounds; load average ${loadBefore.toFixed(1)} → ${result.loadAfter.toFixed(1)}`);
  console.table(rows.map((r) => ({ ...r, addedQuartilesUs: r.addedQuartilesUs?.join(' … ') })));
  if (result.redisCallsPerRequest !== undefined) console.log(`Redis script calls per request (closed loop, concurrency ${concurrency}): ${result.redisCallsPerRequest}`);
  if (baseCallsPerRequest.length) console.log(`baseline: ${+median(baseCallsPerRequest).toFixed(3)}`);
  console.log(`${RESULT_MARK}${JSON.stringify(result)}`);
} finally {
  for (const p of pools.values()) await p.close();
  await bare?.close();
  for (const g of gateways) await g.running.close();
  await up.close();
  for (const db of dbs) await db.drop();
  await deleteRedisPrefix(values.redis, prefix);
  if (instrDir) rmSync(instrDir, { recursive: true, force: true });
}
