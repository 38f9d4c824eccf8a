// Limits and budgets on the CRDs: validated as the API server would (schema + CEL), compiled into the snapshot.
import { describe, expect, it } from 'vitest';
import { generateApiKey } from '../../gateway/auth/api-key.ts';
import { compileSnapshot } from '../../gateway/snapshot/runtime.ts';
import { snapshotSchema } from '../../gateway/snapshot/schema.ts';
import { Compiler } from '../../operator/compile.ts';
import type { World } from '../../operator/compile.ts';
import type { ApiKeySpec, OrganizationSpec, Resource } from '../../operator/kinds.ts';
import { CrdValidator } from '../support/crd-validator.ts';

const validator = CrdValidator.fromDirectory('crds');
const org = (spec: Record<string, unknown>) => ({ apiVersion: 'tollgate.dev/v1alpha1', kind: 'Organization', metadata: { name: 'acme' }, spec: { models: ['*'], ...spec } });
const key = (spec: Record<string, unknown>) => ({ apiVersion: 'tollgate.dev/v1alpha1', kind: 'ApiKey', metadata: { name: 'k' }, spec: { organization: 'acme', project: 'web', ...spec } });

describe('limits on the CRDs', () => {
  it('accepts limits, budgets and projects', () => {
    expect(validator.validate(org({ limits: { rpm: 100, models: [{ model: 'gpt-4o', rpm: 10 }] }, budget: { month: '5000', softPercent: 80 }, projects: [{ id: 'web', limits: { concurrency: 4 }, budget: { day: '12.5' } }] }))).toEqual([]);
    expect(validator.validate(key({ limits: { tpm: 50000 }, budget: { total: '100' } }))).toEqual([]);
  });

  it('refuses empty or malformed ones with a clear message', () => {
    expect(validator.validate(org({ budget: { softPercent: 80 } })).join()).toContain('set at least one of day, month, total');
    expect(validator.validate(org({ limits: {} })).join()).toContain('set at least one of rpm, tpm, concurrency, models');
    expect(validator.validate(key({ limits: { models: [{ model: 'x' }] } })).join()).toContain('set at least one of rpm, tpm, concurrency');
    expect(validator.validate(key({ budget: { day: 2.5 } })).length).toBeGreaterThan(0);
    expect(validator.validate(key({ limits: { rpm: 0 } })).length).toBeGreaterThan(0);
  });

  it('the operator compiles them into the snapshot the gateway governs by', () => {
    const k = generateApiKey();
    const meta = (name: string) => ({ name, uid: `uid-${name}`, resourceVersion: '1', generation: 1 });
    const orgs: Resource<OrganizationSpec>[] = [{ metadata: meta('acme'), spec: { models: ['*'], limits: { rpm: 100 }, budget: { month: '5000' }, projects: [{ id: 'web', limits: { concurrency: 4 } }] } }];
    const keys: Resource<ApiKeySpec>[] = [{ metadata: meta('k'), spec: { organization: 'acme', project: 'web', limits: { tpm: 50000 }, budget: { total: '100' } } }];
    const world: World = {
      providers: [],
      pricingGroups: [],
      models: [],
      organizations: orgs,
      apiKeys: () => keys.values(),
      apiKey: (n) => keys.find((x) => x.metadata.name === n),
      secret: (n) => (n === 'k-key' ? { metadata: { name: 'k-key', ownerReferences: [{ apiVersion: 'tollgate.dev/v1alpha1', kind: 'ApiKey', name: 'k', uid: 'uid-k' }] }, data: { key: Buffer.from(k.key).toString('base64') } } : undefined),
    };
    const c = new Compiler().compile(world, Date.now());
    const snapshot = snapshotSchema.parse({ ...c.base, apiKeys: [...c.keys.values()] });
    expect(snapshot.organizations[0]).toMatchObject({ limits: { rpm: 100 }, budget: { month: '5000' }, projects: [{ id: 'web', limits: { concurrency: 4 } }] });
    expect(snapshot.apiKeys[0]).toMatchObject({ limits: { tpm: 50000 }, budget: { total: '100' } });
    const rules = compileSnapshot(snapshot).keysByHash.get(k.hash)!.governance!.rules.map((r) => `${r.scope}:${r.kind}${r.period ? ':' + r.period : ''}`);
    expect(rules).toEqual(['key:tpm', 'key:budget:total', 'project:concurrency', 'organization:rpm', 'organization:budget:month']);
  });
});
