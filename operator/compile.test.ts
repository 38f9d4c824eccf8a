// The incremental compile is an optimisation only: after any sequence of changes, compiling just the ApiKeys
// named as changed gives exactly what compiling everything from scratch gives.
import { describe, expect, it } from 'vitest';
import { generateApiKey } from '../gateway/auth/api-key.ts';
import type { Compiled, World } from './compile.ts';
import { Compiler } from './compile.ts';
import type { ApiKeySpec, OrganizationSpec, Resource, SecretObject } from './kinds.ts';

let rv = 0;
const meta = (name: string) => ({ name, uid: `uid-${name}-${++rv}`, resourceVersion: String(++rv), generation: 1 });

class FakeWorld {
  readonly orgs = new Map<string, Resource<OrganizationSpec>>();
  readonly keys = new Map<string, Resource<ApiKeySpec>>();
  readonly secrets = new Map<string, SecretObject>();
  /** Key-secret values by ApiKey name, to make two ApiKeys share one key. */
  readonly values = new Map<string, string>();

  view(): World {
    return {
      providers: [],
      pricingGroups: [],
      models: [],
      organizations: [...this.orgs.values()],
      apiKeys: () => this.keys.values(),
      apiKey: (name) => this.keys.get(name),
      secret: (name) => this.secrets.get(name),
    };
  }

  org(name: string, deleted = false): void {
    if (deleted) this.orgs.delete(name);
    else this.orgs.set(name, { metadata: meta(name), spec: { models: ['*'] } });
  }

  key(name: string, spec: ApiKeySpec): void {
    const old = this.keys.get(name);
    const m = old ? { ...old.metadata, resourceVersion: String(++rv), generation: (old.metadata.generation ?? 1) + 1 } : meta(name);
    this.keys.set(name, { metadata: m, spec });
  }

  secret(name: string, value = generateApiKey().key, owner = this.keys.get(name)): void {
    this.values.set(name, value);
    this.secrets.set(`${name}-key`, { metadata: { ...meta(`${name}-key`), ownerReferences: owner ? [{ apiVersion: 'tollgate.dev/v1alpha1', kind: 'ApiKey', name, uid: owner.metadata.uid! }] : [] }, data: { key: Buffer.from(value).toString('base64') } });
  }
}

function keyView(c: Compiled) {
  return {
    keys: Object.fromEntries([...c.keys].sort()),
    generations: Object.fromEntries([...c.keyGenerations].sort()),
    verdicts: Object.fromEntries([...c.verdicts].filter(([ref]) => ref.startsWith('ApiKey/')).sort()),
    needsKeySecret: c.needsKeySecret.map((r) => r.metadata.name).sort(),
    deleting: c.deleting.map((r) => r.metadata.name).sort(),
    nextExpiry: c.nextExpiry,
  };
}

describe('incremental compile', () => {
  it('equals a full compile after every change, whatever the change', () => {
    const w = new FakeWorld();
    const now = Date.parse('2026-11-22T10:00:00Z');
    w.org('acme');
    w.org('globex');
    for (let i = 0; i < 12; i++) {
      w.key(`k${i}`, { organization: i % 3 === 0 ? 'globex' : 'acme', project: 'web' });
      w.secret(`k${i}`);
    }
    const incremental = new Compiler();
    incremental.compile(w.view(), now);
    // Each step changes the world and names what an informer would have reported.
    const steps: [string, () => string[]][] = [
      ['disable', () => (w.key('k1', { organization: 'acme', project: 'web', disabled: true }), ['k1'])],
      ['invalid project', () => (w.key('k2', { organization: 'acme', project: 'Not A Slug' }), ['k2'])],
      ['fix it', () => (w.key('k2', { organization: 'acme', project: 'web' }), ['k2'])],
      ['expiring soon', () => (w.key('k4', { organization: 'acme', project: 'web', expiresAt: new Date(now + 1000).toISOString() }), ['k4'])],
      ['new key, no Secret yet', () => (w.key('k20', { organization: 'acme', project: 'web' }), ['k20'])],
      ['its Secret', () => (w.secret('k20'), ['k20'])],
      ['a second ApiKey with the same key', () => (w.key('k21', { organization: 'acme', project: 'web' }), w.secret('k21', w.values.get('k5')), ['k21'])],
      ['the first one goes', () => (w.keys.delete('k5'), ['k5'])],
      ['a Secret of an earlier ApiKey of that name', () => (w.key('k22', { organization: 'acme', project: 'web' }), w.secret('k22', undefined, w.keys.get('k0')), ['k22'])],
      ['a garbled Secret', () => (w.secrets.set('k6-key', { ...w.secrets.get('k6-key')!, metadata: { ...w.secrets.get('k6-key')!.metadata, resourceVersion: String(++rv) }, data: { key: 'eA==' } }), ['k6'])],
      ['deleting', () => (w.keys.set('k7', { ...w.keys.get('k7')!, metadata: { ...w.keys.get('k7')!.metadata, resourceVersion: String(++rv), deletionTimestamp: new Date(now).toISOString() } }), ['k7'])],
      ['deleted', () => (w.keys.delete('k7'), w.secrets.delete('k7-key'), ['k7'])],
      ['an organization goes', () => (w.org('globex', true), [])],
      ['and comes back', () => (w.org('globex'), [])],
      ['rotated key', () => (w.secret('k8'), ['k8'])],
    ];
    let later = now;
    for (const [what, step] of steps) {
      const dirty = step();
      later += 600; // k4's expiry passes on the way, without an event
      const got = keyView(incremental.compile(w.view(), later, dirty));
      const want = keyView(new Compiler().compile(w.view(), later));
      expect(got, what).toEqual(want);
    }
    const last = keyView(new Compiler().compile(w.view(), later));
    expect(last.verdicts['ApiKey/k4'].reason).toBe('Expired');
    expect(last.verdicts['ApiKey/k21'].reason).toBe('Issued');
    expect(last.verdicts['ApiKey/k22'].reason).toBe('Issuing');
    expect(last.verdicts['ApiKey/k6'].reason).toBe('InvalidKeySecret');
  });

  it('names the keys whose entry changed, so the writer rewrites their shards only', () => {
    const w = new FakeWorld();
    w.org('acme');
    for (const n of ['a', 'b', 'c']) {
      w.key(n, { organization: 'acme', project: 'web' });
      w.secret(n);
    }
    const c = new Compiler();
    expect(c.compile(w.view(), 0).changedKeys).toBeUndefined();
    expect([...c.compile(w.view(), 0, []).changedKeys!]).toEqual([]);
    w.key('b', { organization: 'acme', project: 'web', disabled: true });
    expect([...c.compile(w.view(), 0, ['b', 'c']).changedKeys!]).toEqual(['b']);
    // The echo of a status write (a new resourceVersion, the same generation) changes no entry.
    const a = w.keys.get('a')!;
    w.keys.set('a', { ...a, metadata: { ...a.metadata, resourceVersion: String(++rv) }, status: { observedGeneration: 1 } });
    expect([...c.compile(w.view(), 0, ['a']).changedKeys!]).toEqual([]);
    // The organizations changed: every key is compiled again (a full pass).
    w.org('globex');
    expect(c.compile(w.view(), 0, []).changedKeys).toBeUndefined();
  });
});

describe('routing policy', () => {
  it('Provider and Model spec.routing compile into the snapshot; a fallback naming no model marks the Model invalid', () => {
    const world = (fallback: string): World => ({
      providers: [{ metadata: meta('p1'), spec: { baseUrl: 'http://127.0.0.1:1/v1', protocols: ['openai', 'anthropic'], maxResponseBytes: 1024, routing: { maxAttempts: 4, ejectAfter: 2, ejectFailurePercent: 30, ejectMinRequests: 40, ejectWindowMs: 5000 } } }],
      pricingGroups: [{ metadata: meta('g1'), spec: { mode: 'flat_tokens', prices: { input: '1', output: '2' } } }],
      models: [
        { metadata: meta('m1'), spec: { id: 'vendor/claude', pricingGroupRef: { name: 'g1' }, upstreams: [{ protocol: 'anthropic', providerRef: { name: 'p1' }, model: 'claude' }], routing: { maxAttempts: 2, fallbacks: [fallback] } } },
        { metadata: meta('m2'), spec: { id: 'vendor/gpt', pricingGroupRef: { name: 'g1' }, upstreams: [{ protocol: 'openai', providerRef: { name: 'p1' }, model: 'gpt' }] } },
      ],
      organizations: [],
      apiKeys: () => [],
      apiKey: () => undefined,
      secret: () => undefined,
    });
    const ok = new Compiler().compile(world('vendor/gpt'), Date.now());
    expect(ok.base.providers[0]).toMatchObject({ maxResponseBytes: 1024, routing: { maxAttempts: 4, ejectAfter: 2, ejectFailurePercent: 30, ejectMinRequests: 40, ejectWindowMs: 5000 } });
    expect(ok.base.models.find((m) => m.id === 'vendor/claude')?.routing).toEqual({ maxAttempts: 2, fallbacks: ['vendor/gpt'] });
    const bad = new Compiler().compile(world('vendor/none'), Date.now());
    expect(bad.verdicts.get('Model/m1')).toMatchObject({ included: false, message: expect.stringMatching(/unknown model "vendor\/none"/) });
  });
});
