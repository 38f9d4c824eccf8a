// The tollgate.dev CRDs: generated from crds/src without drift, structural, documented, and catching mistakes at
// `kubectl apply` time (OpenAPI schema with ajv, CEL rules with a real CEL interpreter: test/support/crd-validator.ts).
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CustomResourceDefinition } from 'kubernetes-models/apiextensions.k8s.io/v1';
import { Secret } from 'kubernetes-models/v1';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml, parseAllDocuments } from 'yaml';
import { KINDS, generateCrds } from '../../crds/src/index.ts';
import { compileRule, CrdValidator, type CustomResource } from '../support/crd-validator.ts';

const validator = CrdValidator.fromDirectory('crds');
const generated = generateCrds();

interface Node {
  type?: string;
  description?: string;
  properties?: Record<string, Node>;
  additionalProperties?: Node | boolean;
  items?: Node;
  required?: string[];
  maxItems?: number;
  maxLength?: number;
  enum?: unknown[];
  format?: string;
  'x-kubernetes-validations'?: { rule: string; message: string }[];
  'x-kubernetes-list-type'?: string;
  'x-kubernetes-list-map-keys'?: string[];
  [key: string]: unknown;
}

function crdObjects(): Record<string, unknown>[] {
  return [...generated.values()].map((text) => parseYaml(text) as Record<string, unknown>);
}

function rootSchema(crd: Record<string, unknown>): Node {
  return (crd.spec as { versions: { schema: { openAPIV3Schema: Node } }[] }).versions[0].schema.openAPIV3Schema;
}

function walk(node: Node, path: string, visit: (node: Node, path: string) => void): void {
  visit(node, path);
  for (const [k, child] of Object.entries(node.properties ?? {})) walk(child, `${path}.${k}`, visit);
  if (node.items) walk(node.items, `${path}[]`, visit);
  if (typeof node.additionalProperties === 'object') walk(node.additionalProperties, `${path}{}`, visit);
}

function docs(file: string): CustomResource[] {
  return parseAllDocuments(readFileSync(file, 'utf8')).map((d) => d.toJS() as CustomResource).filter(Boolean);
}

const exampleFiles = readdirSync('examples/k8s').filter((f) => f.endsWith('.yaml')).map((f) => join('examples/k8s', f));
const examples = exampleFiles.flatMap(docs);
// Placeholder Secrets live one level down, so `kubectl apply -f examples/k8s/` never overwrites real ones.
const exampleSecrets = docs('examples/k8s/secrets/provider-credentials.yaml');
const crs = examples.filter((d) => d.apiVersion === 'tollgate.dev/v1alpha1');
const ofKind = (kind: string) => crs.filter((d) => d.kind === kind) as (CustomResource & { spec: Record<string, never> })[];

describe('generation', () => {
  it('the committed crds/*.yaml are exactly what `npm run crds` writes', () => {
    const committed = readdirSync('crds').filter((f) => f.endsWith('.yaml')).sort();
    expect(committed).toEqual([...generated.keys()].sort());
    for (const [name, text] of generated) expect(readFileSync(join('crds', name), 'utf8'), name).toBe(text);
  });

  it('the tollgate-crds chart installs byte-identical copies', () => {
    const dir = 'charts/tollgate-crds/templates';
    const inChart = readdirSync(dir).filter((f) => f.endsWith('.yaml')).sort();
    expect(inChart).toEqual([...generated.keys()].sort());
    for (const name of inChart) expect(readFileSync(join(dir, name), 'utf8'), name).toBe(readFileSync(join('crds', name), 'utf8'));
  });

  it('holds nothing Helm would take for a template action', () => {
    for (const text of generated.values()) expect(text).not.toMatch(/\{\{|\}\}/);
  });

  it('names the files tollgate.dev_<plural>.yaml, one per kind', () => {
    expect([...generated.keys()].sort()).toEqual(['tollgate.dev_apikeys.yaml', 'tollgate.dev_models.yaml', 'tollgate.dev_organizations.yaml', 'tollgate.dev_pricinggroups.yaml', 'tollgate.dev_providers.yaml']);
  });
});

describe('the CRDs as the API server sees them', () => {
  it.each(crdObjects().map((c) => [(c.metadata as { name: string }).name, c]))('%s is a valid apiextensions.k8s.io/v1 CRD', (_name, crd) => {
    expect(() => new CustomResourceDefinition(crd as never).validate()).not.toThrow();
  });

  it('is a structural schema: every node typed, no properties beside additionalProperties, no forbidden keywords', () => {
    for (const crd of crdObjects()) {
      walk(rootSchema(crd), (crd.metadata as { name: string }).name, (node, path) => {
        expect(node.type, `${path} has a type`).toMatch(/^(object|array|string|integer|number|boolean)$/);
        expect(node.properties && node.additionalProperties, `${path}: properties and additionalProperties`).toBeFalsy();
        for (const forbidden of ['$ref', 'uniqueItems', 'oneOf', 'anyOf', 'allOf', 'not', 'definitions']) expect(node, `${path}: ${forbidden}`).not.toHaveProperty(forbidden);
        if (node.type === 'array') expect(node.items, `${path} declares its items`).toBeDefined();
        if (node['x-kubernetes-list-type'] === 'map') {
          for (const key of node['x-kubernetes-list-map-keys'] ?? []) expect(node.items?.required, `${path}: map key ${key} is required`).toContain(key);
        }
        if (node['x-kubernetes-list-type'] === 'set') expect(['string', 'integer', 'number', 'boolean']).toContain(node.items?.type);
      });
    }
  });

  it('documents every field (kubectl explain)', () => {
    for (const crd of crdObjects()) {
      walk(rootSchema(crd), (crd.metadata as { name: string }).name, (node, path) => {
        expect(node.description?.length ?? 0, `${path} has a description`).toBeGreaterThan(8);
      });
    }
  });

  it('bounds every list and every string a CEL rule reads, so the API server can bound the rule cost', () => {
    for (const crd of crdObjects()) {
      walk(rootSchema(crd), '', (node, path) => {
        if (path.startsWith('.metadata')) return;
        if (node.type === 'array') expect(node.maxItems, `${path} maxItems`).toBeGreaterThan(0);
        if (!node['x-kubernetes-validations']) return;
        walk(node, path, (inner, p) => {
          if (inner.type === 'string') expect(inner.maxLength ?? inner.enum ?? inner.format, `${p} bounded`).toBeDefined();
        });
      });
    }
  });

  it('every CEL rule parses, and carries a message', () => {
    let rules = 0;
    for (const crd of crdObjects()) {
      walk(rootSchema(crd), '', (node) => {
        for (const r of node['x-kubernetes-validations'] ?? []) {
          expect(() => compileRule(r.rule), r.rule).not.toThrow();
          expect(r.message.length).toBeGreaterThan(10);
          rules++;
        }
      });
    }
    expect(rules).toBeGreaterThanOrEqual(9);
  });

  it('every kind: namespaced, category tollgate, a short name, a status subresource with observedGeneration and conditions', () => {
    const shortNames = new Set<string>();
    for (const crd of crdObjects()) {
      const spec = crd.spec as { scope: string; names: { categories: string[]; shortNames: string[] }; versions: { subresources: unknown; schema: { openAPIV3Schema: Node } }[] };
      expect(spec.scope).toBe('Namespaced');
      expect(spec.names.categories).toEqual(['tollgate']);
      expect(spec.names.shortNames.length).toBeGreaterThan(0);
      for (const s of spec.names.shortNames) {
        expect(shortNames.has(s)).toBe(false);
        shortNames.add(s);
      }
      expect(spec.versions[0].subresources).toEqual({ status: {} });
      const status = spec.versions[0].schema.openAPIV3Schema.properties!.status;
      expect(Object.keys(status.properties!)).toEqual(expect.arrayContaining(['observedGeneration', 'conditions']));
      const condition = status.properties!.conditions.items!;
      expect(condition.required).toEqual(['type', 'status', 'lastTransitionTime', 'reason', 'message']);
      expect(status.properties!.conditions['x-kubernetes-list-map-keys']).toEqual(['type']);
    }
  });

  it('ApiKey status carries the Secret name and the display prefix', () => {
    const apiKey = crdObjects().find((c) => (c.metadata as { name: string }).name === 'apikeys.tollgate.dev')!;
    expect(Object.keys(rootSchema(apiKey).properties!.status.properties!)).toEqual(expect.arrayContaining(['secretName', 'prefix']));
  });

  it('kubectl get models shows ID, PROTOCOLS, PRICING, READY, AGE; kubectl get apikeys shows ORG, PROJECT, PREFIX, READY', () => {
    const defaultColumns = (plural: string) => {
      const crd = crdObjects().find((c) => (c.metadata as { name: string }).name === `${plural}.tollgate.dev`)!;
      const cols = (crd.spec as { versions: { additionalPrinterColumns: { name: string; priority?: number }[] }[] }).versions[0].additionalPrinterColumns;
      return cols.filter((c) => !c.priority).map((c) => c.name.toUpperCase());
    };
    expect(defaultColumns('models')).toEqual(['ID', 'PROTOCOLS', 'PRICING', 'READY', 'AGE']);
    expect(defaultColumns('apikeys')).toEqual(['ORG', 'PROJECT', 'PREFIX', 'READY', 'AGE']);
    for (const plural of ['providers', 'pricinggroups', 'organizations']) expect(defaultColumns(plural)).toEqual(expect.arrayContaining(['READY', 'AGE']));
  });

  it('every printer column reads a field the schema declares', () => {
    for (const crd of crdObjects()) {
      const version = (crd.spec as { versions: { additionalPrinterColumns: { jsonPath: string }[] }[] }).versions[0];
      for (const { jsonPath } of version.additionalPrinterColumns) {
        if (jsonPath === '.metadata.creationTimestamp') continue;
        let node: Node | undefined = rootSchema(crd);
        for (const part of jsonPath.replace(/\[\?\(.*?\)\]/g, '[]').split('.').slice(1)) {
          const [field, index] = [part.replace('[]', ''), part.endsWith('[]')];
          node = node?.properties?.[field];
          if (index) node = node?.items;
        }
        expect(node, `${jsonPath} in ${(crd.metadata as { name: string }).name}`).toBeDefined();
      }
    }
  });
});

describe('the ADR shapes', () => {
  it('accepts every example in docs/adr/0005-kubernetes-api.md as written', () => {
    const adr = readFileSync('docs/adr/0005-kubernetes-api.md', 'utf8');
    const block = /```yaml\n([\s\S]*?)```/.exec(adr)![1];
    const adrDocs = parseAllDocuments(block).map((d) => d.toJS() as CustomResource);
    expect(adrDocs.map((d) => d.kind)).toEqual(['Provider', 'PricingGroup', 'Model', 'Organization', 'ApiKey']);
    for (const d of adrDocs) {
      // The ADR writes apiVersion once, and status with placeholders ("..."): the spec is what users write.
      const { status: _status, ...rest } = d;
      expect(validator.validate({ ...rest, apiVersion: 'tollgate.dev/v1alpha1' }), d.kind).toEqual([]);
    }
  });
});

describe('examples/k8s', () => {
  it('holds every kind, two organizations, both pricing modes', () => {
    expect(new Set(crs.map((d) => d.kind))).toEqual(new Set(KINDS.map((k) => k.kind)));
    expect(ofKind('Organization')).toHaveLength(2);
    expect(new Set(ofKind('PricingGroup').map((g) => g.spec.mode))).toEqual(new Set(['flat_tokens', 'input_tokens_tiers']));
  });

  it.each(crs.map((d) => [`${d.kind}/${d.metadata!.name}`, d]))('%s validates against its CRD (schema and CEL rules)', (_name, cr) => {
    expect(validator.validate(cr)).toEqual([]);
  });

  it('hold no Secret (placeholders live in examples/k8s/secrets/), and those placeholders are valid v1 Secrets', () => {
    expect(examples.filter((d) => d.kind === 'Secret')).toEqual([]);
    const secrets = exampleSecrets;
    expect(secrets.length).toBeGreaterThan(0);
    expect(secrets.every((s) => s.kind === 'Secret')).toBe(true);
    for (const s of secrets) expect(() => new Secret(s as never).validate()).not.toThrow();
  });

  it('every reference resolves inside the examples, and every upstream protocol is one its Provider speaks', () => {
    const names = (kind: string) => new Set(ofKind(kind).map((d) => d.metadata!.name));
    const providers = new Map(ofKind('Provider').map((p) => [p.metadata!.name, p.spec as unknown as { protocols: string[]; credentials: { secretRef: { name: string; key: string } } }]));
    const secrets = new Map(exampleSecrets.map((s) => [s.metadata!.name, s as unknown as { stringData: Record<string, string> }]));
    for (const [name, p] of providers) expect(secrets.get(p.credentials.secretRef.name)?.stringData[p.credentials.secretRef.key], `${name} credential`).toBeDefined();
    for (const m of ofKind('Model')) {
      const spec = m.spec as unknown as { pricingGroupRef: { name: string }; upstreams: { protocol: string; providerRef: { name: string } }[] };
      expect(names('PricingGroup').has(spec.pricingGroupRef.name), `${m.metadata!.name} pricing`).toBe(true);
      for (const u of spec.upstreams) expect(providers.get(u.providerRef.name)?.protocols, `${m.metadata!.name} → ${u.providerRef.name}`).toContain(u.protocol);
    }
    for (const k of ofKind('ApiKey')) expect(names('Organization').has((k.spec as unknown as { organization: string }).organization)).toBe(true);
  });

  it('mirror the standalone examples/tollgate.yaml: same models, prices and organizations', () => {
    const file = parseYaml(readFileSync('examples/tollgate.yaml', 'utf8')) as {
      models: { id: string; alias?: string; pricingGroup: string; public?: boolean }[];
      pricingGroups: { id: string; mode: string; prices?: unknown; tiers?: { upTo: number | null }[] }[];
      organizations: { id: string; models: string[]; discount?: string }[];
    };
    const models = ofKind('Model').map((m) => m.spec as unknown as { id: string; alias?: string; pricingGroupRef: { name: string }; public?: boolean });
    expect(models.map((m) => [m.id, m.alias, m.pricingGroupRef.name, m.public ?? false]).sort()).toEqual(file.models.map((m) => [m.id, m.alias, m.pricingGroup, m.public ?? false]).sort());
    const groups = new Map(ofKind('PricingGroup').map((g) => [g.metadata!.name, g.spec as unknown as { mode: string; prices?: unknown; tiers?: { upTo?: number }[] }]));
    for (const g of file.pricingGroups) {
      const cr = groups.get(g.id)!;
      expect(cr.mode, g.id).toBe(g.mode);
      if (g.prices) expect(cr.prices, g.id).toEqual(g.prices);
      if (g.tiers) expect(cr.tiers!.map((t) => t.upTo ?? null)).toEqual(g.tiers.map((t) => t.upTo));
    }
    expect(ofKind('Organization').map((o) => [o.metadata!.name, o.spec.models, o.spec.discount]).sort()).toEqual(file.organizations.map((o) => [o.id, o.models, o.discount]).sort());
  });
});

describe('examples/k8s/invalid: rejected at apply time with the expected message', () => {
  const dir = 'examples/k8s/invalid';
  const cases = readdirSync(dir).filter((f) => f.endsWith('.yaml'));

  it('covers every CEL rule family and the schema basics', () => {
    expect(cases.length).toBeGreaterThanOrEqual(15);
  });

  it.each(cases)('%s', (file) => {
    const text = readFileSync(join(dir, file), 'utf8');
    const expected = /^# expect: (.+)$/m.exec(text)?.[1];
    expect(expected, 'the file states its expected error').toBeDefined();
    const [cr] = docs(join(dir, file));
    const errors = validator.validate(cr);
    expect(errors.length, errors.join('\n')).toBeGreaterThan(0);
    expect(errors.some((e) => e.startsWith(expected!)), `got:\n${errors.join('\n')}`).toBe(true);
  });
});

describe('CEL rules', () => {
  const tiers = (...bounds: (number | null | undefined)[]) => ({
    apiVersion: 'tollgate.dev/v1alpha1',
    kind: 'PricingGroup',
    metadata: { name: 'g' },
    spec: { mode: 'input_tokens_tiers', tiers: bounds.map((upTo) => (upTo === undefined ? { input: '1', output: '2' } : { upTo, input: '1', output: '2' })) },
  });

  it('tiers: one unbounded tier alone is valid; null and omitted upTo mean the same (null reads as absent)', () => {
    expect(validator.validate(tiers(undefined))).toEqual([]);
    expect(validator.validate(tiers(null))).toEqual([]);
    expect(validator.validate(tiers(1000, 2000, null))).toEqual([]);
    expect(validator.validate(tiers(1000, 2000, undefined))).toEqual([]);
  });

  it('tiers: descending, repeated, bounded last or unbounded middle are each reported', () => {
    expect(validator.validate(tiers(2000, 1000, undefined))).toEqual(['spec.tiers: Invalid value: "array": tier bounds (upTo) must be strictly ascending']);
    expect(validator.validate(tiers(1000, 1000, undefined))).toEqual(['spec.tiers: Invalid value: "array": tier bounds (upTo) must be strictly ascending']);
    expect(validator.validate(tiers(1000, 2000))).toEqual(['spec.tiers: Invalid value: "array": the last tier must be unbounded: omit its upTo']);
    expect(validator.validate(tiers(undefined, undefined))).toEqual(['spec.tiers: Invalid value: "array": only the last tier may be unbounded: every other tier needs upTo']);
    expect(validator.validate(tiers(0, undefined))[0]).toMatch(/^spec\.tiers\[0\]\.upTo: .*must be >= 1/);
  });

  it('alias: lower-case passes, any upper-case letter fails', () => {
    const model = (alias: string) => ({ apiVersion: 'tollgate.dev/v1alpha1', kind: 'Model', metadata: { name: 'm' }, spec: { id: 'Vendor/Model-X', alias, pricingGroupRef: { name: 'g' }, upstreams: [{ protocol: 'openai', providerRef: { name: 'p' }, model: 'x' }] } });
    expect(validator.validate(model('vendor/model-x'))).toEqual([]);
    expect(validator.validate(model('vendor/Model-x'))).toEqual(['spec.alias: Invalid value: "string": alias must be lower-case']);
  });

  it('weight: 1 and 1000 pass, 0 and 1001 fail', () => {
    const model = (weight: number) => ({ apiVersion: 'tollgate.dev/v1alpha1', kind: 'Model', metadata: { name: 'm' }, spec: { id: 'a/b', pricingGroupRef: { name: 'g' }, upstreams: [{ protocol: 'openai', providerRef: { name: 'p' }, model: 'x', weight }] } });
    expect(validator.validate(model(1))).toEqual([]);
    expect(validator.validate(model(1000))).toEqual([]);
    expect(validator.validate(model(0))).toEqual(['spec.upstreams[0].weight: Invalid value: "integer": weight must be between 1 and 1000']);
    expect(validator.validate(model(1001))).toEqual(['spec.upstreams[0].weight: Invalid value: "integer": weight must be between 1 and 1000']);
  });

  it('ApiKey organization: free on create, unchanged updates pass (disable, rename), a move to another org is refused', () => {
    const key = (organization: string, extra: Record<string, unknown> = {}) => ({ apiVersion: 'tollgate.dev/v1alpha1', kind: 'ApiKey', metadata: { name: 'k' }, spec: { organization, project: 'web', ...extra } });
    expect(validator.validate(key('globex'))).toEqual([]);
    expect(validator.validate(key('acme', { disabled: true, displayName: 'renamed' }), key('acme'))).toEqual([]);
    expect(validator.validate(key('globex'), key('acme'))).toEqual(['spec.organization: Invalid value: "string": organization is immutable: create a new ApiKey instead']);
  });

  it('pricing mode: prices and tiers are exclusive, each required by its mode', () => {
    const group = (spec: Record<string, unknown>) => ({ apiVersion: 'tollgate.dev/v1alpha1', kind: 'PricingGroup', metadata: { name: 'g' }, spec });
    const prices = { input: '1', output: '2' };
    const t = [{ input: '1', output: '2' }];
    expect(validator.validate(group({ mode: 'flat_tokens', prices }))).toEqual([]);
    expect(validator.validate(group({ mode: 'flat_tokens', prices, tiers: t }))).toEqual(['spec: Invalid value: "object": mode flat_tokens requires prices and no tiers']);
    expect(validator.validate(group({ mode: 'input_tokens_tiers', tiers: t }))).toEqual([]);
    expect(validator.validate(group({ mode: 'input_tokens_tiers', tiers: t, prices }))).toEqual(['spec: Invalid value: "object": mode input_tokens_tiers requires tiers and no prices']);
  });
});
