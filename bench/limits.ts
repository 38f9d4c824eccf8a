// CPU per request of the governor, in one run: the bare proxy floor, tollgate with no limits, with limits counted
// in-process, and with limits counted in Redis (the machine's Redis at 127.0.0.1:6379, own key prefix, removed after).
// Every limit is set far above the load so nothing is refused: what is measured is the cost of counting.
// Rounds interleave the targets so a noisy neighbour on the shared cores hits all of them alike.
// The last line of output is the result as JSON after a marker (`npm run bench` reads it; bench/limits-result.ts).
//   node bench/limits.ts [--requests 5000] [--concurrency 32] [--rounds 3] [--rate 1000] [--rate-seconds 5]
//   profiling: [--only limits-off,limits-redis] [--cpu-prof <dir>]
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
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
import { chatBody, closedLoop, paced } from './load.ts';
import type { Target } from './load.ts';
import { median } from './stats.ts';
import { CLK_TCK, cpuSeconds, freePort, spawnServer } from './proc.ts';
import type { ServerProc } from './proc.ts';
import { benchConfig, GATEWAY_NODE_OPTIONS, startBare, startUpstream } from './targets.ts';
import type { Running } from './targets.ts';

const { values } = parseArgs({
  options: {
    requests: { type: 'string', default: '5000' },
    concurrency: { type: 'string', default: '32' },
    rounds: { type: 'string', default: '3' },
    rate: { type: 'string', default: '1000' },
    'rate-seconds': { type: 'string', default: '5' },
    redis: { type: 'string', default: 'redis://127.0.0.1:6379' },
    // Profiling: only these targets (comma-separated names), and a V8 CPU profile of each gateway into this directory.
    only: { type: 'string' },
    // Which limits the governed key has: all (13 rules on three scopes, the default) or one (the key's rpm).
    rules: { type: 'string', default: 'all' },
    // The control: a second gateway with limits off, measured like the others; its "added" is the method's noise.
    'no-control': { type: 'boolean', default: false },
    'cpu-prof': { type: 'string' },
  },
});
const requests = Number(values.requests);
const concurrency = Number(values.concurrency);
const prefix = `tollgate-bench:${randomUUID()}:`;
const dbs: BenchDatabase[] = [];
const HIGH = { rpm: 1_000_000_000, tpm: 1_000_000_000, concurrency: 1_000_000 };
const BUDGET = { month: '1000000000', total: '1000000000' };

const only = values.only?.split(',');
const wanted = (name: string) => only === undefined || only.includes(name);
function nodeOptions(name: string): string {
  const dir = values['cpu-prof'];
  return dir ? `${GATEWAY_NODE_OPTIONS} --cpu-prof --cpu-prof-dir=${dir} --cpu-prof-name=${name}.cpuprofile` : GATEWAY_NODE_OPTIONS;
}

async function startGateway(name: string, upstreamUrl: string, limited: boolean, env: Record<string, string> = {}): Promise<Running & { dataDir: string }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-bench-limits-'));
  const k = { ...generateApiKey(), organization: 'bench', project: 'bench' };
  const config = benchConfig(upstreamUrl, [k]);
  if (limited && values.rules === 'one') config.apiKeys![0] = { ...config.apiKeys![0], limits: { rpm: HIGH.rpm } };
  else if (limited) {
    // Key, project and organization all limited: the worst case of three scopes per request.
    config.apiKeys![0] = { ...config.apiKeys![0], limits: HIGH, budget: BUDGET };
    config.organizations![0] = { ...config.organizations![0], limits: HIGH, budget: BUDGET, projects: [{ id: 'bench', limits: HIGH }] };
  }
  const configPath = join(dataDir, 'tollgate.json');
  writeFileSync(configPath, JSON.stringify(config));
  // Postgres (one database each): the ledger is the same for all four, and starts fast on a busy machine.
  const db = await createBenchDatabase(DEFAULT_POSTGRES_URL, name.replaceAll('-', '_'));
  dbs.push(db);
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const proc: ServerProc = await spawnServer({
    name,
    args: ['bin/tollgate.js', 'start', '--config', configPath, '--port', String(port), '--host', '127.0.0.1'],
    env: { TOLLGATE_DATA_DIR: dataDir, DATABASE_URL: db.url, LOG_LEVEL: 'warn', NODE_OPTIONS: nodeOptions(name), TOLLGATE_ADMIN_PORT: 'off', ...env },
    readyUrl: `${url}/healthz`,
    url,
    timeoutMs: 60_000,
  });
  return {
    proc,
    dataDir,
    target: { name, origin: url, chatPath: '/api/v1/chat/completions', headers: { authorization: `Bearer ${k.key}` }, pid: proc.pid, messagesPath: '/api/v1/messages', messagesHeaders: {} },
    close: async () => {
      await proc.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** The gateway's count of Redis script calls, from its /metrics. */
async function redisCalls(adminPort: number): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${adminPort}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith('tollgate_limits_redis_calls_total'));
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : 0;
}

async function fixedCount(t: Target, body: string, n: number): Promise<number> {
  const cpu0 = cpuSeconds(t.pid);
  const failed = await closedLoop(t, body, n, concurrency);
  const cpu = cpuSeconds(t.pid) - cpu0;
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
const loadBefore = loadavg()[0];
const alone = only === undefined || only.includes('alone') ? governorAlone() : [];
console.log('governor alone, in-process, µs CPU per admission + rate-limit headers + settlement:');
console.table(alone);

const up = await startUpstream();
const running: Running[] = [];
try {
  if (wanted('bare')) running.push(await startBare(up.target.origin));
  if (wanted('limits-off')) running.push(await startGateway('limits-off', up.target.origin, false));
  if (!values['no-control'] && wanted('limits-off-again')) running.push(await startGateway('limits-off-again', up.target.origin, false));
  if (wanted('limits-in-process')) running.push(await startGateway('limits-in-process', up.target.origin, true));
  const redisAdmin = await freePort();
  if (wanted('limits-redis')) running.push(await startGateway('limits-redis', up.target.origin, true, { REDIS_URL: values.redis, TOLLGATE_REDIS_PREFIX: prefix, TOLLGATE_ADMIN_PORT: String(redisAdmin), TOLLGATE_ADMIN_HOST: '127.0.0.1' }));
  const body = chatBody();
  for (const r of running) await fixedCount(r.target, body, Math.min(500, requests)); // warm-up
  // Interleaved rounds; each round's figure for a target is paired with limits-off's in the same round, and the
  // median of those differences is reported (a neighbour's burst then spoils one pair, not the comparison).
  const cpu = new Map<string, number[]>(running.map((r) => [r.target.name, []]));
  const p99 = new Map<string, number[]>(running.map((r) => [r.target.name, []]));
  const rounds = Number(values.rounds);
  const callsPerRequest: number[] = [];
  for (let round = 0; round < rounds; round++) {
    // Every other round in reverse order, so a drift in the machine's load favours no target.
    const order = round % 2 === 0 ? running : [...running].reverse();
    for (const r of order) {
      const c0 = r.target.name === 'limits-redis' ? await redisCalls(redisAdmin) : undefined;
      cpu.get(r.target.name)!.push(await fixedCount(r.target, body, requests));
      if (c0 !== undefined) callsPerRequest.push(((await redisCalls(redisAdmin)) - c0) / requests);
    }
    for (const r of order) p99.get(r.target.name)!.push((await paced(r.target, body, { rate: Number(values.rate), seconds: Number(values['rate-seconds']) })).latency.p99);
  }
  const paired = (m: Map<string, number[]>, name: string) => {
    const off = m.get('limits-off');
    return off ? median(m.get(name)!.map((x, i) => x - off[i])) : NaN;
  };
  const rows: LimitsTargetRow[] = running.map((r) => ({
    target: r.target.name,
    cpuUsPerRequest: +(median(cpu.get(r.target.name)!) * 1e6).toFixed(1),
    addedVsOffUs: +(paired(cpu, r.target.name) * 1e6).toFixed(1),
    p99AtRateMs: +median(p99.get(r.target.name)!).toFixed(2),
    p99AddedVsOffMs: +paired(p99, r.target.name).toFixed(2),
  }));
  const result: LimitsResult = { requests, rounds, concurrency, rate: Number(values.rate), rateSeconds: Number(values['rate-seconds']), loadBefore, loadAfter: loadavg()[0], governorAlone: alone, targets: rows, cpuResolutionUs: +(1e6 / CLK_TCK / requests).toFixed(2), ...(callsPerRequest.length ? { redisCallsPerRequest: +median(callsPerRequest).toFixed(3) } : {}) };
  console.log(`requests ${requests} x ${rounds} rounds, concurrency ${concurrency}; p99 at ${values.rate} req/s for ${values['rate-seconds']} s per round; load average ${loadBefore.toFixed(1)} → ${result.loadAfter.toFixed(1)}`);
  console.table(rows);
  if (result.redisCallsPerRequest !== undefined) console.log(`Redis script calls per request (closed loop, concurrency ${concurrency}): ${result.redisCallsPerRequest}`);
  console.log(`${RESULT_MARK}${JSON.stringify(result)}`);
} finally {
  for (const r of running) await r.close();
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
}
