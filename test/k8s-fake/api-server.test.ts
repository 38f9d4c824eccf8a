// The fake API server keeps the rules the operator relies on; each is checked here through the real @kubernetes/client-node.
import { ApiException, CoordinationV1Api, CoreV1Api, CustomObjectsApi, makeInformer, PatchStrategy, setHeaderOptions, Watch } from '@kubernetes/client-node';
import type { KubeConfig, V1Secret } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FakeApiServer } from './api-server.ts';
import { startFakeApiServer } from './api-server.ts';

const NS = 'tollgate';
const crd = { group: 'tollgate.dev', version: 'v1alpha1', namespace: NS };
const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const jsonPatch = setHeaderOptions('Content-Type', PatchStrategy.JsonPatch);

interface Obj {
  metadata: { name: string; resourceVersion: string; generation?: number; uid: string; deletionTimestamp?: string; finalizers?: string[]; labels?: Record<string, string> };
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
}

async function code(p: Promise<unknown>): Promise<number> {
  try {
    await p;
    return 200;
  } catch (err) {
    if (err instanceof ApiException) return err.code;
    throw err;
  }
}

async function until<T>(fn: () => T | undefined | false, ms = 3000): Promise<T> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const v = fn();
    if (v !== undefined && v !== false) return v;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error('condition not met in time');
}

describe('fake API server through @kubernetes/client-node', () => {
  let api: FakeApiServer;
  let kc: KubeConfig;
  let co: CustomObjectsApi;
  let core: CoreV1Api;

  beforeAll(async () => {
    api = await startFakeApiServer({ bookmarkIntervalMs: 100, historyLimit: 50 });
    kc = api.kubeConfig(NS);
    co = kc.makeApiClient(CustomObjectsApi);
    core = kc.makeApiClient(CoreV1Api);
  });
  afterAll(async () => api.stop());

  it('creates, gets and lists with label and field selectors; names must be DNS subdomains', async () => {
    await co.createNamespacedCustomObject({ ...crd, plural: 'models', body: { apiVersion: 'tollgate.dev/v1alpha1', kind: 'Model', metadata: { name: 'a', labels: { tier: 'gold' } }, spec: { id: 'x/a' } } });
    await co.createNamespacedCustomObject({ ...crd, plural: 'models', body: { apiVersion: 'tollgate.dev/v1alpha1', kind: 'Model', metadata: { name: 'b', labels: { tier: 'silver' } }, spec: { id: 'x/b' } } });
    const got = (await co.getNamespacedCustomObject({ ...crd, plural: 'models', name: 'a' })) as Obj;
    expect(got.metadata.generation).toBe(1);
    expect(got.metadata.uid).toMatch(/^[0-9a-f-]{36}$/);
    const gold = (await co.listNamespacedCustomObject({ ...crd, plural: 'models', labelSelector: 'tier=gold' })) as { items: Obj[]; metadata: { resourceVersion: string } };
    expect(gold.items.map((i) => i.metadata.name)).toEqual(['a']);
    expect(Number(gold.metadata.resourceVersion)).toBeGreaterThanOrEqual(Number(got.metadata.resourceVersion));
    const notGold = (await co.listNamespacedCustomObject({ ...crd, plural: 'models', labelSelector: 'tier in (silver,bronze),!missing' })) as { items: Obj[] };
    expect(notGold.items.map((i) => i.metadata.name)).toEqual(['b']);
    const byName = (await co.listNamespacedCustomObject({ ...crd, plural: 'models', fieldSelector: 'metadata.name=b' })) as { items: Obj[] };
    expect(byName.items.map((i) => i.metadata.name)).toEqual(['b']);
    expect(await code(co.createNamespacedCustomObject({ ...crd, plural: 'models', body: { metadata: { name: 'a' }, spec: {} } }))).toBe(409);
    expect(await code(co.createNamespacedCustomObject({ ...crd, plural: 'models', body: { metadata: { name: 'Bad/Name' }, spec: {} } }))).toBe(422);
    expect(await code(co.getNamespacedCustomObject({ ...crd, plural: 'models', name: 'nope' }))).toBe(404);
  });

  it('rejects a write carrying a stale resourceVersion with 409 Conflict, and requires one on a custom resource PUT', async () => {
    const a = (await co.getNamespacedCustomObject({ ...crd, plural: 'models', name: 'a' })) as Obj;
    const first = (await co.replaceNamespacedCustomObject({ ...crd, plural: 'models', name: 'a', body: { ...a, spec: { id: 'x/a2' } } })) as Obj;
    expect(Number(first.metadata.resourceVersion)).toBeGreaterThan(Number(a.metadata.resourceVersion));
    expect(await code(co.replaceNamespacedCustomObject({ ...crd, plural: 'models', name: 'a', body: { ...a, spec: { id: 'x/a3' } } }))).toBe(409);
    expect(await code(co.patchNamespacedCustomObject({ ...crd, plural: 'models', name: 'a', body: { metadata: { resourceVersion: a.metadata.resourceVersion }, spec: { id: 'x/a4' } } }, merge))).toBe(409);
    const noRv = { ...first, metadata: { ...first.metadata, resourceVersion: undefined } };
    expect(await code(co.replaceNamespacedCustomObject({ ...crd, plural: 'models', name: 'a', body: noRv }))).toBe(422);
  });

  it('bumps metadata.generation on spec changes only; the status subresource is separate', async () => {
    const before = (await co.getNamespacedCustomObject({ ...crd, plural: 'models', name: 'b' })) as Obj;
    const labelled = (await co.patchNamespacedCustomObject({ ...crd, plural: 'models', name: 'b', body: { metadata: { labels: { extra: 'y' } } } }, merge)) as Obj;
    expect(labelled.metadata.generation).toBe(before.metadata.generation);
    const specced = (await co.patchNamespacedCustomObject({ ...crd, plural: 'models', name: 'b', body: { spec: { id: 'x/b2' } } }, merge)) as Obj;
    expect(specced.metadata.generation).toBe(before.metadata.generation! + 1);
    const withStatus = (await co.patchNamespacedCustomObjectStatus({ ...crd, plural: 'models', name: 'b', body: { status: { observedGeneration: 2 }, spec: { id: 'ignored' } } }, merge)) as Obj;
    expect(withStatus.status).toEqual({ observedGeneration: 2 });
    expect(withStatus.spec).toEqual({ id: 'x/b2' });
    expect(withStatus.metadata.generation).toBe(2);
    const mainWrite = (await co.patchNamespacedCustomObject({ ...crd, plural: 'models', name: 'b', body: { status: { observedGeneration: 99 } } }, merge)) as Obj;
    expect(mainWrite.status).toEqual({ observedGeneration: 2 });
    // A create drops status too.
    const created = (await co.createNamespacedCustomObject({ ...crd, plural: 'models', body: { metadata: { name: 'c' }, spec: {}, status: { fake: true } } })) as Obj;
    expect(created.status).toBeUndefined();
  });

  it('applies JSON patch with a test precondition and the default content type is refused for merge bodies', async () => {
    const b = (await co.getNamespacedCustomObject({ ...crd, plural: 'models', name: 'b' })) as Obj;
    const ok = (await co.patchNamespacedCustomObject({ ...crd, plural: 'models', name: 'b', body: [{ op: 'test', path: '/metadata/resourceVersion', value: b.metadata.resourceVersion }, { op: 'add', path: '/metadata/finalizers', value: ['x/y'] }] }, jsonPatch)) as Obj;
    expect(ok.metadata.finalizers).toEqual(['x/y']);
    expect(await code(co.patchNamespacedCustomObject({ ...crd, plural: 'models', name: 'b', body: [{ op: 'test', path: '/metadata/resourceVersion', value: b.metadata.resourceVersion }] }, jsonPatch))).toBe(422);
    await co.patchNamespacedCustomObject({ ...crd, plural: 'models', name: 'b', body: [{ op: 'remove', path: '/metadata/finalizers' }] }, jsonPatch);
  });

  it('turns Secret stringData into base64 data and merges strategic patches', async () => {
    await core.createNamespacedSecret({ namespace: NS, body: { metadata: { name: 's1' }, stringData: { key: 'value' } } });
    const s = await core.readNamespacedSecret({ namespace: NS, name: 's1' });
    expect(s.data).toEqual({ key: Buffer.from('value').toString('base64') });
    expect((s as V1Secret & { stringData?: unknown }).stringData).toBeUndefined();
    const p = await core.patchNamespacedSecret({ namespace: NS, name: 's1', body: { stringData: { other: 'x' } } }, setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch));
    expect(Object.keys(p.data ?? {}).sort()).toEqual(['key', 'other']);
  });

  it('delete with finalizers only marks deletionTimestamp; removing the last finalizer deletes; no finalizer may be added meanwhile', async () => {
    await co.createNamespacedCustomObject({ ...crd, plural: 'apikeys', body: { metadata: { name: 'k', finalizers: ['tollgate.dev/revoke'] }, spec: { organization: 'acme' } } });
    const marked = (await co.deleteNamespacedCustomObject({ ...crd, plural: 'apikeys', name: 'k' })) as Obj;
    expect(marked.metadata.deletionTimestamp).toBeTruthy();
    const still = (await co.getNamespacedCustomObject({ ...crd, plural: 'apikeys', name: 'k' })) as Obj;
    expect(still.metadata.deletionTimestamp).toBe(marked.metadata.deletionTimestamp);
    expect(await code(co.patchNamespacedCustomObject({ ...crd, plural: 'apikeys', name: 'k', body: { metadata: { finalizers: ['tollgate.dev/revoke', 'other'] } } }, merge))).toBe(422);
    await co.patchNamespacedCustomObject({ ...crd, plural: 'apikeys', name: 'k', body: { metadata: { finalizers: null } } }, merge);
    expect(await code(co.getNamespacedCustomObject({ ...crd, plural: 'apikeys', name: 'k' }))).toBe(404);
  });

  it('garbage-collects dependents when their owner goes', async () => {
    const owner = (await co.createNamespacedCustomObject({ ...crd, plural: 'apikeys', body: { metadata: { name: 'owner' }, spec: {} } })) as Obj;
    const ref = { apiVersion: 'tollgate.dev/v1alpha1', kind: 'ApiKey', name: 'owner', uid: owner.metadata.uid, controller: true, blockOwnerDeletion: true };
    await core.createNamespacedSecret({ namespace: NS, body: { metadata: { name: 'owner-key', ownerReferences: [ref] }, stringData: { key: 'k' } } });
    await core.createNamespacedSecret({ namespace: NS, body: { metadata: { name: 'unowned' }, stringData: { key: 'k' } } });
    await co.deleteNamespacedCustomObject({ ...crd, plural: 'apikeys', name: 'owner' });
    await until(() => api.store.find('/v1/secrets', NS, 'owner-key') === undefined);
    expect(await code(core.readNamespacedSecret({ namespace: NS, name: 'owner-key' }))).toBe(404);
    expect(await code(core.readNamespacedSecret({ namespace: NS, name: 'unowned' }))).toBe(200);
  });

  it('watches with bookmarks, replays from a resourceVersion, sends DELETED when an object leaves the selector, and 410 Gone when compacted', async () => {
    const list = (await co.listNamespacedCustomObject({ ...crd, plural: 'organizations' })) as { metadata: { resourceVersion: string } };
    const events: { type: string; name?: string; rv?: string }[] = [];
    let done: unknown = 'open';
    const w = new Watch(kc);
    const ctl = await w.watch(`/apis/tollgate.dev/v1alpha1/namespaces/${NS}/organizations`, { resourceVersion: list.metadata.resourceVersion, allowWatchBookmarks: true, labelSelector: 'team=a' }, (type, obj: Obj) => events.push({ type, name: obj.metadata.name, rv: obj.metadata.resourceVersion }), (err) => (done = err));
    await co.createNamespacedCustomObject({ ...crd, plural: 'organizations', body: { metadata: { name: 'o1', labels: { team: 'a' } }, spec: {} } });
    await co.createNamespacedCustomObject({ ...crd, plural: 'organizations', body: { metadata: { name: 'o2', labels: { team: 'b' } }, spec: {} } });
    await co.patchNamespacedCustomObject({ ...crd, plural: 'organizations', name: 'o1', body: { metadata: { labels: { team: 'b' } } } }, merge);
    await until(() => events.some((e) => e.type === 'BOOKMARK'));
    expect(events.filter((e) => e.type !== 'BOOKMARK').map((e) => `${e.type} ${e.name}`)).toEqual(['ADDED o1', 'DELETED o1']);
    ctl.abort();
    await until(() => done !== 'open');

    // Replaying from the list's resourceVersion gives the same events again.
    const replay: string[] = [];
    const c2 = await w.watch(`/apis/tollgate.dev/v1alpha1/namespaces/${NS}/organizations`, { resourceVersion: list.metadata.resourceVersion }, (type, obj: Obj) => replay.push(`${type} ${obj.metadata.name}`), () => {});
    await until(() => replay.length === 3);
    expect(replay).toEqual(['ADDED o1', 'ADDED o2', 'MODIFIED o1']);
    c2.abort();

    api.store.compact();
    const gone: { type: string; code?: number }[] = [];
    let ended = false;
    await w.watch(`/apis/tollgate.dev/v1alpha1/namespaces/${NS}/organizations`, { resourceVersion: list.metadata.resourceVersion }, (type, obj: { code?: number }) => gone.push({ type, code: obj.code }), () => (ended = true));
    await until(() => ended);
    expect(gone).toEqual([{ type: 'ERROR', code: 410 }]);
  });

  it("client-node's own informer relists after 410 Gone and sees the world as it is", async () => {
    const path = `/apis/tollgate.dev/v1alpha1/namespaces/${NS}/pricinggroups`;
    const informer = makeInformer(kc, path, () => co.listNamespacedCustomObject({ ...crd, plural: 'pricinggroups' }));
    await co.createNamespacedCustomObject({ ...crd, plural: 'pricinggroups', body: { metadata: { name: 'p1' }, spec: {} } });
    await informer.start();
    await until(() => informer.list().length === 1);
    const goneBefore = api.stats.gone;
    // In one tick, so nothing can re-watch in between: the watch ends, the world changes, history is compacted.
    api.endWatches();
    api.store.create('tollgate.dev/v1alpha1/pricinggroups', NS, { metadata: { name: 'p2' }, spec: {} });
    api.store.delete('tollgate.dev/v1alpha1/pricinggroups', NS, 'p1');
    api.store.compact();
    await until(() => informer.list().map((o) => (o as Obj).metadata.name).join() === 'p2', 5000);
    expect(api.stats.gone).toBe(goneBefore + 1);
    await informer.stop();
  });

  it('stores Leases with optimistic concurrency, and stops and restarts keeping its data', async () => {
    const leases = kc.makeApiClient(CoordinationV1Api);
    const l = await leases.createNamespacedLease({ namespace: NS, body: { metadata: { name: 'leader' }, spec: { holderIdentity: 'a', leaseDurationSeconds: 15 } } });
    const won = await leases.replaceNamespacedLease({ namespace: NS, name: 'leader', body: { ...l, spec: { ...l.spec, holderIdentity: 'b' } } });
    expect(won.spec?.holderIdentity).toBe('b');
    expect(await code(leases.replaceNamespacedLease({ namespace: NS, name: 'leader', body: { ...l, spec: { ...l.spec, holderIdentity: 'c' } } }))).toBe(409);
    await api.stop();
    await expect(leases.readNamespacedLease({ namespace: NS, name: 'leader' })).rejects.toThrow();
    await api.start();
    expect((await leases.readNamespacedLease({ namespace: NS, name: 'leader' })).spec?.holderIdentity).toBe('b');
  });
});
