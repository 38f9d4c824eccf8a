// The operator's lists come in pages (a relist of 50,000 objects holds one page's response at a time), slimmed as
// each lands, with the first page's resourceVersion.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FakeApiServer } from '../test/k8s-fake/api-server.ts';
import { startFakeApiServer } from '../test/k8s-fake/api-server.ts';
import { KubeClient, LIST_PAGE } from './kube.ts';

const NS = 'paged';
const N = LIST_PAGE * 2 + 7;
let api: FakeApiServer;
beforeAll(async () => {
  api = await startFakeApiServer();
  for (let i = 0; i < N; i++) {
    api.store.create('/v1/secrets', NS, { metadata: { name: `s-${i}`, annotations: { 'kubectl.kubernetes.io/last-applied-configuration': '{"big":true}', keep: 'me' } }, stringData: { v: String(i) } });
    api.store.create('tollgate.dev/v1alpha1/organizations', NS, { metadata: { name: `org-${i}` }, spec: { models: ['*'] } });
  }
});
afterAll(async () => api?.stop());

describe('paged lists', () => {
  it('lists every Secret and resource across pages, slimmed, at the first page resourceVersion', async () => {
    const client = new KubeClient(api.kubeConfig(NS), NS);
    const before = api.stats.requests;
    const secrets = await client.listSecrets();
    expect(api.stats.requests - before).toBe(3);
    expect(new Set(secrets.items.map((s) => s.metadata.name)).size).toBe(N);
    expect(secrets.items[0].metadata.annotations).toEqual({ keep: 'me' });
    expect(Number(secrets.metadata?.resourceVersion)).toBeGreaterThan(0);
    const orgs = await client.listResources('Organization');
    expect(orgs.items).toHaveLength(N);
    expect(orgs.metadata?.resourceVersion).toBe(secrets.metadata?.resourceVersion);
  });
});
