// Two gateway processes sharing the machine's Redis, each through its own TCP proxy that the test cuts mid-run (real
// connection resets, then refused connections), then restores. One pod serves rates from its local view while Redis
// is gone (the default), the other refuses rate-limited keys (TOLLGATE_RATES_WHEN_REDIS_DOWN=refuse). Budgets stay
// enforced on both from each pod's own view; on recovery the spend made meanwhile reaches Redis and counting is
// shared again.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateApiKey } from '../../gateway/auth/api-key.ts';
import type { SnapshotInput } from '../../gateway/snapshot/schema.ts';
import { pointsToUnits } from '../../gateway/governance/spend-units.ts';
import type { BenchDatabase } from '../../bench/databases.ts';
import { createBenchDatabase, DEFAULT_POSTGRES_URL, postgresReachable } from '../../bench/databases.ts';
import type { ChildGateway } from '../support/child-gateway.ts';
import { freePort, startChildGateway } from '../support/child-gateway.ts';
import type { TestDatabase } from '../support/databases.ts';
import { createTestDatabase } from '../support/databases.ts';
import { sumDecimals } from '../support/expected-cost.ts';
import type { TcpProxy } from '../support/tcp-proxy.ts';
import { startTcpProxy } from '../support/tcp-proxy.ts';
import type { FakeUpstream } from '../upstream/server.ts';
import { startFakeUpstream } from '../upstream/server.ts';
import { deleteRedisPrefix } from '../../bench/redis-keys.ts';

const REDIS = { host: '127.0.0.1', port: 6379 };
const prefix = `tollgate-test:${randomUUID()}:`;
const keys = { rpm: generateApiKey(), after: generateApiKey(), budget: generateApiKey() };
const N = 4;
const BUDGET = '0.00006'; // each answer of the fake costs 0.000005 here: a dozen requests
let upstream: FakeUpstream;
let dir: string;
const pods: { gw: ChildGateway; proxy: TcpProxy; adminUrl: string }[] = [];
let db: TestDatabase | undefined;
let local: BenchDatabase | undefined;

beforeAll(async () => {
  upstream = await startFakeUpstream();
  dir = mkdtempSync(join(tmpdir(), 'tg-limits-cut-'));
  const key = (id: keyof typeof keys, extra: Record<string, unknown>) => ({ id, hash: keys[id].hash, prefix: keys[id].prefix, organization: 'acme', project: id, ...extra });
  const config: SnapshotInput = {
    providers: [{ id: 'fake', baseUrl: `${upstream.url}/v1`, timeouts: { firstByteMs: 20_000, totalMs: 30_000 } }],
    pricingGroups: [{ id: 'g', mode: 'flat_tokens', prices: { input: '1', output: '2' } }],
    models: [{ id: 'gpt-4o-mini', pricingGroup: 'g', protocols: { openai: [{ provider: 'fake', model: 'gpt-4o-mini' }] } }],
    organizations: [{ id: 'acme', models: ['*'] }],
    apiKeys: [key('rpm', { limits: { rpm: N } }), key('after', { limits: { rpm: N } }), key('budget', { budget: { total: BUDGET } })],
  };
  const configPath = join(dir, 'tollgate.json');
  writeFileSync(configPath, JSON.stringify(config));
  let databaseUrl: string | undefined;
  if (process.env.DATABASE_URL) {
    db = await createTestDatabase('postgres', { migrate: false });
    databaseUrl = db.databaseUrl;
  } else if (await postgresReachable(DEFAULT_POSTGRES_URL)) {
    local = await createBenchDatabase(DEFAULT_POSTGRES_URL, 'limits_cut');
    databaseUrl = local.url;
  }
  for (const [i, mode] of [[0, 'local'], [1, 'refuse']] as const) {
    const proxy = await startTcpProxy(REDIS);
    const adminPort = await freePort();
    const env = {
      REDIS_URL: `redis://127.0.0.1:${proxy.port}`,
      TOLLGATE_REDIS_PREFIX: prefix,
      TOLLGATE_RATES_WHEN_REDIS_DOWN: mode,
      // Generous: on a busy machine a late answer would count as an outage, which is what this file causes on purpose.
      TOLLGATE_REDIS_TIMEOUT_MS: '10000',
      TOLLGATE_ADMIN_PORT: String(adminPort),
      TOLLGATE_ADMIN_HOST: '127.0.0.1',
    };
    const gw = await startChildGateway({ configPath, dataDir: join(dir, `pod${i}`), databaseUrl, env });
    pods.push({ gw, proxy, adminUrl: `http://127.0.0.1:${adminPort}` });
  }
}, 120_000);

afterAll(async () => {
  for (const p of pods) {
    if (p.gw.proc.exitCode === null && p.gw.proc.signalCode === null) await p.gw.kill('SIGTERM');
    await p.proxy.close();
  }
  await upstream?.close();
  await db?.drop();
  await local?.drop();
  if (dir) rmSync(dir, { recursive: true, force: true });
  await deleteRedisPrefix(`redis://${REDIS.host}:${REDIS.port}`, prefix);
});

function send(pod: ChildGateway, key: string): Promise<Response> {
  return fetch(`${pod.url}/api/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hi' }] }),
  });
}

async function podsGauge(adminUrl: string): Promise<number> {
  const text = await (await fetch(`${adminUrl}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith('tollgate_limits_pods'));
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : 0;
}

async function degradedGauge(adminUrl: string): Promise<number> {
  const text = await (await fetch(`${adminUrl}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith('tollgate_limits_degraded{'));
  if (!line) throw new Error(`no tollgate_limits_degraded in /metrics:\n${text.slice(0, 2000)}`);
  return Number(line.slice(line.lastIndexOf(' ') + 1));
}

async function until(what: string, ok: () => boolean | Promise<boolean>, ms = 15_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function spent(pod: ChildGateway): Promise<string> {
  const view = (await (await fetch(`${pod.url}/api/business/v1/customer/limits`, { headers: { authorization: `Bearer ${keys.budget.key}` } })).json()) as { backend: string; budgets: { spent: string }[] };
  return view.budgets[0].spent;
}

describe('Redis cut between two gateway processes, then restored', () => {
  it('degrades as configured (local limiter / refuse), keeps budgets, then shares counters again', async () => {
    const [a, b] = pods;
    // Shared before the cut: the rpm key's N spread over both pods, and budget spend through Redis on both.
    for (const p of pods) expect(await degradedGauge(p.adminUrl)).toBe(0);
    // Each pod says it is alive every 5 s: both count two before the cut, so each takes half of a limit during it.
    await until('both pods count two pods', async () => (await podsGauge(a.adminUrl)) === 2 && (await podsGauge(b.adminUrl)) === 2, 15_000);
    const shared = await Promise.all(Array.from({ length: 2 * N }, (_, i) => send(pods[i % 2].gw, keys.rpm.key)));
    expect(shared.filter((r) => r.status === 200)).toHaveLength(N);
    const costs: string[] = [];
    for (const p of [a, b, a, b]) {
      const r = await send(p.gw, keys.budget.key);
      expect(r.status).toBe(200);
      costs.push(r.headers.get('x-tollgate-cost-points')!);
    }
    const before = pointsToUnits(sumDecimals(costs));
    const charge = pointsToUnits(costs[0]);

    // The cut: both proxies reset their connections and refuse new ones.
    const upstreamBefore = upstream.requests.length;
    for (const p of pods) await p.proxy.down();
    await until('both pods degraded', async () => (await degradedGauge(a.adminUrl)) === 1 && (await degradedGauge(b.adminUrl)) === 1);
    // The log line comes through the child's stdout pipe, which may arrive after the gauge was read over HTTP.
    await until('both pods logged the degradation', () => pods.every((p) => p.gw.logs.join('').includes('redis unreachable: limits degraded to the local view')));

    // local: serving goes on, the pod limits the key alone with its share of the limit (fresh counters: N/2 more
    // this minute; the other pod's share is the other half).
    const onA = [];
    for (let i = 0; i < N / 2 + 2; i++) onA.push((await send(a.gw, keys.rpm.key)).status);
    expect(onA).toEqual([...Array(N / 2).fill(200), 429, 429]);
    // refuse: every request of a rate-limited key is refused, never sent upstream, with a short retry-after.
    const refused = await send(b.gw, keys.rpm.key);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(await refused.json()).toMatchObject({ error: { type: 'rate_limit_error', code: 'rate_limited' } });
    expect(upstream.requests.length - upstreamBefore).toBe(N / 2);

    // Budgets: both pods keep enforcing from their own view (what they last saw in Redis plus their own spend).
    const during: string[] = [];
    for (const p of pods) {
      let mine = 0n;
      let status = 200;
      for (let i = 0; i < 40 && status === 200; i++) {
        const r = await send(p.gw, keys.budget.key);
        status = r.status;
        if (status === 200) {
          during.push(r.headers.get('x-tollgate-cost-points')!);
          mine += pointsToUnits(r.headers.get('x-tollgate-cost-points')!);
        } else expect(await r.json()).toMatchObject({ error: { code: 'insufficient_quota' } });
      }
      expect(status).toBe(429);
      // Alone, a pod overshoots by at most the other pod's last charge it never saw plus its own last request.
      expect(before + mine - pointsToUnits(BUDGET)).toBeLessThanOrEqual(2n * charge + charge / 2n);
    }
    // Together too: each pod spent only its half of what was left (cut from a view that may miss the other's last
    // charge), so the two overshoot by about one request each, where whole budgets each would let them spend the
    // rest twice over.
    expect(before + pointsToUnits(sumDecimals(during)) - pointsToUnits(BUDGET)).toBeLessThanOrEqual(3n * charge);

    // Restored: both pods reconnect, say so, and the gauge is back to 0.
    for (const p of pods) await p.proxy.up();
    await until('both pods recovered', async () => pods.every((p) => p.gw.logs.join('').includes('redis reachable again')) && (await degradedGauge(a.adminUrl)) === 0 && (await degradedGauge(b.adminUrl)) === 0);
    // The spend made while degraded reached Redis: the shared counter holds every charge, exactly.
    const total = sumDecimals([...costs, ...during]);
    await until('degraded spend added to Redis', async () => (await spent(b.gw)) === total, 5000);
    expect(await spent(a.gw)).toBe(total);
    // Counting is shared again: a fresh key's N hold across both pods.
    const after = await Promise.all(Array.from({ length: 3 * N }, (_, i) => send(pods[i % 2].gw, keys.after.key)));
    expect(after.filter((r) => r.status === 200)).toHaveLength(N);
    expect(after.filter((r) => r.status === 429)).toHaveLength(2 * N);
  });
});
