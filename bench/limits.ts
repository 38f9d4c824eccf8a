// CPU per request of the governor, in one run: what turning limits on adds to a gateway, counted in-process and in
// Redis (the machine's Redis at 127.0.0.1:6379, own key prefix, removed after), beside the bare proxy floor. Every
// limit is set far above the load so nothing is refused: what is measured is the cost of counting.
// Method, built to resolve a few µs on a shared, noisy 2-core machine:
// - Limits are switched on and off inside the SAME gateway process (admin API PATCHes on the organization, project
//   and key; the admin API answers once the new snapshot is live), so the process-to-process spread of JIT decisions
//   and heap layout, which read 18 µs between two identical gateways, is not in the comparison.
// - Many short segments: every round visits each state of each gateway (limits off, off again, on), every other
//   round in reverse order; each segment is a warm-up after the switch, then a fixed count of requests.
// - CPU from the scheduler's nanosecond clock (/proc/<pid>/task/*/schedstat, all threads), not 10 ms ticks.
// - "added" is the median over the rounds of (state − off) in the same round, with its quartiles.
// - The control: the in-process gateway also switches between two "off" configurations that differ only in the key's
//   name; its "added" is the method's own noise floor.
// The last line of output is the result as JSON after a marker (`npm run bench` reads it; bench/limits-result.ts).
//   node bench/limits.ts [--requests 2000] [--warmup 500] [--rounds 15] [--concurrency 32] [--rate 1000]
//     [--rate-seconds 5] [--rate-rounds 3] [--rules all|one] [--baseline DIR]   (another checkout, in-process only)
//   profiling: [--only alone,bare,limits-in-process,limits-redis] [--cpu-prof <dir>]
import { randomUUID } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { IncomingMessage, ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
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

const { values } = parseArgs({
  options: {
    requests: { type: 'string', default: '2000' },
    warmup: { type: 'string', default: '500' },
    concurrency: { type: 'string', default: '32' },
    rounds: { type: 'string', default: '15' },
    rate: { type: 'string', default: '1000' },
    'rate-seconds': { type: 'string', default: '5' },
    'rate-rounds': { type: 'string', default: '3' },
    redis: { type: 'string', default: 'redis://127.0.0.1:6379' },
    // Redis keys are made under this prefix plus a fresh id, and removed at the end.
    'redis-prefix': { type: 'string', default: 'tollgate-bench:' },
    // Another checkout of tollgate (e.g. `git archive` of main): its gateway is measured the same way, in-process only.
    baseline: { type: 'string' },
    // Profiling: only these targets (comma-separated: alone, bare, limits-in-process, limits-redis), and a V8 CPU profile of each gateway into this directory.
    only: { type: 'string' },
    // Which limits the governed key has: all (13 rules on three scopes, the default) or one (the key's rpm).
    rules: { type: 'string', default: 'all' },
    // Leave out the control ("off" against "off again" in the in-process gateway).
    'no-control': { type: 'boolean', default: false },
    'cpu-prof': { type: 'string' },
    // Instruction counts (valgrind callgrind), which a busy machine does not move: the in-process gateway (and the
    // baseline's) toggled the same way under callgrind, in rounds of this many requests per state (0: not run).
    'instr-requests': { type: 'string', default: '0' },
    'instr-rounds': { type: 'string', default: '2' },
    'instr-warmup': { type: 'string', default: '500' },
  },
});
const concurrency = Number(values.concurrency);
const prefix = `${values['redis-prefix']}${randomUUID()}:`;
const ADMIN_TOKEN = randomUUID() + randomUUID();
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
  current?: State;
  /** Runs under valgrind (~50× slower): waits longer for the file watcher's reload after a switch. */
  slow: boolean;
}
type State = 'off' | 'off-again' | 'on';

async function startGateway(name: string, upstreamUrl: string, states: State[], opts: { env?: Record<string, string>; root?: string; wrapper?: string[] } = {}): Promise<Gateway> {
  const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-bench-limits-'));
  const k = { ...generateApiKey(), organization: 'bench', project: 'bench' };
  const configPath = join(dataDir, 'tollgate.json');
  writeFileSync(configPath, JSON.stringify(benchConfig(upstreamUrl, [k])));
  // Postgres (one database each): the ledger is the same for all, and starts fast on a busy machine.
  const db = await createBenchDatabase(DEFAULT_POSTGRES_URL, name.replaceAll('-', '_'));
  dbs.push(db);
  const port = await freePort();
  const adminPort = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const proc: ServerProc = await spawnServer({
    name,
    args: [join(opts.root ?? '.', 'bin/tollgate.js'), 'start', '--config', configPath, '--port', String(port), '--host', '127.0.0.1'],
    env: {
      TOLLGATE_DATA_DIR: dataDir,
      DATABASE_URL: db.url,
      LOG_LEVEL: 'warn',
      NODE_OPTIONS: nodeOptions(name),
      TOLLGATE_ADMIN_PORT: String(adminPort),
      TOLLGATE_ADMIN_HOST: '127.0.0.1',
      TOLLGATE_ADMIN_TOKENS: `bench:write:${ADMIN_TOKEN}`,
      ...opts.env,
    },
    readyUrl: `${url}/healthz`,
    url,
    timeoutMs: opts.wrapper ? 1_200_000 : 60_000,
    wrapper: opts.wrapper,
  });
  const running: Running = {
    proc,
    target: { name, origin: url, chatPath: '/api/v1/chat/completions', headers: { authorization: `Bearer ${k.key}` }, pid: proc.pid, messagesPath: '/api/v1/messages', messagesHeaders: {} },
    close: async () => {
      await proc.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  return { name, running, admin: `http://127.0.0.1:${adminPort}`, states, slow: opts.wrapper !== undefined };
}

async function patch(g: Gateway, path: string, body: object): Promise<void> {
  const res = await fetch(`${g.admin}/admin/v1/${path}`, { method: 'PATCH', headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  if (!res.ok) throw new Error(`${g.name}: PATCH ${path}: ${res.status} ${await res.text()}`);
}

/**
 * Puts the gateway in `state` with the same three admin writes whatever the state (organization, project, key), and
 * checks on one request that the live snapshot is the one asked for (rate-limit headers present or not).
 */
async function switchTo(g: Gateway, state: State): Promise<void> {
  if (g.current === state) return;
  const on = state === 'on';
  const one = values.rules === 'one';
  await patch(g, 'organizations/bench', { limits: on && !one ? HIGH : null, budget: on && !one ? BUDGET : null });
  await patch(g, 'projects/bench/bench', { limits: on && !one ? HIGH : null });
  // The key's name is all that tells "off" from "off again": a new snapshot either way, nothing on the request path.
  await patch(g, 'keys/bench-0', { name: state, limits: on ? (one ? { rpm: HIGH.rpm } : HIGH) : null, budget: on && !one ? BUDGET : null });
  // The file watcher sees the admin API's own rename 50 ms later and reloads (same version, nothing changes): let it pass.
  await new Promise((r) => setTimeout(r, g.slow ? 3000 : 200));
  const t = g.running.target;
  const res = await fetch(t.origin + t.chatPath, { method: 'POST', headers: { 'content-type': 'application/json', ...t.headers }, body: chatBody() });
  await res.arrayBuffer();
  if (res.status !== 200 || res.headers.has('x-ratelimit-limit-requests') !== on) throw new Error(`${g.name}: after switching to ${state}: status ${res.status}, rate-limit headers ${res.headers.has('x-ratelimit-limit-requests')}`);
  g.current = state;
}

/** The gateway's count of Redis script calls, from its /metrics. */
async function redisCalls(admin: string): Promise<number> {
  const text = await (await fetch(`${admin}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith('tollgate_limits_redis_calls_total'));
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : 0;
}

/** CPU seconds per request over `n` closed-loop requests after a warm-up of `warmup`. */
async function segment(t: Target, body: string, n: number, warmup: number): Promise<number> {
  if (warmup > 0 && (await closedLoop(t, body, warmup, concurrency)) > 0) throw new Error(`${t.name}: warm-up requests failed`);
  const cpu0 = cpuSecondsFine(t.pid);
  const failed = await closedLoop(t, body, n, concurrency);
  const cpu = cpuSecondsFine(t.pid) - cpu0;
  if (failed > 0) throw new Error(`${t.name}: ${failed} of ${n} requests failed`);
  return cpu / n;
}

/** The governor alone (no network): CPU per admission + headers + settlement, the part of the in-process figure that is ours. */
function governorAlone(): { rules: string; cpuUsPerRequest: number }[] {
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
    // A real response: the rate-limit headers are validated and stored the way Node does for every answer.
    const reply = { raw: new ServerResponse(new IncomingMessage(new Socket())) } as unknown as FastifyReply;
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
async function countedSegment(g: Gateway, body: string, n: number, warmup: number): Promise<Count> {
  const t = g.running.target;
  if (warmup > 0 && (await closedLoop(t, body, warmup, 16)) > 0) throw new Error(`${t.name}: warm-up requests failed`);
  const mine = () => new Set(readdirSync(instrDir).filter((f) => f.startsWith(`${t.name}.${t.pid}`)));
  const before = mine();
  execFileSync('callgrind_control', ['-i', 'on', String(t.pid)], { stdio: 'ignore' });
  const failed = await closedLoop(t, body, n, 16);
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
const instrDir = mkdtempSync(join(tmpdir(), 'tollgate-limits-callgrind-'));
const callgrind = (name: string) => ['valgrind', '--tool=callgrind', '--instr-atstart=no', `--callgrind-out-file=${join(instrDir, name)}.%p`, '--dump-instr=no'];

const loadBefore = loadavg()[0];
const alone = wanted('alone') ? governorAlone() : [];
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
  const body = chatBody();
  const requests = Number(values.requests);
  const warmup = Number(values.warmup);
  const rounds = Number(values.rounds);
  // Per gateway and state (and the bare floor): CPU per request of each round's segment.
  const cpu = new Map<string, number[]>();
  const push = (m: Map<string, number[]>, k: string, v: number) => m.set(k, [...(m.get(k) ?? []), v]);
  const callsPerRequest: number[] = [];
  for (const g of gateways) {
    await switchTo(g, 'on');
    await segment(g.running.target, body, 0, 2000); // first warm-up: JIT the governed path as well
  }
  for (let round = 0; round < rounds; round++) {
    const rev = round % 2 === 1;
    const order = rev ? [...gateways].reverse() : gateways;
    if (bare && !rev) push(cpu, 'bare', await segment(bare.target, body, requests, warmup));
    for (const g of order) {
      for (const state of rev ? [...g.states].reverse() : g.states) {
        await switchTo(g, state);
        const redis = g.name === 'limits-redis' && state === 'on';
        const c0 = redis ? await redisCalls(g.admin) : 0;
        push(cpu, `${g.name}/${state}`, await segment(g.running.target, body, requests, warmup));
        if (redis) callsPerRequest.push(((await redisCalls(g.admin)) - c0) / requests);
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
        await switchTo(g, state);
        await segment(g.running.target, body, 0, warmup);
        push(p99, `${g.name}/${state}`, await pacedP99(g.running.target));
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
  // Instructions: the in-process gateway (and the baseline's) again, under callgrind, toggled the same way. Converted
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
    for (const g of counted) {
      await switchTo(g, 'on');
      await closedLoop(g.running.target, body, 6 * Number(values['instr-warmup']), 16); // V8 compiles the governed path before anything is counted
    }
    for (let round = 0; round < Number(values['instr-rounds']); round++) {
      const rev = round % 2 === 1;
      for (const g of rev ? [...counted].reverse() : counted) {
        for (const state of rev ? [...g.states].reverse() : g.states) {
          await switchTo(g, state);
          const c = await countedSegment(g, body, instrRequests, Number(values['instr-warmup']));
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
  console.log(`${RESULT_MARK}${JSON.stringify(result)}`);
} finally {
  await bare?.close();
  for (const g of gateways) await g.running.close();
  await up.close();
  for (const db of dbs) await db.drop();
  const redis = new Redis(values.redis);
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length) await redis.del(...keys);
  } while (cursor !== '0');
  redis.disconnect();
  rmSync(instrDir, { recursive: true, force: true });
}
