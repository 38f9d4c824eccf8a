// Cluster-mode snapshot source: switches only to a complete, checksummed, valid snapshot; otherwise keeps the
// last good one, including while the API server is unreachable; reports what it serves on its Lease.
import { CoordinationV1Api, CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FakeApiServer } from '../../test/k8s-fake/api-server.ts';
import { startFakeApiServer } from '../../test/k8s-fake/api-server.ts';
import { eventually } from '../../test/k8s-fake/cluster.ts';
import { generateApiKey } from '../auth/api-key.ts';
import { SnapshotHolder } from './holder.ts';
import type { SnapshotManifest } from './kube-format.ts';
import { encodeJson, gzipBase64, MANIFEST_SECRET, sha256, shardSecretName, SNAPSHOT_LABEL } from './kube-format.ts';
import { quietLogger } from '../../kube/informer.ts';
import type { KubeSource } from './kube-source.ts';
import { startKubeSource } from './kube-source.ts';

const NS = 'src';
const base = (price: string) => ({
  providers: [{ id: 'p', baseUrl: 'https://x.example/v1', timeouts: { connectMs: 1, firstByteMs: 1, idleMs: 1, totalMs: 1 }, onClientDisconnect: 'continue' }],
  pricingGroups: [{ id: 'g', mode: 'flat_tokens', prices: { input: price, output: '1', cacheRead: '0', cacheWrite: '0' }, discount: '1' }],
  models: [{ id: 'm', public: false, pricingGroup: 'g', created: 0, protocols: { openai: [{ provider: 'p', model: 'm', weight: 1 }] }, capabilities: { drop: [] } }],
  organizations: [{ id: 'acme', models: ['*'] }],
});

describe('kube snapshot source', () => {
  let api: FakeApiServer;
  let core: CoreV1Api;
  let source: KubeSource;
  const holder = new SnapshotHolder();
  const key = generateApiKey();
  let generation = 0;
  let spendReport: string | undefined;

  async function put(name: string, data: Record<string, string>): Promise<void> {
    const body = { metadata: { name, labels: { [SNAPSHOT_LABEL]: name === MANIFEST_SECRET ? 'manifest' : 'shard' } }, data };
    await core.createNamespacedSecret({ namespace: NS, body }).catch(() => core.replaceNamespacedSecret({ namespace: NS, name, body }));
  }

  /** Writes a snapshot the way the operator does; `tamper` breaks one rule. */
  async function publish(price: string, tamper?: 'checksum' | 'invalid' | 'shard-only' | 'bad-key' | 'duplicate'): Promise<number> {
    const b = encodeJson(tamper === 'invalid' ? { ...base(price), models: [{ ...base(price).models[0], pricingGroup: 'missing' }] } : base(price));
    const entry = { id: 'k', hash: key.hash, prefix: key.prefix, organization: tamper === 'bad-key' ? 'ghost' : 'acme', project: 'web', disabled: price === '9' };
    const shards = [encodeJson({ keys: [entry], generations: { k: 1 } })];
    // The same key again in a second shard: each shard is valid on its own, the snapshot is not.
    if (tamper === 'duplicate') shards.push(encodeJson({ keys: [{ ...entry, id: 'k2' }], generations: { k2: 1 } }));
    for (const [i, sh] of shards.entries()) await put(shardSecretName(i), { 'keys.json.gz': gzipBase64(sh.text) });
    if (tamper === 'shard-only') return generation;
    generation++;
    const version = tamper === 'checksum' ? sha256('something else') : sha256(`${b.checksum}|${shards.map((sh) => sh.checksum).join(',')}`);
    const manifest: SnapshotManifest = { format: 1, version, generation, baseChecksum: b.checksum, shards: shards.map((sh, i) => ({ name: shardSecretName(i), checksum: sh.checksum, keys: 1 })), generations: {}, writtenAt: new Date().toISOString() };
    await put(MANIFEST_SECRET, { 'manifest.json': Buffer.from(JSON.stringify(manifest)).toString('base64'), 'base.json': Buffer.from(b.text).toString('base64') });
    return generation;
  }

  beforeAll(async () => {
    api = await startFakeApiServer({ bookmarkIntervalMs: 100 });
    core = api.kubeConfig(NS).makeApiClient(CoreV1Api);
    source = startKubeSource({ holder, log: quietLogger, kubeConfig: api.kubeConfig(NS), namespace: NS, podName: 'gw-0', reportEveryMs: 100, spendReport: () => spendReport, informer: { backoffBaseMs: 50, backoffMaxMs: 300, lastSeenLimitMs: 2000 } });
  });
  afterAll(async () => {
    await source?.close();
    await api?.stop();
  });

  it('serves nothing until a first snapshot exists, then switches to it and reports it on its Lease', async () => {
    await new Promise((r) => setTimeout(r, 200));
    expect(holder.current).toBeUndefined();
    const g = await publish('2');
    await source.loaded;
    expect(holder.current!.generation).toBe(g);
    expect(holder.current!.keysByHash.get(key.hash)?.project).toBe('web');
    const leases = api.kubeConfig(NS).makeApiClient(CoordinationV1Api);
    await eventually(async () => (await leases.readNamespacedLease({ namespace: NS, name: 'tollgate-gw-gw-0' }).catch(() => undefined))?.metadata?.annotations?.['tollgate.dev/snapshot-generation'] === String(g), 3000, 'lease report');
    // The governor's spend report (once it has reconciled with the ledger) rides on the same Lease for the operator.
    expect((await leases.readNamespacedLease({ namespace: NS, name: 'tollgate-gw-gw-0' })).metadata?.annotations?.['tollgate.dev/spend']).toBeUndefined();
    spendReport = '{"day":"d20261124","month":"m202611","scopes":{"Organization/acme":{"month":"1.5"}}}';
    await eventually(async () => (await leases.readNamespacedLease({ namespace: NS, name: 'tollgate-gw-gw-0' })).metadata?.annotations?.['tollgate.dev/spend'] === spendReport, 3000, 'spend report');
  });

  it('waits while a shard is newer than the manifest, then switches when the manifest lands', async () => {
    const before = holder.current!;
    await publish('3', 'shard-only');
    await new Promise((r) => setTimeout(r, 200));
    expect(holder.current).toBe(before);
    const g = await publish('3');
    await eventually(() => holder.current!.generation === g, 3000, 'switched');
  });

  it('keeps the last good snapshot when the checksum does not match or the schema rejects it', async () => {
    const good = holder.current!;
    await publish('4', 'checksum');
    await new Promise((r) => setTimeout(r, 200));
    expect(holder.current).toBe(good);
    await publish('5', 'invalid');
    await new Promise((r) => setTimeout(r, 200));
    expect(holder.current).toBe(good);
    // A shard is validated on its own (its keys' organization must be in the base) and across shards.
    await publish('5', 'bad-key');
    await new Promise((r) => setTimeout(r, 200));
    expect(holder.current).toBe(good);
    await publish('5', 'duplicate');
    await new Promise((r) => setTimeout(r, 200));
    expect(holder.current).toBe(good);
    const g = await publish('6');
    await eventually(() => holder.current!.generation === g, 3000, 'next good one');
  });

  it('keeps serving while the API server is away and picks up changes made meanwhile when it returns', async () => {
    const good = holder.current!;
    await api.stop();
    await eventually(() => !source.connected(), 3000, 'disconnected');
    await new Promise((r) => setTimeout(r, 300));
    expect(holder.current).toBe(good);
    // Changed while the source could not watch: history compacted, so its resourceVersion is gone (410 → relist).
    api.store.compact();
    await api.start();
    const g = await publish('9');
    api.store.compact();
    await eventually(() => holder.current!.generation === g, 5000, 'caught up');
    expect(holder.current!.keysByHash.get(key.hash)!.disabled).toBe(true);
  });
});
