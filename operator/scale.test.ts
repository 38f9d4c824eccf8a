// 50,000 ApiKeys: the snapshot is sharded under the object size limit, a one-key change rewrites one shard,
// and a gateway assembles and switches to the new snapshot. The world is seeded in its settled state (keys
// issued, statuses current) straight into the fake API server's store: issuing 50,000 keys one HTTP call at a
// time is the API server's pace, not the operator's (the closing note gives that rate separately).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { displayPrefix } from '../gateway/auth/api-key.ts';
import { SnapshotHolder } from '../gateway/snapshot/holder.ts';
import { startKubeSource } from '../gateway/snapshot/kube-source.ts';
import type { KubeSource } from '../gateway/snapshot/kube-source.ts';
import { quietLogger } from '../gateway/snapshot/kube-informer.ts';
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

describe(`${N} ApiKeys`, () => {
  let api: FakeApiServer;
  let controller: Controller;
  let source: KubeSource;
  const holder = new SnapshotHolder();
  const figures: Record<string, unknown> = {};

  beforeAll(async () => {
    api = await startFakeApiServer({ bookmarkIntervalMs: 500, historyLimit: 1000 });
    const t0 = performance.now();
    const s = api.store;
    s.create('tollgate.dev/v1alpha1/organizations', NS, { metadata: { name: 'acme' }, spec: { models: ['*'] } });
    const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    for (let i = 0; i < N; i++) {
      const name = `key-${i}`;
      // A well-formed random key (generateApiKey's BigInt base62 is needlessly slow 50,000 times over).
      const key = 'sk_live_' + Array.from(randomBytes(43), (b) => B62[b % 62]).join('');
      const g = { key, prefix: displayPrefix(key) };
      const k = s.create(APIKEYS, NS, { metadata: { name, finalizers: [FINALIZER] }, spec: { organization: 'acme', project: `p${i % 100}`, displayName: `Service key ${i}` } });
      s.create('/v1/secrets', NS, { metadata: { name: `${name}-key`, labels: { [API_KEY_LABEL]: name }, ownerReferences: [{ apiVersion: API_VERSION, kind: 'ApiKey', name, uid: k.metadata.uid!, controller: true }] }, stringData: { key: g.key } });
      // The status a settled operator leaves behind (statuses go through the subresource, as the operator's would).
      s.update(APIKEYS, NS, name, {
        ...k,
        status: {
          secretName: `${name}-key`,
          prefix: g.prefix,
          observedGeneration: 1,
          conditions: [
            { type: 'Ready', status: 'True', reason: 'Issued', message: `key ${g.prefix}… is in Secret "${name}-key" (data.key)`, observedGeneration: 1, lastTransitionTime: now },
            { type: 'Applied', status: 'True', reason: 'Served', message: '1/1 pods serve generation 1', observedGeneration: 1, lastTransitionTime: now },
          ],
        },
      }, 'status');
    }
    figures.seedMs = Math.round(performance.now() - t0);
  }, 120_000);

  afterAll(async () => {
    await source?.close();
    await controller?.stop();
    await api?.stop();
    console.log(`[scale] ${JSON.stringify(figures)}`);
  });

  it('writes the first snapshot in shards well under 1 MiB, with no status writes for settled keys', async () => {
    const t0 = performance.now();
    controller = new Controller({ client: new KubeClient(api.kubeConfig(NS), NS) });
    await controller.start();
    await eventually(() => controller.stats.lastWrite?.written, 60_000, 'first snapshot');
    figures.operatorStartToSnapshotMs = Math.round(performance.now() - t0);
    figures.firstCompileAndWriteMs = Math.round(controller.stats.lastReconcileMs);
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
  }, 90_000);

  it('a gateway assembles and validates the 50,000-key snapshot', async () => {
    const t0 = performance.now();
    source = startKubeSource({ holder, log: quietLogger, kubeConfig: api.kubeConfig(NS), namespace: NS, podName: 'gw-scale', reportEveryMs: 60_000 });
    await source.loaded;
    figures.gatewayFirstLoadMs = Math.round(performance.now() - t0);
    expect(holder.current!.keysByHash.size).toBe(N);
  }, 60_000);

  it('disabling one key rewrites one shard and the manifest; the gateway switches', async () => {
    const cluster = new TestCluster(api.kubeConfig(NS), NS);
    const before = holder.current!.generation;
    const secretWritesBefore = api.stats.writesByResource.secrets ?? 0;
    const t0 = performance.now();
    await cluster.patchSpec('ApiKey', 'key-4242', { disabled: true });
    await eventually(() => holder.current!.generation > before, 20_000, 'gateway switched');
    figures.oneKeyChangeToGatewayMs = Math.round(performance.now() - t0);
    expect(controller.stats.lastWrite!.shardsWritten).toBe(1);
    expect([...holder.current!.keysByHash.values()].find((k) => k.id === 'key-4242')!.disabled).toBe(true);
    figures.reconcileAfterChangeMs = Math.round(controller.stats.lastReconcileMs);
    // One shard and the manifest; the other shards are not touched.
    expect(api.stats.writesByResource.secrets - secretWritesBefore).toBe(2);
    await eventually(async () => (await cluster.condition('ApiKey', 'key-4242', 'Ready'))?.reason === 'Disabled', 20_000, 'status Disabled');
  }, 60_000);
});
