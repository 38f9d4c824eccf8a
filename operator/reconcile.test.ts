// Reconcile behaviour per kind, through the fake API server and the real client: create, update, delete,
// invalid spec, dangling reference, Secret rotation; and that a settled world causes no writes at all.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashApiKey } from '../gateway/auth/api-key.ts';
import type { KeyShard, SnapshotManifest } from '../gateway/snapshot/kube-format.ts';
import { gunzipBase64, MANIFEST_SECRET } from '../gateway/snapshot/kube-format.ts';
import type { Snapshot } from '../gateway/snapshot/schema.ts';
import type { FakeApiServer } from '../test/k8s-fake/api-server.ts';
import { startFakeApiServer } from '../test/k8s-fake/api-server.ts';
import { eventually, TestCluster } from '../test/k8s-fake/cluster.ts';
import { Controller } from './controller.ts';
import type { Kind } from './kinds.ts';
import { FINALIZER } from './kinds.ts';
import { KubeClient } from './kube.ts';

const NS = 'rec';

describe('operator reconcile', () => {
  let api: FakeApiServer;
  let cluster: TestCluster;
  let controller: Controller;

  /** The snapshot as a gateway would assemble it from the Secrets. */
  async function snapshot(): Promise<Snapshot & { manifest: SnapshotManifest }> {
    await controller.idle();
    const m = (await cluster.secret(MANIFEST_SECRET))!;
    const manifest = JSON.parse(m['manifest.json']) as SnapshotManifest;
    const apiKeys = [];
    for (const sh of manifest.shards) {
      const s = await cluster.core.readNamespacedSecret({ namespace: NS, name: sh.name });
      apiKeys.push(...(JSON.parse(gunzipBase64(s.data!['keys.json.gz'])) as KeyShard).keys);
    }
    return { ...(JSON.parse(m['base.json']) as Snapshot), apiKeys, manifest };
  }

  async function ready(kind: Kind, name: string): Promise<{ status: string; reason: string; message: string; observedGeneration?: number }> {
    await controller.idle();
    return eventually(async () => {
      await controller.idle();
      const r = await cluster.get(kind, name);
      const c = r?.status?.conditions?.find((x) => x.type === 'Ready');
      return c && c.observedGeneration === r?.metadata.generation ? c : undefined;
    }, 3000, `${kind}/${name} status`);
  }

  async function settle(): Promise<void> {
    await new Promise((r) => setTimeout(r, 30));
    await controller.idle();
    await new Promise((r) => setTimeout(r, 30));
    await controller.idle();
  }

  async function warnings(name: string): Promise<string[]> {
    const list = await cluster.core.listNamespacedEvent({ namespace: NS });
    return list.items.filter((e) => e.involvedObject.name === name && e.type === 'Warning').map((e) => e.reason ?? '');
  }

  beforeAll(async () => {
    api = await startFakeApiServer({ bookmarkIntervalMs: 200 });
    cluster = new TestCluster(api.kubeConfig(NS), NS);
    controller = new Controller({ client: new KubeClient(api.kubeConfig(NS), NS), informer: { backoffBaseMs: 50, backoffMaxMs: 500 } });
    await controller.start();
    await cluster.putSecret('creds', { apiKey: 'sk-upstream-1' });
    await cluster.apply('Provider', 'openai', { baseUrl: 'https://api.openai.com/v1', protocols: ['openai', 'responses'], credentials: { secretRef: { name: 'creds', key: 'apiKey' } } });
    await cluster.apply('PricingGroup', 'mini', { mode: 'flat_tokens', prices: { input: '0.15', output: '0.6' } });
    await cluster.apply('Model', 'mini', { id: 'openai/gpt-4o-mini', alias: 'gpt-4o-mini', pricingGroupRef: { name: 'mini' }, upstreams: [{ protocol: 'openai', providerRef: { name: 'openai' }, model: 'gpt-4o-mini' }] });
    await cluster.apply('Organization', 'acme', { models: ['*'], discount: '0.9' });
    await cluster.apply('ApiKey', 'web', { organization: 'acme', project: 'web', displayName: 'Web' });
    await settle();
  });
  afterAll(async () => {
    await controller?.stop();
    await api?.stop();
  });

  describe('Provider', () => {
    it('compiles with the credential from its Secret', async () => {
      expect((await ready('Provider', 'openai')).status).toBe('True');
      const s = await snapshot();
      expect(s.providers).toEqual([expect.objectContaining({ id: 'openai', baseUrl: 'https://api.openai.com/v1', apiKey: { value: 'sk-upstream-1' } })]);
    });

    it('follows a rotated credential Secret', async () => {
      await cluster.putSecret('creds', { apiKey: 'sk-upstream-2' });
      await eventually(async () => (await snapshot()).providers[0]?.apiKey, 3000).then(async () => {
        await eventually(async () => JSON.stringify((await snapshot()).providers[0].apiKey) === JSON.stringify({ value: 'sk-upstream-2' }), 3000, 'rotated credential');
      });
    });

    it('a missing Secret or key: Ready=False SecretNotFound, a Warning Event, and the models on it drop out', async () => {
      await cluster.apply('Provider', 'broken', { baseUrl: 'https://x.example/v1', protocols: ['openai'], credentials: { secretRef: { name: 'nope', key: 'apiKey' } } });
      await cluster.apply('Model', 'on-broken', { id: 'x/on-broken', pricingGroupRef: { name: 'mini' }, upstreams: [{ protocol: 'openai', providerRef: { name: 'broken' }, model: 'm' }] });
      const c = await ready('Provider', 'broken');
      expect(c).toMatchObject({ status: 'False', reason: 'SecretNotFound', message: 'Secret "nope" (spec.credentials.secretRef) not found' });
      expect(await ready('Model', 'on-broken')).toMatchObject({ status: 'False', reason: 'ProviderNotReady', message: 'Provider "broken" is not Ready' });
      expect(await warnings('broken')).toContain('SecretNotFound');
      await cluster.putSecret('nope', { other: 'x' });
      await eventually(async () => (await ready('Provider', 'broken')).message === 'Secret "nope" has no key "apiKey" (spec.credentials.secretRef.key)', 3000, 'key missing');
      await cluster.putSecret('nope', { apiKey: 'sk-found' });
      await eventually(async () => (await ready('Model', 'on-broken')).status === 'True', 3000, 'model recovers');
      const s = await snapshot();
      expect(s.models.map((m) => m.id).sort()).toEqual(['openai/gpt-4o-mini', 'x/on-broken']);
      await cluster.delete('Model', 'on-broken');
      await cluster.delete('Provider', 'broken');
      await eventually(async () => (await snapshot()).providers.length === 1, 3000, 'provider deleted');
    });

    it('an invalid spec is refused with the schema message', async () => {
      await cluster.apply('Provider', 'bad-url', { baseUrl: 'not a url', protocols: ['openai'] });
      expect(await ready('Provider', 'bad-url')).toMatchObject({ status: 'False', reason: 'InvalidSpec' });
      expect((await ready('Provider', 'bad-url')).message).toMatch(/^baseUrl: /);
      await cluster.delete('Provider', 'bad-url');
    });
  });

  describe('PricingGroup', () => {
    it('an update reaches the snapshot and observedGeneration follows', async () => {
      await cluster.patchSpec('PricingGroup', 'mini', { prices: { input: '0.3', output: '1.2' } });
      await eventually(async () => (await ready('PricingGroup', 'mini')).observedGeneration === 2, 3000, 'generation 2');
      const g = (await snapshot()).pricingGroups.find((x) => x.id === 'mini')!;
      expect(g).toMatchObject({ mode: 'flat_tokens', prices: { input: '0.3', output: '1.2', cacheRead: '0', cacheWrite: '0' } });
    });

    it('tiers that do not ascend: InvalidSpec; the model on it reports PricingGroupNotReady; the rest keeps serving', async () => {
      await cluster.apply('PricingGroup', 'tiered', { mode: 'input_tokens_tiers', tiers: [{ upTo: 200, input: '1', output: '2' }, { upTo: 100, input: '1', output: '2' }, { upTo: null, input: '3', output: '4' }] });
      await cluster.apply('Model', 'tiered', { id: 'openai/tiered', pricingGroupRef: { name: 'tiered' }, upstreams: [{ protocol: 'openai', providerRef: { name: 'openai' }, model: 't' }] });
      expect(await ready('PricingGroup', 'tiered')).toMatchObject({ status: 'False', reason: 'InvalidSpec', message: 'tiers[1].upTo: tiers must be strictly ascending' });
      expect(await ready('Model', 'tiered')).toMatchObject({ status: 'False', reason: 'PricingGroupNotReady' });
      expect((await snapshot()).models.map((m) => m.id)).toEqual(['openai/gpt-4o-mini']);
      await cluster.patchSpec('PricingGroup', 'tiered', { tiers: [{ upTo: 100, input: '1', output: '2' }, { upTo: null, input: '3', output: '4' }] });
      await eventually(async () => (await ready('Model', 'tiered')).status === 'True', 3000, 'tiered model recovers');
    });

    it('deleting a group leaves its models dangling: PricingGroupNotFound', async () => {
      await cluster.delete('PricingGroup', 'tiered');
      await eventually(async () => (await ready('Model', 'tiered')).reason === 'PricingGroupNotFound', 3000, 'dangling');
      expect((await ready('Model', 'tiered')).message).toBe('PricingGroup "tiered" (spec.pricingGroupRef) not found');
      expect((await snapshot()).pricingGroups.map((g) => g.id)).toEqual(['mini']);
      expect(await warnings('tiered')).toContain('PricingGroupNotFound');
      await cluster.delete('Model', 'tiered');
    });
  });

  describe('Model', () => {
    it('creates, updates and deletes; upstreams grouped by protocol', async () => {
      await cluster.apply('Model', 'four', { id: 'openai/gpt-4o', pricingGroupRef: { name: 'mini' }, public: true, created: 1715367049, upstreams: [{ protocol: 'openai', providerRef: { name: 'openai' }, model: 'gpt-4o-2024-08-06', weight: 3 }, { protocol: 'responses', providerRef: { name: 'openai' }, model: 'gpt-4o-2024-08-06' }], capabilities: { drop: ['logit_bias'] } });
      await eventually(async () => (await ready('Model', 'four')).status === 'True', 3000);
      let m = (await snapshot()).models.find((x) => x.id === 'openai/gpt-4o')!;
      expect(m.protocols).toEqual({ openai: [{ provider: 'openai', model: 'gpt-4o-2024-08-06', weight: 3 }], responses: [{ provider: 'openai', model: 'gpt-4o-2024-08-06', weight: 1 }] });
      expect(m.capabilities.drop).toEqual(['logit_bias']);
      await cluster.patchSpec('Model', 'four', { alias: 'gpt-4o' });
      await eventually(async () => (await snapshot()).models.find((x) => x.id === 'openai/gpt-4o')?.alias === 'gpt-4o', 3000, 'alias');
      m = (await snapshot()).models.find((x) => x.id === 'openai/gpt-4o')!;
      expect(m.public).toBe(true);
      await cluster.delete('Model', 'four');
      await eventually(async () => !(await snapshot()).models.some((x) => x.id === 'openai/gpt-4o'), 3000, 'model deleted');
    });

    it('dangling provider, unserved protocol and a clashing alias each get their reason', async () => {
      await cluster.apply('Model', 'no-provider', { id: 'a/no-provider', pricingGroupRef: { name: 'mini' }, upstreams: [{ protocol: 'openai', providerRef: { name: 'ghost' }, model: 'm' }] });
      await cluster.apply('Model', 'wrong-protocol', { id: 'a/wrong-protocol', pricingGroupRef: { name: 'mini' }, upstreams: [{ protocol: 'anthropic', providerRef: { name: 'openai' }, model: 'm' }] });
      await cluster.apply('Model', 'clash', { id: 'a/clash', alias: 'gpt-4o-mini', pricingGroupRef: { name: 'mini' }, upstreams: [{ protocol: 'openai', providerRef: { name: 'openai' }, model: 'm' }] });
      await cluster.apply('Model', 'no-upstreams', { id: 'a/none', pricingGroupRef: { name: 'mini' }, upstreams: [] });
      expect(await ready('Model', 'no-provider')).toMatchObject({ status: 'False', reason: 'ProviderNotFound', message: 'Provider "ghost" (spec.upstreams[protocol=openai].providerRef) not found' });
      expect(await ready('Model', 'wrong-protocol')).toMatchObject({ status: 'False', reason: 'ProtocolNotServed', message: 'Provider "openai" does not serve protocol "anthropic" (its spec.protocols: openai, responses)' });
      expect(await ready('Model', 'clash')).toMatchObject({ status: 'False', reason: 'Conflict', message: 'alias: "gpt-4o-mini" already names models[0]' });
      expect(await ready('Model', 'no-upstreams')).toMatchObject({ status: 'False', reason: 'InvalidSpec', message: 'protocols: a model needs at least one protocol' });
      expect((await snapshot()).models.map((m) => m.id)).toEqual(['openai/gpt-4o-mini']);
      for (const n of ['no-provider', 'wrong-protocol', 'clash', 'no-upstreams']) await cluster.delete('Model', n);
    });
  });

  describe('Organization', () => {
    it('update and delete: keys of a missing organization report OrganizationNotFound and leave the snapshot', async () => {
      await cluster.apply('Organization', 'globex', { models: ['openai/*'] });
      await cluster.apply('ApiKey', 'globex-key', { organization: 'globex', project: 'research' });
      await eventually(async () => (await ready('ApiKey', 'globex-key')).status === 'True', 3000, 'globex key');
      await cluster.patchSpec('Organization', 'globex', { discount: '0.5' });
      await eventually(async () => (await snapshot()).organizations.find((o) => o.id === 'globex')?.discount === '0.5', 3000, 'discount');
      await cluster.delete('Organization', 'globex');
      await eventually(async () => (await ready('ApiKey', 'globex-key')).reason === 'OrganizationNotFound', 3000, 'org gone');
      const s = await snapshot();
      expect(s.organizations.map((o) => o.id)).toEqual(['acme']);
      expect(s.apiKeys.map((k) => k.id)).toEqual(['web']);
      await cluster.delete('ApiKey', 'globex-key');
    });

    it('an invalid discount is InvalidSpec', async () => {
      await cluster.apply('Organization', 'bad-org', { models: ['*'], discount: '-1' });
      expect(await ready('Organization', 'bad-org')).toMatchObject({ status: 'False', reason: 'InvalidSpec' });
      await cluster.delete('Organization', 'bad-org');
    });
  });

  describe('ApiKey', () => {
    it('issues a key once into a Secret the ApiKey owns; only the hash is in the snapshot; status shows Secret and prefix', async () => {
      const c = await ready('ApiKey', 'web');
      expect(c).toMatchObject({ status: 'True', reason: 'Issued' });
      const r = (await cluster.get('ApiKey', 'web'))!;
      expect(r.metadata.finalizers).toContain(FINALIZER);
      const key = (await cluster.secret('web-key'))!.key;
      expect(r.status).toMatchObject({ secretName: 'web-key', prefix: key.slice(0, 14) });
      const secret = await cluster.core.readNamespacedSecret({ namespace: NS, name: 'web-key' });
      expect(secret.metadata?.ownerReferences).toEqual([expect.objectContaining({ kind: 'ApiKey', name: 'web', uid: r.metadata.uid, controller: true })]);
      const entry = (await snapshot()).apiKeys.find((k) => k.id === 'web')!;
      expect(entry).toMatchObject({ hash: hashApiKey(key), prefix: key.slice(0, 14), organization: 'acme', project: 'web', name: 'Web', disabled: false });
      // An update never regenerates the key.
      await cluster.patchSpec('ApiKey', 'web', { displayName: 'Web app' });
      await eventually(async () => (await snapshot()).apiKeys.find((k) => k.id === 'web')?.name === 'Web app', 3000, 'renamed');
      expect((await cluster.secret('web-key'))!.key).toBe(key);
    });

    it('disabled: stays in the snapshot as disabled, Ready=False Disabled', async () => {
      await cluster.patchSpec('ApiKey', 'web', { disabled: true });
      await eventually(async () => (await snapshot()).apiKeys.find((k) => k.id === 'web')?.disabled === true, 3000, 'disabled');
      expect(await ready('ApiKey', 'web')).toMatchObject({ status: 'False', reason: 'Disabled' });
      await cluster.patchSpec('ApiKey', 'web', { disabled: false });
      await eventually(async () => (await ready('ApiKey', 'web')).reason === 'Issued', 3000, 're-enabled');
    });

    it('expiry: Ready turns False when the moment passes, without any edit', async () => {
      const at = new Date(Date.now() + 700).toISOString();
      await cluster.apply('ApiKey', 'short', { organization: 'acme', project: 'web', expiresAt: at });
      await eventually(async () => (await ready('ApiKey', 'short')).reason === 'Issued', 3000, 'issued');
      expect((await snapshot()).apiKeys.find((k) => k.id === 'short')?.expiresAt).toBe(at);
      await eventually(async () => (await ready('ApiKey', 'short')).reason === 'Expired', 3000, 'expired');
      await cluster.delete('ApiKey', 'short');
    });

    it('deleting the key Secret rotates the key: a new one is issued and the old hash leaves the snapshot', async () => {
      const old = (await cluster.secret('web-key'))!.key;
      await cluster.deleteSecret('web-key');
      const fresh = await eventually(async () => {
        const k = (await cluster.secret('web-key'))?.key;
        return k && k !== old ? k : undefined;
      }, 3000, 'new key');
      await eventually(async () => (await snapshot()).apiKeys.find((k) => k.id === 'web')?.hash === hashApiKey(fresh), 3000, 'new hash');
      expect(JSON.stringify(await snapshot())).not.toContain(hashApiKey(old));
      expect((await cluster.get('ApiKey', 'web'))!.status?.prefix).toBe(fresh.slice(0, 14));
    });

    it('a Secret of that name it does not own: SecretConflict, never overwritten', async () => {
      await cluster.putSecret('taken-key', { key: 'mine' });
      await cluster.apply('ApiKey', 'taken', { organization: 'acme', project: 'web' });
      expect(await ready('ApiKey', 'taken')).toMatchObject({ status: 'False', reason: 'SecretConflict' });
      expect((await cluster.secret('taken-key'))!.key).toBe('mine');
      await cluster.delete('ApiKey', 'taken');
    });

    it('an invalid project is InvalidSpec; a missing organization OrganizationNotFound', async () => {
      await cluster.apply('ApiKey', 'bad-project', { organization: 'acme', project: 'Not A Slug' });
      await cluster.apply('ApiKey', 'no-org', { organization: 'initech', project: 'x' });
      expect(await eventually(async () => ((await ready('ApiKey', 'bad-project')).reason === 'InvalidSpec' ? true : undefined), 3000)).toBe(true);
      expect(await ready('ApiKey', 'no-org')).toMatchObject({ status: 'False', reason: 'OrganizationNotFound', message: 'Organization "initech" (spec.organization) not found' });
      expect((await snapshot()).apiKeys.map((k) => k.id)).toEqual(['web']);
      await cluster.delete('ApiKey', 'bad-project');
      await cluster.delete('ApiKey', 'no-org');
    });

    it('delete: the finalizer holds the object until the snapshot without it is written; then the Secret is collected', async () => {
      await cluster.apply('ApiKey', 'doomed', { organization: 'acme', project: 'web' });
      await eventually(async () => (await ready('ApiKey', 'doomed')).reason === 'Issued', 3000, 'issued');
      await eventually(async () => (await snapshot()).apiKeys.some((k) => k.id === 'doomed'), 3000, 'in snapshot');
      const writesBefore = controller.stats.snapshotWrites;
      await cluster.delete('ApiKey', 'doomed');
      await eventually(async () => (await cluster.get('ApiKey', 'doomed')) === undefined, 3000, 'ApiKey gone');
      expect(controller.stats.snapshotWrites).toBeGreaterThan(writesBefore);
      expect((await snapshot()).apiKeys.some((k) => k.id === 'doomed')).toBe(false);
      await eventually(async () => (await cluster.secret('doomed-key')) === undefined, 3000, 'Secret collected');
    });

    it('a revocation is not lost while the operator is down: the finalizer keeps the ApiKey until it runs again', async () => {
      await cluster.apply('ApiKey', 'while-down', { organization: 'acme', project: 'web' });
      await eventually(async () => (await snapshot()).apiKeys.some((k) => k.id === 'while-down'), 3000, 'in snapshot');
      await eventually(async () => (await cluster.get('ApiKey', 'while-down'))?.metadata.finalizers?.includes(FINALIZER), 3000, 'finalizer');
      await controller.stop();
      await cluster.delete('ApiKey', 'while-down');
      await new Promise((r) => setTimeout(r, 200));
      expect((await cluster.get('ApiKey', 'while-down'))?.metadata.deletionTimestamp).toBeTruthy();
      controller = new Controller({ client: new KubeClient(api.kubeConfig(NS), NS), informer: { backoffBaseMs: 50, backoffMaxMs: 500 } });
      await controller.start();
      await eventually(async () => (await cluster.get('ApiKey', 'while-down')) === undefined, 3000, 'released after restart');
      expect((await snapshot()).apiKeys.some((k) => k.id === 'while-down')).toBe(false);
    });
  });

  it('level-triggered and idempotent: a settled world causes no writes, even after a full relist', async () => {
    await settle();
    const { snapshotWrites, statusWrites } = controller.stats;
    const before = api.stats.writes;
    for (const i of [...Object.values(controller.informers), controller.secrets]) i.relist();
    await new Promise((r) => setTimeout(r, 300));
    await settle();
    expect(controller.stats.snapshotWrites).toBe(snapshotWrites);
    expect(controller.stats.statusWrites).toBe(statusWrites);
    expect(api.stats.writes).toBe(before);
  });

  it('a restart reconciles only once every first list is in: a slow Secret list neither re-issues keys nor empties the snapshot', async () => {
    await settle();
    const keys = (await snapshot()).apiKeys.map((k) => k.id).sort();
    expect(keys.length).toBeGreaterThan(0);
    await controller.stop();
    const before = api.stats.writes;
    // The ApiKeys arrive at once, their key Secrets half a second later (a large namespace under load).
    api.delay = ({ method, path, watch }) => (method === 'GET' && !watch && path.endsWith('/secrets') ? 500 : 0);
    try {
      controller = new Controller({ client: new KubeClient(api.kubeConfig(NS), NS), informer: { backoffBaseMs: 50, backoffMaxMs: 500 } });
      await controller.start();
      await settle();
    } finally {
      api.delay = undefined;
    }
    expect(controller.stats.keysIssued).toBe(0);
    expect(controller.stats.statusWrites).toBe(0);
    expect(controller.stats.snapshotWrites).toBe(0);
    expect(api.stats.writes).toBe(before);
    expect((await snapshot()).apiKeys.map((k) => k.id).sort()).toEqual(keys);
  });
});
