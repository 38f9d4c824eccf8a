// 50,000 ApiKeys: the snapshot is sharded under the object size limit, a one-key change rewrites one shard
// and a price change none, and a gateway switches to the new snapshot, refusing a revoked key. The world is
// seeded in its settled state (keys issued, statuses current) straight into the fake API server's store:
// issuing 50,000 keys one HTTP call at a time is the API server's pace, not the operator's.
// The figures (printed as `[scale] {...}`) are what docs/kubernetes.md quotes; the test asserts behaviour only.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { displayPrefix } from '../gateway/auth/api-key.ts';
import { authenticate } from '../gateway/auth/authenticate.ts';
import { toPlainString } from '../gateway/billing/decimal.ts';
import { SnapshotHolder } from '../gateway/snapshot/holder.ts';
import { startKubeSource } from '../gateway/snapshot/kube-source.ts';
import type { KubeSource } from '../gateway/snapshot/kube-source.ts';
import { quietLogger } from '../kube/informer.ts';
import type { FakeApiServer } from '../test/k8s-fake/api-server.ts';
import { startFakeApiServer } from '../test/k8s-fake/api-server.ts';
import { eventually, TestCluster } from '../test/k8s-fake/cluster.ts';
import { Controller } from './controller.ts';
import { API_KEY_LABEL, API_VERSION, FINALIZER } from './kinds.ts';
import { KubeClient } from './kube.ts';

const NS = 'scale';
const N = Number(process.env.SCALE_N ?? 50_000);
const APIKEYS = 'tollgate.dev/v1alpha1/apikeys';
const B62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const MODEL = 'openai/gpt-4o-mini';
/** The two ApiKeys the tests disable and delete. */
const A = 'key-0';
const B = `key-${N >> 1}`;

describe(`${N} ApiKeys`, () => {
  let api: FakeApiServer;
  let cluster: TestCluster;
  let controller: Controller;
  let source: KubeSource;
  const holder = new SnapshotHolder();
  const figures: Record<string, unknown> = {};
  /** The raw keys of the few ApiKeys the tests present to the gateway. */
  const raw = new Map<string, string>();
  const secretWrites = () => api.stats.writesByResource.secrets ?? 0;

  /** Makes a change and measures until the gateway serves a newer snapshot than before it. */
  async function changeToGateway(change: () => Promise<unknown>): Promise<number> {
    const before = holder.current!.generation;
    const t0 = performance.now();
    await change();
    await eventually(() => holder.current!.generation > before, 60_000, 'gateway switched');
    return Math.round(performance.now() - t0);
  }

  beforeAll(async () => {
    api = await startFakeApiServer({ bookmarkIntervalMs: 500, historyLimit: 1000 });
    cluster = new TestCluster(api.kubeConfig(NS), NS);
    const t0 = performance.now();
    const s = api.store;
    s.create('tollgate.dev/v1alpha1/organizations', NS, { metadata: { name: 'acme' }, spec: { models: ['*'] } });
    s.create('tollgate.dev/v1alpha1/providers', NS, { metadata: { name: 'openai' }, spec: { baseUrl: 'https://api.openai.com/v1', protocols: ['openai'] } });
    s.create('tollgate.dev/v1alpha1/pricinggroups', NS, { metadata: { name: 'mini' }, spec: { mode: 'flat_tokens', prices: { input: '0.15', output: '0.6' } } });
    s.create('tollgate.dev/v1alpha1/models', NS, { metadata: { name: 'mini' }, spec: { id: MODEL, pricingGroupRef: { name: 'mini' }, upstreams: [{ protocol: 'openai', providerRef: { name: 'openai' }, model: 'gpt-4o-mini' }] } });
    const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    for (let i = 0; i < N; i++) {
      const name = `key-${i}`;
      // A well-formed random key (generateApiKey's BigInt base62 is needlessly slow 50,000 times over).
      const key = 'sk_live_' + Array.from(randomBytes(43), (b) => B62[b % 62]).join('');
      if (name === A || name === B) raw.set(name, key);
      const prefix = displayPrefix(key);
      const k = s.create(APIKEYS, NS, { metadata: { name, finalizers: [FINALIZER] }, spec: { organization: 'acme', project: `p${i % 100}`, displayName: `Service key ${i}` } });
      s.create('/v1/secrets', NS, { metadata: { name: `${name}-key`, labels: { [API_KEY_LABEL]: name }, ownerReferences: [{ apiVersion: API_VERSION, kind: 'ApiKey', name, uid: k.metadata.uid!, controller: true }] }, stringData: { key } });
      // The status a settled operator leaves behind (statuses go through the subresource, as the operator's would).
      s.update(APIKEYS, NS, name, {
        ...k,
        status: {
          secretName: `${name}-key`,
          prefix,
          observedGeneration: 1,
          conditions: [
            { type: 'Ready', status: 'True', reason: 'Issued', message: `key ${prefix}… is in Secret "${name}-key" (data.key)`, observedGeneration: 1, lastTransitionTime: now },
            { type: 'Applied', status: 'True', reason: 'Served', message: '1/1 pods serve generation 1', observedGeneration: 1, lastTransitionTime: now },
          ],
        },
      }, 'status');
    }
    figures.seedMs = Math.round(performance.now() - t0);
  }, 300_000);

  afterAll(async () => {
    await source?.close();
    await controller?.stop();
    await api?.stop();
    console.log(`[scale] ${JSON.stringify(figures)}`);
  });

  it('writes the first snapshot in shards well under 1 MiB, with no writes for settled keys', async () => {
    const t0 = performance.now();
    controller = new Controller({ client: new KubeClient(api.kubeConfig(NS), NS) });
    await controller.start();
    figures.informersSyncedMs = Math.round(performance.now() - t0);
    await eventually(() => controller.stats.lastWrite?.written, 240_000, 'first snapshot');
    figures.operatorStartToSnapshotMs = Math.round(performance.now() - t0);
    await controller.idle();
    const w = controller.stats.lastWrite!;
    expect(w.shards.reduce((a, s) => a + s.keys, 0)).toBe(N);
    const sizes = w.shards.map((s) => s.bytes);
    figures.shards = w.shards.length;
    figures.shardBytesMax = Math.max(...sizes);
    figures.shardBytesMin = Math.min(...sizes);
    figures.shardBytesTotal = sizes.reduce((a, b) => a + b, 0);
    const manifest = api.store.get('/v1/secrets', NS, 'tollgate-snapshot');
    figures.manifestBytes = JSON.stringify(manifest).length;
    for (const s of sizes) expect(s).toBeLessThan(700 * 1024);
    expect(figures.manifestBytes as number).toBeLessThan(64 * 1024);
    expect(controller.stats.statusWritesByKind.ApiKey ?? 0).toBe(0);
    expect(controller.stats.keysIssued).toBe(0);
  }, 300_000);

  it('a gateway assembles and validates the 50,000-key snapshot', async () => {
    const t0 = performance.now();
    source = startKubeSource({ holder, log: quietLogger, kubeConfig: api.kubeConfig(NS), namespace: NS, podName: 'gw-scale', reportEveryMs: 60_000 });
    await source.loaded;
    figures.gatewayFirstLoadMs = Math.round(performance.now() - t0);
    expect(holder.current!.keysByHash.size).toBe(N);
    for (const [name, key] of raw) expect(authenticate(holder.current!, key).id).toBe(name);
    // The gateway's report of what it serves reaches every status once; after that the world is settled.
    await eventually(async () => {
      await controller.idle();
      return (await cluster.condition('Model', 'mini', 'Applied'))?.status === 'True';
    }, 120_000, 'Model Applied');
  }, 300_000);

  it('disabling one key rewrites one shard and the manifest; the gateway refuses the key', async () => {
    await controller.idle();
    const writes = secretWrites();
    const snapshots = controller.stats.snapshotWrites;
    figures.disableToGatewayMs = await changeToGateway(() => cluster.patchSpec('ApiKey', A, { disabled: true }));
    figures.disableReconcileMs = Math.round(controller.stats.lastReconcileMs);
    expect(() => authenticate(holder.current!, raw.get(A)!)).toThrow(/has been revoked/);
    expect(authenticate(holder.current!, raw.get(B)!).id).toBe(B);
    expect(holder.current!.keysByHash.size).toBe(N);
    await eventually(async () => (await cluster.condition('ApiKey', A, 'Ready'))?.reason === 'Disabled', 60_000, 'status Disabled');
    await controller.idle();
    // One shard and the manifest, once; the other shards are not touched.
    expect(controller.stats.snapshotWrites - snapshots).toBe(1);
    expect(secretWrites() - writes).toBe(2);
  }, 300_000);

  it('deleting one key takes it out of the gateway, then releases its finalizer', async () => {
    await controller.idle();
    const writes = secretWrites();
    figures.deleteToGatewayMs = await changeToGateway(() => cluster.delete('ApiKey', B));
    expect(() => authenticate(holder.current!, raw.get(B)!)).toThrow(/Incorrect API key/);
    expect(holder.current!.keysByHash.size).toBe(N - 1);
    await eventually(async () => (await cluster.get('ApiKey', B)) === undefined, 60_000, 'ApiKey gone');
    await eventually(async () => (await cluster.secret(`${B}-key`)) === undefined, 60_000, 'key Secret collected');
    await controller.idle();
    // A shard and the manifest; the key Secret goes by garbage collection, not by the operator.
    expect(secretWrites() - writes).toBe(2);
  }, 300_000);

  it('a price change rewrites the manifest only; the gateway prices at the new price', async () => {
    await controller.idle();
    const writes = secretWrites();
    const price = () => toPlainString(holder.current!.byName.get(MODEL)!.pricing.tiers[0].input);
    expect(price()).toBe('0.15');
    figures.priceChangeToGatewayMs = await changeToGateway(() => cluster.patchSpec('PricingGroup', 'mini', { prices: { input: '0.3', output: '1.2' } }));
    expect(price()).toBe('0.3');
    expect(holder.current!.keysByHash.size).toBe(N - 1);
    await controller.idle();
    expect(secretWrites() - writes).toBe(1);
  }, 300_000);
});
