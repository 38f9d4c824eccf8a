// Resilience, in one gateway process:
// (a) the happy path's CPU per request with the default routing policy (retries, both ejection detectors) against
//     the same model with retries and ejection off: a fixed request count per model, closed loop, rounds
//     interleaved, CPU from /proc; the ratio should be 1.00 within noise.
// (b) a model whose two upstream targets share traffic, one of them failing half its requests with 503, paced at
//     --rate req/s: the client success rate (the bar: ≥ 99.9 %), the latency added over a model served by the
//     healthy target alone, and how often the flaky target was retried and ejected (from /upstreams).
// Prints the load average, since the machine may be shared.
//   node bench/resilience.ts [--rate 500] [--seconds 10] [--rounds 6] [--requests 4000] [--concurrency 16]
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';
import { generateApiKey } from '../gateway/auth/api-key.ts';
import type { SnapshotInput } from '../gateway/snapshot/schema.ts';
import { chatBody, closedLoop, paced } from './load.ts';
import { TargetHealth } from '../gateway/resilience/health.ts';
import { DEFAULT_POLICY } from '../gateway/resilience/policy.ts';
import type { RunResult, Target } from './load.ts';
import { cpuSeconds, freePort, spawnServer } from './proc.ts';
import { ms, us, median } from './stats.ts';
import { GATEWAY_NODE_OPTIONS, startUpstream } from './targets.ts';

const { values } = parseArgs({
  options: {
    rate: { type: 'string', default: '500' },
    seconds: { type: 'string', default: '10' },
    'fail-rate': { type: 'string', default: '0.5' },
    rounds: { type: 'string', default: '6' },
    requests: { type: 'string', default: '4000' },
    concurrency: { type: 'string', default: '16' },
  },
});
const rate = Number(values.rate);
const seconds = Number(values.seconds);
const failRate = Number(values['fail-rate']);

export interface HappyPathCpu {
  rounds: { defaults: number; off: number }[];
  /** Median CPU seconds per request of each model, and the median of the per-round ratios defaults / off. */
  defaults: number;
  off: number;
  ratio: number;
  /** Mean of the per-round ratios and its 95 % confidence half-width (t ≈ 2 for the round counts used). */
  meanRatio: number;
  ci95: number;
}

/**
 * The only per-request work the policy decides on the happy path (target pick, begin, success, release), in this
 * process, default policy against retries and ejection off: nanoseconds of CPU per request, interleaved rounds.
 */
export function hotPathNs(iterations = 2_000_000, rounds = 5): { defaults: number; off: number } {
  const off = { ...DEFAULT_POLICY, maxAttempts: 1, ejectAfter: 1_000_000, ejectFailurePercent: 0 };
  const run = (policy: typeof DEFAULT_POLICY): number => {
    const h = new TargetHealth('k', 'p', 'm');
    const t0 = process.cpuUsage();
    let now = Date.now();
    for (let i = 0; i < iterations; i++) {
      if ((i & 255) === 0) now = Date.now();
      if (!h.available(now, policy)) throw new Error('unavailable');
      h.begin();
      h.succeeded('success', now, policy);
      h.release();
    }
    const d = process.cpuUsage(t0);
    return ((d.user + d.system) * 1000) / iterations;
  };
  run(DEFAULT_POLICY);
  run(off);
  const a: number[] = [];
  const b: number[] = [];
  for (let r = 0; r < rounds; r++) {
    a.push(run(DEFAULT_POLICY));
    b.push(run(off));
  }
  return { defaults: median(a), off: median(b) };
}

/** Exactly `n` requests, `concurrency` at a time; the gateway's CPU (utime + stime from /proc) they cost. */
async function cpuPerRequest(t: Target, body: string, n: number, concurrency: number): Promise<number> {
  const cpu0 = cpuSeconds(t.pid!);
  const failed = await closedLoop(t, body, n, concurrency);
  const cpu = cpuSeconds(t.pid!) - cpu0;
  if (failed > 0) throw new Error(`${failed} of ${n} requests failed on the happy path`);
  return cpu / n;
}

export interface ResilienceResult {
  rate: number;
  failRate: number;
  steady: RunResult;
  flaky: RunResult;
  successRate: number;
  addedP50Ms: number;
  addedP99Ms: number;
  flakyTarget: unknown;
  happy: HappyPathCpu;
  loadAverage: { before: number[]; after: number[] };
}

/** A front for the fake upstream that answers 503 to a share of requests and passes the rest through. */
async function startFlakyFront(upstreamUrl: string, share: number): Promise<{ url: string; close(): Promise<void> }> {
  const pool = new Pool(upstreamUrl, { connections: 256 });
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (Math.random() < share) {
        res.writeHead(503, { 'content-type': 'application/json' }).end('{"error":{"message":"overloaded","type":"server_error","param":null,"code":null}}');
        return;
      }
      pool
        .request({ path: req.url!, method: 'POST', headers: { 'content-type': 'application/json', authorization: String(req.headers.authorization ?? '') }, body: Buffer.concat(chunks) })
        .then(async (up) => {
          const body = Buffer.from(await up.body.arrayBuffer());
          res.writeHead(up.statusCode, { 'content-type': String(up.headers['content-type'] ?? 'application/json') }).end(body);
        })
        .catch(() => res.writeHead(502).end());
    });
  });
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
      await pool.close();
    },
  };
}

export async function runResilience(opts: { rate: number; seconds: number; failRate: number; rounds?: number; requests?: number; concurrency?: number }): Promise<ResilienceResult> {
  const loadBefore = loadavg();
  const upstream = await startUpstream();
  const front = await startFlakyFront(upstream.target.origin, opts.failRate);
  const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-resilience-'));
  const key = generateApiKey();
  const timeouts = { connectMs: 30_000, firstByteMs: 120_000, idleMs: 120_000, totalMs: 300_000 };
  const config: SnapshotInput = {
    providers: [
      { id: 'steady', baseUrl: `${upstream.target.origin}/v1`, apiKey: { value: 'sk-bench-provider' }, timeouts },
      { id: 'flaky', baseUrl: `${front.url}/v1`, apiKey: { value: 'sk-bench-provider' }, timeouts },
    ],
    pricingGroups: [{ id: 'mini', mode: 'flat_tokens', prices: { input: '0.15', output: '0.6' } }],
    models: [
      { id: 'steady-only', pricingGroup: 'mini', protocols: { openai: [{ provider: 'steady', model: 'gpt-4o-mini' }] } },
      // The happy path twice: the default policy, and retries and both ejection detectors off.
      { id: 'happy-defaults', pricingGroup: 'mini', protocols: { openai: [{ provider: 'steady', model: 'gpt-4o-mini' }] } },
      { id: 'happy-off', pricingGroup: 'mini', protocols: { openai: [{ provider: 'steady', model: 'gpt-4o-mini' }] }, routing: { maxAttempts: 1, ejectAfter: 1_000_000, ejectFailurePercent: 0 } },
      // Equal weights: half the first attempts land on the flaky target; the default policy retries on the other.
      { id: 'half-flaky', pricingGroup: 'mini', protocols: { openai: [{ provider: 'flaky', model: 'gpt-4o-mini' }, { provider: 'steady', model: 'gpt-4o-mini' }] } },
    ],
    organizations: [{ id: 'bench', models: ['*'] }],
    apiKeys: [{ id: 'bench-0', hash: key.hash, prefix: key.prefix, organization: 'bench', project: 'bench' }],
  };
  const configPath = join(dataDir, 'tollgate.json');
  writeFileSync(configPath, JSON.stringify(config));
  const port = await freePort();
  const adminPort = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const proc = await spawnServer({
    name: 'tollgate-resilience',
    args: ['bin/tollgate.js', 'start', '--config', configPath, '--port', String(port), '--host', '127.0.0.1'],
    env: { TOLLGATE_DATA_DIR: dataDir, DATABASE_URL: '', LOG_LEVEL: 'warn', NODE_OPTIONS: GATEWAY_NODE_OPTIONS, TOLLGATE_ADMIN_PORT: String(adminPort) },
    readyUrl: `${url}/healthz`,
    url,
    timeoutMs: 60_000,
  });
  try {
    const target: Target = { name: 'tollgate', origin: url, chatPath: '/api/v1/chat/completions', headers: { authorization: `Bearer ${key.key}` }, pid: proc.pid };
    const body = (model: string) => chatBody().replace('"gpt-4o-mini"', JSON.stringify(model));
    // (a) Happy-path CPU, interleaved rounds (the order alternates so a drift in the machine's load hits both).
    const happyBodies = { defaults: body('happy-defaults'), off: body('happy-off') };
    const n = opts.requests ?? 4000;
    const c = opts.concurrency ?? 16;
    await cpuPerRequest(target, happyBodies.defaults, n / 2, c);
    await cpuPerRequest(target, happyBodies.off, n / 2, c);
    const rounds: { defaults: number; off: number }[] = [];
    for (let i = 0; i < (opts.rounds ?? 6); i++) {
      const r = { defaults: 0, off: 0 };
      for (const which of i % 2 === 0 ? (['defaults', 'off'] as const) : (['off', 'defaults'] as const)) r[which] = await cpuPerRequest(target, happyBodies[which], n, c);
      rounds.push(r);
      console.error(`round ${i + 1}: defaults ${us(r.defaults)} µs, off ${us(r.off)} µs CPU/req`);
    }
    const ratios = rounds.map((r) => r.defaults / r.off);
    const mean = ratios.reduce((a, b) => a + b, 0) / ratios.length;
    const sd = Math.sqrt(ratios.reduce((a, b) => a + (b - mean) ** 2, 0) / Math.max(1, ratios.length - 1));
    const happy: HappyPathCpu = { rounds, defaults: median(rounds.map((r) => r.defaults)), off: median(rounds.map((r) => r.off)), ratio: median(ratios), meanRatio: mean, ci95: (2 * sd) / Math.sqrt(ratios.length) };

    // (b) Warm both paths, then measure each at the same rate.
    await paced(target, body('steady-only'), { rate: Math.min(opts.rate, 200), seconds: 1 });
    await paced(target, body('half-flaky'), { rate: Math.min(opts.rate, 200), seconds: 1 });
    // Interleaved slices (order alternating), so a change in the machine's load hits both models alike; the added
    // latency is the median over slices of (half-flaky − steady-only) at p50 and p99.
    const slices = Math.max(1, Math.min(opts.seconds, 5));
    const runs: { steady: RunResult; flaky: RunResult }[] = [];
    for (let i = 0; i < slices; i++) {
      const one = async (m: 'steady' | 'flaky') => paced(target, body(m === 'steady' ? 'steady-only' : 'half-flaky'), { rate: opts.rate, seconds: opts.seconds / slices, upstreamPid: upstream.proc.pid });
      const r = {} as { steady: RunResult; flaky: RunResult };
      for (const m of i % 2 === 0 ? (['steady', 'flaky'] as const) : (['flaky', 'steady'] as const)) r[m] = await one(m);
      runs.push(r);
      console.error(`slice ${i + 1}: steady p50 ${ms(r.steady.latency.p50)} p99 ${ms(r.steady.latency.p99)} ms; half-flaky p50 ${ms(r.flaky.latency.p50)} p99 ${ms(r.flaky.latency.p99)} ms, ${r.flaky.failed} failed`);
    }
    const sum = (xs: RunResult[]): RunResult => ({ ...xs[0], ok: xs.reduce((n, x) => n + x.ok, 0), failed: xs.reduce((n, x) => n + x.failed, 0), latency: { ...xs[0].latency, p50: median(xs.map((x) => x.latency.p50)), p99: median(xs.map((x) => x.latency.p99)) }, cpuPerRequest: median(xs.map((x) => x.cpuPerRequest)) });
    const steady = sum(runs.map((r) => r.steady));
    const flaky = sum(runs.map((r) => r.flaky));
    let flakyTarget: unknown;
    try {
      const view = (await (await fetch(`http://127.0.0.1:${adminPort}/upstreams`)).json()) as { upstreams: { provider: string }[] };
      flakyTarget = view.upstreams.find((u) => u.provider === 'flaky');
    } catch {
      flakyTarget = 'admin port not reachable';
    }
    return {
      rate: opts.rate,
      failRate: opts.failRate,
      steady,
      flaky,
      successRate: flaky.ok / (flaky.ok + flaky.failed),
      addedP50Ms: median(runs.map((r) => r.flaky.latency.p50 - r.steady.latency.p50)),
      addedP99Ms: median(runs.map((r) => r.flaky.latency.p99 - r.steady.latency.p99)),
      flakyTarget,
      happy,
      loadAverage: { before: loadBefore, after: loadavg() },
    };
  } finally {
    await proc.stop();
    await front.close();
    await upstream.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

if (import.meta.main) {
  const r = await runResilience({ rate, seconds, failRate, rounds: Number(values.rounds), requests: Number(values.requests), concurrency: Number(values.concurrency) });
  const hot = hotPathNs();
  console.log(`policy hot path per request (target pick, begin, success, release): defaults ${hot.defaults.toFixed(1)} ns, off ${hot.off.toFixed(1)} ns CPU`);
  const la = (xs: number[]) => xs.map((x) => x.toFixed(2)).join(' ');
  console.log(`load average before ${la(r.loadAverage.before)}, after ${la(r.loadAverage.after)}`);
  console.log(`happy path CPU/req (median of ${r.happy.rounds.length} interleaved rounds): defaults ${us(r.happy.defaults)} µs, retries+ejection off ${us(r.happy.off)} µs, ratio ${r.happy.ratio.toFixed(3)}, mean ${r.happy.meanRatio.toFixed(3)} ± ${r.happy.ci95.toFixed(3)} (95 %) (per round: ${r.happy.rounds.map((x) => (x.defaults / x.off).toFixed(3)).join(' ')})`);
  const line = (name: string, x: RunResult) => `${name.padEnd(12)} ok ${x.ok} failed ${x.failed}  p50 ${ms(x.latency.p50)} ms  p99 ${ms(x.latency.p99)} ms  CPU/req ${us(x.cpuPerRequest)} µs`;
  console.log(`${r.rate} req/s for ${seconds} s per model in interleaved slices (latencies: medians over slices); flaky target fails ${(r.failRate * 100).toFixed(0)} %`);
  console.log(line('steady-only', r.steady));
  console.log(line('half-flaky', r.flaky));
  console.log(`client success ${(r.successRate * 100).toFixed(3)} % (bar: 99.9 %); added latency p50 ${ms(r.addedP50Ms)} ms, p99 ${ms(r.addedP99Ms)} ms`);
  console.log('flaky target:', JSON.stringify(r.flakyTarget));
  if (r.successRate < 0.999) process.exitCode = 1;
}
