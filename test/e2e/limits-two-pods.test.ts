// Two gateway processes sharing the machine's real Redis (their own key prefix): limits hold across pods exactly,
// and a pod killed while holding a concurrency slot gives it back once it has been silent for the pod ttl.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateApiKey } from '../../gateway/auth/api-key.ts';
import type { SnapshotInput } from '../../gateway/snapshot/schema.ts';
import type { ChildGateway } from '../support/child-gateway.ts';
import { startChildGateway } from '../support/child-gateway.ts';
import type { TestDatabase } from '../support/databases.ts';
import { createTestDatabase } from '../support/databases.ts';
import type { BenchDatabase } from '../../bench/databases.ts';
import { createBenchDatabase, DEFAULT_POSTGRES_URL, postgresReachable } from '../../bench/databases.ts';
import type { FakeUpstream } from '../upstream/server.ts';
import { startFakeUpstream } from '../upstream/server.ts';
import { sumDecimals } from '../support/expected-cost.ts';
import { pointsToUnits } from '../../gateway/governance/spend-units.ts';
import { deleteRedisPrefix } from '../../bench/redis-keys.ts';

const prefix = `tollgate-test:${randomUUID()}:`;
const keys = { rpm: generateApiKey(), conc: generateApiKey(), lease: generateApiKey(), budget: generateApiKey() };
const N = 5;
let upstream: FakeUpstream;
let dir: string;
const pods: ChildGateway[] = [];
let db: TestDatabase | undefined;
let local: BenchDatabase | undefined;

beforeAll(async () => {
  upstream = await startFakeUpstream();
  dir = mkdtempSync(join(tmpdir(), 'tg-limits-'));
  const key = (id: keyof typeof keys, extra: Record<string, unknown>) => ({ id, hash: keys[id].hash, prefix: keys[id].prefix, organization: 'acme', project: id, ...extra });
  const config: SnapshotInput = {
    providers: [
      { id: 'fake', baseUrl: `${upstream.url}/v1`, timeouts: { firstByteMs: 20_000, totalMs: 30_000 } },
    ],
    pricingGroups: [{ id: 'g', mode: 'flat_tokens', prices: { input: '1', output: '2' } }],
    models: [
      { id: 'gpt-4o-mini', pricingGroup: 'g', protocols: { openai: [{ provider: 'fake', model: 'gpt-4o-mini' }] } },
    ],
    organizations: [{ id: 'acme', models: ['*'] }],
    apiKeys: [
      key('rpm', { limits: { rpm: N } }),
      key('conc', { limits: { concurrency: 2 } }),
      key('lease', { limits: { concurrency: 1 } }),
      // Each answer from the fake costs 0.00002 points or more; the budget admits while anything is left.
      key('budget', { budget: { total: '0.0001' } }),
    ],
  };
  const configPath = join(dir, 'tollgate.json');
  writeFileSync(configPath, JSON.stringify(config));
  // A generous Redis timeout: on a machine this busy a 250 ms answer can be late, and a late answer is served from the
  // pod's local view (degraded mode, tested apart), which is not what this file proves.
  const env = { REDIS_URL: 'redis://127.0.0.1:6379', TOLLGATE_REDIS_PREFIX: prefix, TOLLGATE_REDIS_TIMEOUT_MS: '10000', TOLLGATE_REDIS_POD_TTL_MS: '1500' };
  // Two pods of one installation: one Postgres database (the machine's, 127.0.0.1:5432, when DATABASE_URL is unset;
  // PGlite per pod only if there is none), one Redis.
  let databaseUrl: string | undefined;
  if (process.env.DATABASE_URL) {
    db = await createTestDatabase('postgres', { migrate: false });
    databaseUrl = db.databaseUrl;
  } else if (await postgresReachable(DEFAULT_POSTGRES_URL)) {
    local = await createBenchDatabase(DEFAULT_POSTGRES_URL, 'limits');
    databaseUrl = local.url;
  }
  for (const i of [0, 1]) pods.push(await startChildGateway({ configPath, dataDir: join(dir, `pod${i}`), databaseUrl, env }));
}, 120_000);

afterAll(async () => {
  for (const p of pods) if (p.proc.exitCode === null && p.proc.signalCode === null) await p.kill('SIGTERM');
  await upstream?.close();
  await db?.drop();
  await local?.drop();
  if (dir) rmSync(dir, { recursive: true, force: true });
  await deleteRedisPrefix('redis://127.0.0.1:6379', prefix);
});

function send(pod: ChildGateway, key: string, model = 'gpt-4o-mini', content = 'Hi'): Promise<Response> {
  return fetch(`${pod.url}/api/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content }] }),
  });
}

describe('limits shared by two pods through Redis', () => {
  it(`admits exactly ${N} of ${3 * N} concurrent requests spread over both pods`, async () => {
    const before = upstream.requests.length;
    const res = await Promise.all(Array.from({ length: 3 * N }, (_, i) => send(pods[i % 2], keys.rpm.key)));
    const statuses = res.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(N);
    expect(statuses.filter((s) => s === 429)).toHaveLength(2 * N);
    expect(upstream.requests.length - before).toBe(N);
    expect(pods.some((p) => p.logs.join('').includes('degraded'))).toBe(false);
    const refused = res.find((r) => r.status === 429)!;
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(await refused.json()).toMatchObject({ error: { type: 'rate_limit_error', code: 'rate_limited' } });
  });

  it('holds the concurrency limit exactly under parallel load on both pods', async () => {
    const res = await Promise.all(Array.from({ length: 8 }, (_, i) => send(pods[i % 2], keys.conc.key, 'gpt-4o-mini', 'hold [fake:slow-first-byte:3000]')));
    expect(res.map((r) => r.status).filter((s) => s === 200)).toHaveLength(2);
    // Both slots are released when the answers end (the settlement follows the last byte by a moment).
    for (let i = 0; i < 40; i++) {
      const view = (await (await fetch(`${pods[0].url}/api/business/v1/customer/limits`, { headers: { authorization: `Bearer ${keys.conc.key}` } })).json()) as { limits: { remaining: number }[] };
      if (view.limits[0].remaining === 2) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    const after = await Promise.all([send(pods[0], keys.conc.key), send(pods[1], keys.conc.key)]);
    expect(after.map((r) => r.status)).toEqual([200, 200]);
  });

  it('a budget crossed under concurrency: admitted only while reservations fit, settled to the exact charges', async () => {
    const res = await Promise.all(Array.from({ length: 12 }, (_, i) => send(pods[i % 2], keys.budget.key)));
    const ok = res.filter((r) => r.status === 200);
    const refused = res.filter((r) => r.status === 429);
    expect(ok.length + refused.length).toBe(12);
    for (const r of refused) expect(((await r.json()) as { error: { code: string } }).error.code).toBe('insufficient_quota');
    // Each admission reserves the request's input (its bytes / 4 tokens at 1 point per million) and is admitted only
    // while spend + reservations < 0.0001. So the overshoot is at most what the admitted requests cost beyond their
    // reservations (docs/limits.md); a gateway that did not hold budgets would admit all 12 and break this.
    const reserve = pointsToUnits('0.000001') * BigInt(Math.ceil(Buffer.byteLength(JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hi' }] })) / 4));
    expect(ok.length).toBeGreaterThanOrEqual(1);
    const costs = ok.map((r) => pointsToUnits(r.headers.get('x-tollgate-cost-points')!));
    const spentUnits = costs.reduce((a, b) => a + b, 0n);
    const bound = costs.reduce((a, c) => a + (c > reserve ? c - reserve : 0n), 0n);
    expect(spentUnits - pointsToUnits('0.0001')).toBeLessThanOrEqual(bound);
    const charged = sumDecimals(ok.map((r) => r.headers.get('x-tollgate-cost-points')!));
    await new Promise((r) => setTimeout(r, 200)); // settlements are sent after the answers
    const limits = (await (await fetch(`${pods[0].url}/api/business/v1/customer/limits`, { headers: { authorization: `Bearer ${keys.budget.key}` } })).json()) as { backend: string; budgets: { spent: string }[] };
    expect(limits.backend).toBe('redis');
    // What Redis holds is exactly what was charged: every reservation was settled to the ledger's amount.
    expect(limits.budgets[0].spent).toBe(charged);
    if (Number(charged) >= 0.0001) expect((await send(pods[1], keys.budget.key)).status).toBe(429);
  });

  it('a pod killed while holding a slot: the slot returns once the pod has been silent for the pod ttl', async () => {
    const holding = send(pods[0], keys.lease.key, 'gpt-4o-mini', 'hold [fake:slow-first-byte:10000]').catch(() => undefined);
    // Wait until the first pod has admitted it (the upstream sees it).
    const seen = upstream.requests.length;
    for (let i = 0; i < 100 && upstream.requests.length === seen; i++) await new Promise((r) => setTimeout(r, 50));
    expect(upstream.requests.length).toBeGreaterThan(seen);
    await pods[0].kill('SIGKILL');
    await holding;
    const killed = Date.now();
    expect((await send(pods[1], keys.lease.key, 'gpt-4o-mini')).status).toBe(429);
    // Reaped by the other pod's heartbeat (every third of the 1.5 s ttl) once the dead one has been silent past the ttl:
    // not after the request's own time limit (30 s here), which bounds nothing once its pod is gone.
    let status = 429;
    while (status === 429 && Date.now() - killed < 10_000) {
      await new Promise((r) => setTimeout(r, 250));
      status = (await send(pods[1], keys.lease.key, 'gpt-4o-mini')).status;
    }
    expect(status).toBe(200);
  });
});
