// Resilience under load: a model whose two upstream targets share traffic, one of them failing half its requests
// with 503, paced at --rate req/s. Reports the client success rate (the bar: ≥ 99.9 %), the latency added over a
// model served by the healthy target alone, tollgate's CPU per request in both, and how often the flaky target was
// retried and ejected (from /upstreams on the admin port).
//   node bench/resilience.ts [--rate 500] [--seconds 10]
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';
import { generateApiKey } from '../gateway/auth/api-key.ts';
import type { SnapshotInput } from '../gateway/snapshot/schema.ts';
import { chatBody, paced } from './load.ts';
import type { RunResult, Target } from './load.ts';
import { freePort, spawnServer } from './proc.ts';
import { ms, us } from './stats.ts';
import { GATEWAY_NODE_OPTIONS, startUpstream } from './targets.ts';

const { values } = parseArgs({ options: { rate: { type: 'string', default: '500' }, seconds: { type: 'string', default: '10' }, 'fail-rate': { type: 'string', default: '0.5' } } });
const rate = Number(values.rate);
const seconds = Number(values.seconds);
const failRate = Number(values['fail-rate']);

export interface ResilienceResult {
  rate: number;
  failRate: number;
  steady: RunResult;
  flaky: RunResult;
  successRate: number;
  addedP50Ms: number;
  addedP99Ms: number;
  flakyTarget: unknown;
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

export async function runResilience(opts: { rate: number; seconds: number; failRate: number }): Promise<ResilienceResult> {
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
    args: ['gateway/cli.ts', 'start', '--config', configPath, '--port', String(port), '--host', '127.0.0.1'],
    env: { TOLLGATE_DATA_DIR: dataDir, DATABASE_URL: '', LOG_LEVEL: 'warn', NODE_OPTIONS: GATEWAY_NODE_OPTIONS, TOLLGATE_ADMIN_PORT: String(adminPort) },
    readyUrl: `${url}/healthz`,
    url,
    timeoutMs: 60_000,
  });
  try {
    const target: Target = { name: 'tollgate', origin: url, chatPath: '/api/v1/chat/completions', headers: { authorization: `Bearer ${key.key}` }, pid: proc.pid };
    const body = (model: string) => chatBody().replace('"gpt-4o-mini"', JSON.stringify(model));
    // Warm both paths, then measure each at the same rate.
    await paced(target, body('steady-only'), { rate: Math.min(opts.rate, 200), seconds: 1 });
    await paced(target, body('half-flaky'), { rate: Math.min(opts.rate, 200), seconds: 1 });
    const steady = await paced(target, body('steady-only'), { rate: opts.rate, seconds: opts.seconds, upstreamPid: upstream.proc.pid });
    const flaky = await paced(target, body('half-flaky'), { rate: opts.rate, seconds: opts.seconds, upstreamPid: upstream.proc.pid });
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
      addedP50Ms: flaky.latency.p50 - steady.latency.p50,
      addedP99Ms: flaky.latency.p99 - steady.latency.p99,
      flakyTarget,
    };
  } finally {
    await proc.stop();
    await front.close();
    await upstream.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

if (import.meta.main) {
  const r = await runResilience({ rate, seconds, failRate });
  const line = (name: string, x: RunResult) => `${name.padEnd(12)} ok ${x.ok} failed ${x.failed}  p50 ${ms(x.latency.p50)} ms  p99 ${ms(x.latency.p99)} ms  CPU/req ${us(x.cpuPerRequest)} µs`;
  console.log(`${r.rate} req/s for ${seconds} s; flaky target fails ${(r.failRate * 100).toFixed(0)} %`);
  console.log(line('steady-only', r.steady));
  console.log(line('half-flaky', r.flaky));
  console.log(`client success ${(r.successRate * 100).toFixed(3)} % (bar: 99.9 %); added latency p50 ${ms(r.addedP50Ms)} ms, p99 ${ms(r.addedP99Ms)} ms`);
  console.log('flaky target:', JSON.stringify(r.flakyTarget));
  if (r.successRate < 0.999) process.exitCode = 1;
}
