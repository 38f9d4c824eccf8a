// The supervised informer: a silently dead watch is restarted by the lastSeen watchdog; errors back off and recover.
import { CustomObjectsApi } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FakeApiServer } from '../test/k8s-fake/api-server.ts';
import { startFakeApiServer } from '../test/k8s-fake/api-server.ts';
import { eventually } from '../test/k8s-fake/cluster.ts';
import { Informer } from './informer.ts';

const NS = 'inf';
const crd = { group: 'tollgate.dev', version: 'v1alpha1', namespace: NS, plural: 'organizations' };

describe('supervised informer', () => {
  let api: FakeApiServer;
  let informer: Informer<{ metadata: { name: string; resourceVersion: string } }>;
  beforeAll(async () => {
    api = await startFakeApiServer({ bookmarkIntervalMs: 100 });
    const kc = api.kubeConfig(NS);
    const co = kc.makeApiClient(CustomObjectsApi);
    informer = new Informer({ name: 'orgs', kc, path: `/apis/tollgate.dev/v1alpha1/namespaces/${NS}/organizations`, list: () => co.listNamespacedCustomObject(crd), onChange: () => {}, lastSeenLimitMs: 600, backoffBaseMs: 50, backoffMaxMs: 200 });
    await informer.start();
  });
  afterAll(async () => {
    informer?.stop();
    await api?.stop();
  });

  it('restarts a watch that went silent (no events, no bookmarks) and relists what it missed', async () => {
    api.stalled = true;
    api.store.create('tollgate.dev/v1alpha1/organizations', NS, { metadata: { name: 'missed' }, spec: {} });
    await new Promise((r) => setTimeout(r, 100));
    expect(informer.get('missed')).toBeUndefined();
    // Still stalled: only the watchdog (silence longer than lastSeenLimitMs) can bring it back, by relisting.
    await eventually(() => informer.get('missed'), 3000, 'relisted');
    expect(informer.stats.watchdogRestarts).toBeGreaterThanOrEqual(1);
    api.stalled = false;
  });

  it('backs off while the API server is down and resumes when it returns', async () => {
    const errors = informer.stats.errors;
    await api.stop();
    await eventually(() => informer.stats.errors >= errors + 2, 3000, 'errors counted');
    expect(informer.connected).toBe(false);
    expect(informer.get('missed')).toBeDefined();
    await api.start();
    api.store.create('tollgate.dev/v1alpha1/organizations', NS, { metadata: { name: 'after' }, spec: {} });
    await eventually(() => informer.get('after'), 3000, 'resumed');
    expect(informer.connected).toBe(true);
  });
});

describe('slim', () => {
  it('drops managedFields and the kubectl last-applied copy, keeps everything else', async () => {
    const { slim } = await import('./informer.ts');
    const o = { metadata: { name: 'a', resourceVersion: '7', managedFields: [{ manager: 'kubectl' }], annotations: { 'kubectl.kubernetes.io/last-applied-configuration': '{"big":1}', keep: 'x' } }, spec: { a: 1 } };
    expect(slim(o)).toEqual({ metadata: { name: 'a', resourceVersion: '7', annotations: { keep: 'x' } }, spec: { a: 1 } });
    expect(slim({ metadata: { name: 'b', annotations: { 'kubectl.kubernetes.io/last-applied-configuration': '{}' } } })).toEqual({ metadata: { name: 'b' } });
  });
});
