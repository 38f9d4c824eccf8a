// Cluster mode end to end, in one process: the fake API server, the operator (with leader election), and two
// gateways that read the snapshot through the API. Resources are applied with the real client; the official
// openai SDK calls a gateway with the key the operator wrote into the ApiKey's Secret.
import OpenAI from 'openai';
import { mkdtempSync, rmSync } from 'node:fs';
import type { Socket } from 'node:net';
import { createConnection, createServer } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningGateway } from '../../gateway/gateway.ts';
import { startGateway } from '../../gateway/gateway.ts';
import { parseAdminTokens } from '../../gateway/admin/tokens.ts';
import type { RunningOperator } from '../../operator/operator.ts';
import { startOperator } from '../../operator/operator.ts';
import type { FakeApiServer } from '../k8s-fake/api-server.ts';
import { startFakeApiServer } from '../k8s-fake/api-server.ts';
import { eventually, TestCluster } from '../k8s-fake/cluster.ts';
import type { TestDatabase } from '../support/databases.ts';
import { createTestDatabase } from '../support/databases.ts';
import type { TestPrices } from '../support/expected-cost.ts';
import { expectedCost, MINI_ACME } from '../support/expected-cost.ts';
import { DEFAULT_BACKEND, PROVIDER_SECRET } from '../support/gateway.ts';
import type { FakeUpstream } from '../upstream/server.ts';
import { startFakeUpstream } from '../upstream/server.ts';

const NS = 'tollgate';
const ADMIN_TOKEN = 'tga_cluster_0123456789abcdef';
const FAST = { relistMs: 60_000, lastSeenLimitMs: 5_000, backoffBaseMs: 50, backoffMaxMs: 500 };

const tokensOf = (u: OpenAI.CompletionUsage) => ({
  input: u.prompt_tokens - (u.prompt_tokens_details?.cached_tokens ?? 0),
  cacheRead: u.prompt_tokens_details?.cached_tokens ?? 0,
  output: u.completion_tokens,
});

describe('cluster mode: operator + two gateways on the fake API server', () => {
  let api: FakeApiServer;
  let upstream: FakeUpstream;
  let db: TestDatabase;
  let operator: RunningOperator;
  let cluster: TestCluster;
  const gateways: RunningGateway[] = [];
  const dirs: string[] = [];
  let key = '';
  const figures: Record<string, number> = {};

  beforeAll(async () => {
    api = await startFakeApiServer({ bookmarkIntervalMs: 200 });
    upstream = await startFakeUpstream();
    db = await createTestDatabase(DEFAULT_BACKEND);
    cluster = new TestCluster(api.kubeConfig(NS), NS);
    operator = startOperator({ kubeConfig: api.kubeConfig(NS), namespace: NS, identity: 'operator-0', election: { leaseDurationMs: 2000, renewDeadlineMs: 1500, retryPeriodMs: 200 }, informer: FAST, resyncMs: 1000 });
    for (const pod of ['gw-a', 'gw-b']) {
      const dataDir = mkdtempSync(join(tmpdir(), 'tg-k8s-'));
      dirs.push(dataDir);
      gateways.push(
        await startGateway({
          kubernetes: { kubeConfig: api.kubeConfig(NS), namespace: NS, podName: pod, reportEveryMs: 300, leaseDurationSeconds: 3, informer: FAST },
          dataDir,
          store: db.store,
          port: 0,
          host: '127.0.0.1',
          logger: false,
          flushIntervalMs: 50,
          // The admin API on one pod: read-only in cluster mode (ADR 0018).
          ...(pod === 'gw-a' ? { adminPort: 0, adminTokens: parseAdminTokens(`ops:write:${ADMIN_TOKEN}`, 'test') } : {}),
        }),
      );
    }
  });

  afterAll(async () => {
    for (const g of gateways) await g.close();
    await operator?.stop();
    await api?.stop();
    await upstream?.close();
    await db?.drop();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
    console.log(`[kubernetes e2e] ${JSON.stringify(figures)}`);
  });

  it('is not ready until a first snapshot arrives', async () => {
    const r = await fetch(`${gateways[0].url}/readyz`);
    expect(r.status).toBe(503);
  });

  it('compiles applied resources; the ApiKey Secret holds a key the SDK can use, billed at the PricingGroup price', async () => {
    await cluster.putSecret('upstream-credentials', { apiKey: PROVIDER_SECRET });
    await cluster.apply('Provider', 'fake-openai', { baseUrl: `${upstream.url}/v1`, protocols: ['openai'], credentials: { secretRef: { name: 'upstream-credentials', key: 'apiKey' } }, timeouts: { connectMs: 2000, firstByteMs: 3000, idleMs: 3000, totalMs: 10000 } });
    await cluster.apply('PricingGroup', 'mini', { mode: 'flat_tokens', prices: { input: '0.15', output: '0.6', cacheRead: '0.075', cacheWrite: '0' } });
    await cluster.apply('Model', 'gpt-4o-mini', { id: 'openai/gpt-4o-mini', alias: 'gpt-4o-mini', public: true, pricingGroupRef: { name: 'mini' }, upstreams: [{ protocol: 'openai', providerRef: { name: 'fake-openai' }, model: 'gpt-4o-mini-2024-07-18', weight: 1 }] });
    await cluster.apply('Organization', 'acme', { models: ['*'], discount: '0.9' });
    await cluster.apply('ApiKey', 'web-frontend', { organization: 'acme', project: 'web', displayName: 'Web frontend' });
    await cluster.apply('ApiKey', 'batch', { organization: 'acme', project: 'batch' });

    const ready = await eventually(async () => {
      const k = await cluster.get('ApiKey', 'web-frontend');
      return k?.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True' ? k : undefined;
    }, 5000, 'ApiKey Ready');
    expect(ready.status?.secretName).toBe('web-frontend-key');
    key = (await cluster.secret('web-frontend-key'))!.key;
    expect(key).toMatch(/^sk_live_[0-9A-Za-z]{43}$/);
    expect(ready.status?.prefix).toBe(key.slice(0, 14));
    // The snapshot holds only the hash: the key appears in no snapshot Secret.
    const manifest = await cluster.secret('tollgate-snapshot');
    expect(JSON.stringify(manifest)).not.toContain(key);

    for (const g of gateways) await eventually(async () => (await fetch(`${g.url}/readyz`)).status === 200, 5000, 'gateway ready');
    for (const g of gateways) {
      const client = new OpenAI({ baseURL: `${g.url}/api/v1`, apiKey: key, maxRetries: 0 });
      const { data, response } = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hello cluster' }] }).withResponse();
      expect(data.choices[0].message.content).toContain('hello cluster');
      expect(response.headers.get('x-tollgate-cost-points')).toBe(expectedCost(tokensOf(data.usage!), MINI_ACME).cost);
    }
  });

  it('reports on every resource how many pods serve its generation', async () => {
    const applied = await eventually(async () => {
      const c = await cluster.condition('Model', 'gpt-4o-mini', 'Applied');
      return c?.status === 'True' ? c : undefined;
    }, 5000, 'Applied');
    expect(applied.message).toBe('2/2 pods serve generation 1');
    for (const [kind, name] of [['Provider', 'fake-openai'], ['PricingGroup', 'mini'], ['Organization', 'acme'], ['ApiKey', 'web-frontend']] as const) {
      await eventually(async () => (await cluster.condition(kind, name, 'Applied'))?.message === '2/2 pods serve generation 1', 5000, `${kind} Applied`);
    }
  });

  it('shows keys and billed requests on the admin API, and refuses every write there (405 read_only)', async () => {
    const admin = gateways[0].adminUrl!;
    const h = { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' };
    expect(await (await fetch(`${admin}/admin/v1/session`, { headers: h })).json()).toEqual({ name: 'ops', role: 'write', mode: 'kubernetes', writable: false });
    const keys = (await (await fetch(`${admin}/admin/v1/keys?organization=acme`, { headers: h })).json()) as { data: { prefix: string; project: string; state: string }[] };
    expect(keys.data).toContainEqual(expect.objectContaining({ prefix: key.slice(0, 14), project: 'web', state: 'active' }));
    await gateways[0].ledger.flush();
    const requests = (await (await fetch(`${admin}/admin/v1/requests?organization=acme`, { headers: h })).json()) as { data: { status: number; project: string; key_prefix: string }[] };
    expect(requests.data).toContainEqual(expect.objectContaining({ status: 200, project: 'web', key_prefix: key.slice(0, 14) }));
    const write = await fetch(`${admin}/admin/v1/keys`, { method: 'POST', headers: h, body: JSON.stringify({ organization: 'acme', project: 'web' }) });
    expect(write.status).toBe(405);
    expect(((await write.json()) as { error: { code: string } }).error.code).toBe('read_only');
  });

  it('bills a price change at the new price within one second on both gateways', async () => {
    const before = gateways.map((g) => g.holder.current!.generation);
    const t0 = performance.now();
    await cluster.patchSpec('PricingGroup', 'mini', { prices: { input: '0.3', output: '1.2', cacheRead: '0.075', cacheWrite: '0' } });
    await eventually(() => gateways.every((g, i) => g.holder.current!.generation > before[i]), 2000, 'new snapshot on both gateways');
    const elapsed = performance.now() - t0;
    figures.priceChangeMs = Math.round(elapsed);
    expect(elapsed).toBeLessThan(1000);
    const NEW: TestPrices = { ...MINI_ACME, input: 300n, output: 1200n };
    for (const g of gateways) {
      const client = new OpenAI({ baseURL: `${g.url}/api/v1`, apiKey: key, maxRetries: 0 });
      const { data, response } = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'price check' }] }).withResponse();
      expect(response.headers.get('x-tollgate-cost-points')).toBe(expectedCost(tokensOf(data.usage!), NEW).cost);
    }
    await eventually(async () => (await cluster.condition('PricingGroup', 'mini', 'Applied'))?.message === '2/2 pods serve generation 2', 5000, 'Applied generation 2');
  });

  it('refuses a deleted ApiKey within one second; the finalizer is released and its Secret collected', async () => {
    const clients = gateways.map((g) => new OpenAI({ baseURL: `${g.url}/api/v1`, apiKey: key, maxRetries: 0 }));
    const t0 = performance.now();
    await cluster.delete('ApiKey', 'web-frontend');
    await eventually(() => gateways.every((g) => ![...g.holder.current!.keysByHash.values()].some((k) => k.id === 'web-frontend')), 2000, 'key gone from both gateways');
    const elapsed = performance.now() - t0;
    figures.revocationMs = Math.round(elapsed);
    expect(elapsed).toBeLessThan(1000);
    for (const c of clients) {
      const err = await c.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'still there?' }] }).then(() => undefined, (e: unknown) => e);
      expect(err).toBeInstanceOf(OpenAI.AuthenticationError);
    }
    await eventually(async () => (await cluster.get('ApiKey', 'web-frontend')) === undefined, 3000, 'ApiKey gone');
    await eventually(async () => (await cluster.secret('web-frontend-key')) === undefined, 3000, 'key Secret collected');
  });

  it('keeps serving when the API server stops, and catches up when it returns', async () => {
    await eventually(async () => (await cluster.get('ApiKey', 'batch'))?.status?.secretName, 3000, 'batch key issued');
    const batchKey = (await cluster.secret('batch-key'))!.key;
    await eventually(() => gateways.every((g) => [...g.holder.current!.keysByHash.values()].some((k) => k.id === 'batch')), 3000, 'batch key served');
    await api.stop();
    await new Promise((r) => setTimeout(r, 500));
    for (const g of gateways) {
      const client = new OpenAI({ baseURL: `${g.url}/api/v1`, apiKey: batchKey, maxRetries: 0 });
      const r = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'api server down' }] });
      expect(r.choices[0].message.content).toContain('api server down');
      expect((await fetch(`${g.url}/readyz`)).status).toBe(200);
      expect(g.kube!.connected()).toBe(false);
    }
    await api.start();
    const t0 = performance.now();
    await cluster.patchSpec('ApiKey', 'batch', { disabled: true });
    await eventually(() => gateways.every((g) => [...g.holder.current!.keysByHash.values()].find((k) => k.id === 'batch')?.disabled === true), 5000, 'disable after the API server returned');
    figures.afterOutageMs = Math.round(performance.now() - t0);
    const err = await new OpenAI({ baseURL: `${gateways[0].url}/api/v1`, apiKey: batchKey, maxRetries: 0 }).chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] }).then(() => undefined, (e: unknown) => e);
    expect((err as { status?: number }).status).toBe(401);
  });

  it('a gateway cut off from the API longer than its bound turns not ready and refuses; Applied never counts it as serving the revocation', async () => {
    // A TCP proxy in front of the API server stands for one pod's network path: closing it partitions that pod only.
    const target = new URL(api.url);
    const sockets = new Set<Socket>();
    let cut = false;
    const proxy = createServer((client) => {
      if (cut) {
        client.destroy();
        return;
      }
      const upstreamSocket = createConnection(Number(target.port), target.hostname);
      for (const s of [client, upstreamSocket]) {
        sockets.add(s);
        s.on('close', () => sockets.delete(s));
        s.on('error', () => {});
      }
      client.pipe(upstreamSocket).pipe(client);
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', () => r()));
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'cut', server: `http://127.0.0.1:${(proxy.address() as { port: number }).port}`, skipTLSVerify: true }],
      users: [{ name: 'u' }],
      contexts: [{ name: 'cut', cluster: 'cut', user: 'u', namespace: NS }],
      currentContext: 'cut',
    });
    const dataDir = mkdtempSync(join(tmpdir(), 'tg-k8s-'));
    dirs.push(dataDir);
    const c = await startGateway({
      kubernetes: { kubeConfig: kc, namespace: NS, podName: 'gw-cut', reportEveryMs: 300, leaseDurationSeconds: 1, staleAfterMs: 1500, refuseWhenStale: true, informer: FAST },
      dataDir,
      store: db.store,
      port: 0,
      host: '127.0.0.1',
      logger: false,
      flushIntervalMs: 50,
    });
    try {
      await cluster.apply('ApiKey', 'cut', { organization: 'acme', project: 'cut' });
      await eventually(async () => (await cluster.get('ApiKey', 'cut'))?.status?.secretName, 3000, 'key issued');
      const cutKey = (await cluster.secret('cut-key'))!.key;
      const all = [...gateways, c];
      await eventually(() => all.every((g) => [...(g.holder.current?.keysByHash.values() ?? [])].some((k) => k.id === 'cut')), 3000, 'key on all three');
      expect((await fetch(`${c.url}/readyz`)).status).toBe(200);

      cut = true;
      for (const s of sockets) s.destroy();
      await cluster.patchSpec('ApiKey', 'cut', { disabled: true });
      await eventually(() => gateways.every((g) => [...g.holder.current!.keysByHash.values()].find((k) => k.id === 'cut')?.disabled), 2000, 'revoked on the connected pods');
      // The cut-off pod still holds the key as enabled, but past its bound it is not ready and refuses every request.
      expect([...c.holder.current!.keysByHash.values()].find((k) => k.id === 'cut')?.disabled).toBe(false);
      await eventually(async () => (await fetch(`${c.url}/readyz`)).status === 503, 5000, 'cut-off pod not ready');
      const body = (await (await fetch(`${c.url}/readyz`)).json()) as { snapshot: { stale?: string } };
      expect(body.snapshot.stale).toMatch(/snapshot watch broken|no contact/);
      const err = await new OpenAI({ baseURL: `${c.url}/api/v1`, apiKey: cutKey, maxRetries: 0 }).chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] }).then(() => undefined, (e: unknown) => e);
      expect((err as { status?: number }).status).toBe(503);
      // Its Lease has run out, but it may still have been receiving traffic: the revocation is not claimed as served everywhere.
      await new Promise((r) => setTimeout(r, 1500));
      const applied = await eventually(async () => {
        const r = await cluster.get('ApiKey', 'cut');
        const a = r?.status?.conditions?.find((x) => x.type === 'Applied');
        return a?.observedGeneration === r?.metadata.generation ? a : undefined;
      }, 3000, 'Applied at the new generation');
      expect(applied).toMatchObject({ status: 'False', reason: 'Propagating' });
      expect(applied.message).toMatch(/^2\/3 pods serve generation/);

      // The path comes back: the pod reconnects promptly, loads the revocation, and is ready again.
      cut = false;
      const t0 = performance.now();
      await eventually(() => [...c.holder.current!.keysByHash.values()].find((k) => k.id === 'cut')?.disabled === true, 5000, 'revocation after reconnect');
      figures.reconnectMs = Math.round(performance.now() - t0);
      await eventually(async () => (await fetch(`${c.url}/readyz`)).status === 200, 3000, 'ready again');
      const after = await new OpenAI({ baseURL: `${c.url}/api/v1`, apiKey: cutKey, maxRetries: 0 }).chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] }).then(() => undefined, (e: unknown) => e);
      expect((after as { status?: number }).status).toBe(401);
    } finally {
      await c.close();
      for (const s of sockets) s.destroy();
      proxy.close();
    }
  });
});
