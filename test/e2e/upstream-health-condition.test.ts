// Ejected upstream targets, seen from Kubernetes: two gateway pods on the fake API server report their ejected
// targets on their report Leases; the operator aggregates them into condition UpstreamsHealthy on the Provider and
// the Model. A failing upstream ejects a target on one pod → the condition names it and the pod → the probe
// recovers it → the condition clears; objects the failure does not touch stay True throughout.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningGateway } from '../../gateway/gateway.ts';
import { startGateway } from '../../gateway/gateway.ts';
import { HealthRegistry } from '../../gateway/resilience/health.ts';
import type { RunningOperator } from '../../operator/operator.ts';
import { startOperator } from '../../operator/operator.ts';
import type { Condition } from '../../operator/kinds.ts';
import type { FakeApiServer } from '../k8s-fake/api-server.ts';
import { startFakeApiServer } from '../k8s-fake/api-server.ts';
import { eventually, TestCluster } from '../k8s-fake/cluster.ts';
import type { TestDatabase } from '../support/databases.ts';
import { createTestDatabase } from '../support/databases.ts';
import { DEFAULT_BACKEND, PROVIDER_SECRET } from '../support/gateway.ts';
import { failNext } from '../upstream/faults.ts';
import type { FakeUpstream } from '../upstream/server.ts';
import { startFakeUpstream } from '../upstream/server.ts';

const NS = 'tg-res-health';
const FAST = { relistMs: 60_000, lastSeenLimitMs: 5_000, backoffBaseMs: 50, backoffMaxMs: 500 };
const EVERY_MS = 1000;

describe('condition UpstreamsHealthy from the pods\' reports', () => {
  let api: FakeApiServer;
  let upstream: FakeUpstream;
  let db: TestDatabase;
  let operator: RunningOperator;
  let cluster: TestCluster;
  const gateways: RunningGateway[] = [];
  const dirs: string[] = [];
  let key = '';

  beforeAll(async () => {
    api = await startFakeApiServer({ bookmarkIntervalMs: 200 });
    upstream = await startFakeUpstream();
    db = await createTestDatabase(DEFAULT_BACKEND);
    cluster = new TestCluster(api.kubeConfig(NS), NS);
    operator = startOperator({ kubeConfig: api.kubeConfig(NS), namespace: NS, identity: 'operator-0', leaderElection: false, informer: FAST, resyncMs: 1000, upstreamsConditionEveryMs: EVERY_MS });
    for (const pod of ['gw-a', 'gw-b']) {
      const dataDir = mkdtempSync(join(tmpdir(), 'tg-res-'));
      dirs.push(dataDir);
      // Each pod its own target health, as separate processes would have.
      gateways.push(await startGateway({ kubernetes: { kubeConfig: api.kubeConfig(NS), namespace: NS, podName: pod, reportEveryMs: 200, leaseDurationSeconds: 3, informer: FAST }, health: new HealthRegistry(), dataDir, store: db.store, port: 0, host: '127.0.0.1', logger: false, flushIntervalMs: 50 }));
    }
    await cluster.putSecret('upstream-credentials', { apiKey: PROVIDER_SECRET });
    const provider = { baseUrl: `${upstream.url}/v1`, protocols: ['openai'], credentials: { secretRef: { name: 'upstream-credentials', key: 'apiKey' } }, timeouts: { connectMs: 2000, firstByteMs: 3000, idleMs: 3000, totalMs: 10000 } };
    await cluster.apply('Provider', 'flaky', { ...provider, routing: { maxAttempts: 1, ejectAfter: 2, ejectFailurePercent: 0, ejectBaseMs: 2500 } });
    await cluster.apply('Provider', 'steady', provider);
    await cluster.apply('PricingGroup', 'mini', { mode: 'flat_tokens', prices: { input: '0.15', output: '0.6' } });
    await cluster.apply('Model', 'flaky-model', { id: 'vendor/flaky', pricingGroupRef: { name: 'mini' }, upstreams: [{ protocol: 'openai', providerRef: { name: 'flaky' }, model: 'gpt-flaky' }] });
    await cluster.apply('Model', 'steady-model', { id: 'vendor/steady', pricingGroupRef: { name: 'mini' }, upstreams: [{ protocol: 'openai', providerRef: { name: 'steady' }, model: 'gpt-steady' }] });
    await cluster.apply('Organization', 'acme', { models: ['*'] });
    await cluster.apply('ApiKey', 'app', { organization: 'acme', project: 'web' });
    key = (await eventually(async () => (await cluster.secret('app-key'))?.key, 5000, 'key Secret'))!;
    for (const g of gateways) await eventually(async () => (await fetch(`${g.url}/readyz`)).status === 200 && g.holder.current?.keysByHash.size === 1, 5000, 'gateway ready');
  });

  afterAll(async () => {
    for (const g of gateways) await g.close();
    await operator?.stop();
    await api?.stop();
    await upstream?.close();
    await db?.drop();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  const chat = (g: RunningGateway, model: string) =>
    fetch(`${g.url}/api/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }) });

  const healthy = (kind: 'Provider' | 'Model', name: string): Promise<Condition | undefined> => cluster.condition(kind, name, 'UpstreamsHealthy');

  it('every Provider and Model says UpstreamsHealthy=True while no pod has ejected anything', async () => {
    for (const [kind, name] of [['Provider', 'flaky'], ['Provider', 'steady'], ['Model', 'flaky-model'], ['Model', 'steady-model']] as const) {
      const c = await eventually(async () => ((await healthy(kind, name))?.status === 'True' ? healthy(kind, name) : undefined), 8000, `${kind}/${name} UpstreamsHealthy`);
      expect(c).toMatchObject({ reason: 'NoTargetsEjected' });
    }
  });

  it('a target ejected on one pod shows on its Provider and Model, naming the target and the pod; then clears on recovery', async () => {
    const [a, b] = gateways;
    failNext(upstream, 2, 503, { path: '/chat/completions' });
    expect((await chat(a, 'vendor/flaky')).status).toBe(503);
    expect((await chat(a, 'vendor/flaky')).status).toBe(503);
    const ejectedAt = Date.now();
    // gw-b still serves the same target normally: the ejection is gw-a's own.
    expect((await chat(b, 'vendor/flaky')).status).toBe(200);

    for (const [kind, name] of [['Provider', 'flaky'], ['Model', 'flaky-model']] as const) {
      const c = await eventually(async () => ((await healthy(kind, name))?.status === 'False' ? healthy(kind, name) : undefined), 8000, `${kind}/${name} UpstreamsHealthy=False`);
      expect(c).toMatchObject({ reason: 'TargetsEjected' });
      expect(c!.message).toMatch(/^ejected: flaky\/gpt-flaky( \(half-open, awaiting a probe\))? on 1\/2 pods \(gw-a\)$/);
    }
    // The failure does not touch the other provider and model.
    expect((await healthy('Provider', 'steady'))?.status).toBe('True');
    expect((await healthy('Model', 'steady-model'))?.status).toBe('True');

    // After the cooldown one probe goes through on gw-a, succeeds, and the condition clears.
    await new Promise((r) => setTimeout(r, Math.max(0, ejectedAt + 2600 - Date.now())));
    expect((await chat(a, 'vendor/flaky')).status).toBe(200);
    for (const [kind, name] of [['Provider', 'flaky'], ['Model', 'flaky-model']] as const) {
      const c = await eventually(async () => ((await healthy(kind, name))?.status === 'True' ? healthy(kind, name) : undefined), 8000, `${kind}/${name} UpstreamsHealthy=True again`);
      expect(c).toMatchObject({ reason: 'NoTargetsEjected' });
    }
  });

  it('settled: no more status writes for the Provider and Model while nothing changes', async () => {
    const c = operator.controller()!;
    await new Promise((r) => setTimeout(r, EVERY_MS + 500));
    await c.idle();
    const before = { ...c.stats.statusWritesByKind };
    await new Promise((r) => setTimeout(r, 1500)); // several Lease renewals from both pods
    await c.idle();
    expect(c.stats.statusWritesByKind.Provider).toBe(before.Provider);
    expect(c.stats.statusWritesByKind.Model).toBe(before.Model);
  });
});
