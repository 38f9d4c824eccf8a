// Pure: custom resources (+ the Secrets they reference) → the snapshot's parts, validated with the gateway's own
// schema, and a verdict per resource. A resource that cannot be compiled is left out with a precise reason and
// never breaks the rest. No I/O here; the controller does the writing.
import type { z } from 'zod';
import { displayPrefix, hashApiKey, looksLikeApiKey } from '../gateway/auth/api-key.ts';
import type { SnapshotBase, SnapshotKey } from '../gateway/snapshot/kube-format.ts';
import { apiKeySchema, modelSchema, organizationSchema, pricingGroupSchema, PROTOCOLS, providerSchema, snapshotSchema } from '../gateway/snapshot/schema.ts';
import type { Protocol } from '../gateway/snapshot/schema.ts';
import { formatIssues } from '../gateway/snapshot/validate.ts';
import type { ApiKeySpec, Kind, ModelSpec, OrganizationSpec, PricingGroupSpec, ProviderSpec, Resource, SecretObject } from './kinds.ts';
import { keySecretName, refOf, timestamp } from './kinds.ts';

export interface World {
  providers: Resource<ProviderSpec>[];
  pricingGroups: Resource<PricingGroupSpec>[];
  models: Resource<ModelSpec>[];
  organizations: Resource<OrganizationSpec>[];
  apiKeys: Resource<ApiKeySpec>[];
  secret(name: string): SecretObject | undefined;
}

export interface Verdict {
  kind: Kind;
  name: string;
  generation: number;
  /** In the snapshot. */
  included: boolean;
  ready: boolean;
  reason: string;
  message: string;
  secretName?: string;
  prefix?: string;
}

export interface Compiled {
  base: SnapshotBase;
  keys: Map<string, SnapshotKey>;
  verdicts: Map<string, Verdict>;
  /** "Kind/name" → metadata.generation, for every resource in the snapshot. */
  generations: Map<string, number>;
  /** ApiKeys that have no key Secret yet. */
  needsKeySecret: Resource<ApiKeySpec>[];
  /** Earliest future expiresAt (ms), to re-reconcile when a key expires. */
  nextExpiry: number | undefined;
}

interface KeyMemo {
  stamp: string;
  entry: SnapshotKey | undefined;
  error: string | undefined;
}

/** Per-ApiKey results kept between reconciles: 50,000 keys are parsed once each, not on every pass. */
export class CompileMemo {
  readonly keys = new Map<string, KeyMemo>();
}

type Issues = string[];

function check<S extends z.ZodType>(schema: S, input: unknown): { ok: true; value: z.output<S> } | { ok: false; issues: Issues } {
  const r = schema.safeParse(input);
  return r.success ? { ok: true, value: r.data } : { ok: false, issues: formatIssues(r.error) };
}

const gen = (r: Resource<unknown>) => r.metadata.generation ?? 0;
const deleting = (r: Resource<unknown>) => r.metadata.deletionTimestamp !== undefined && r.metadata.deletionTimestamp !== null;

function secretValue(s: SecretObject | undefined, key: string): string | undefined {
  const b64 = s?.data?.[key];
  return b64 === undefined ? undefined : Buffer.from(b64, 'base64').toString('utf8').replace(/\r?\n$/, '');
}

export function compile(world: World, now: number, memo = new CompileMemo()): Compiled {
  const verdicts = new Map<string, Verdict>();
  const bad = (kind: Kind, r: Resource<unknown>, reason: string, message: string) =>
    verdicts.set(refOf(kind, r.metadata.name), { kind, name: r.metadata.name, generation: gen(r), included: false, ready: false, reason, message });

  // 1. Each resource on its own: spec → snapshot entry, checked with the entry's schema.
  const providers = new Map<string, { r: Resource<ProviderSpec>; entry: z.output<typeof providerSchema> }>();
  for (const r of world.providers) {
    if (deleting(r)) continue;
    const s = r.spec ?? {};
    let apiKey: { value: string } | undefined;
    const ref = s.credentials?.secretRef;
    if (ref) {
      const secret = ref.name ? world.secret(ref.name) : undefined;
      const keyName = ref.key ?? 'apiKey';
      if (!secret) {
        bad('Provider', r, 'SecretNotFound', `Secret "${ref.name ?? ''}" (spec.credentials.secretRef) not found`);
        continue;
      }
      const value = secretValue(secret, keyName);
      if (!value) {
        bad('Provider', r, 'SecretNotFound', `Secret "${ref.name}" has no key "${keyName}" (spec.credentials.secretRef.key)`);
        continue;
      }
      apiKey = { value };
    }
    const c = check(providerSchema, { id: r.metadata.name, baseUrl: s.baseUrl, apiKey, headers: s.headers, timeouts: s.timeouts, onClientDisconnect: s.onClientDisconnect });
    if (!c.ok) bad('Provider', r, 'InvalidSpec', c.issues.join('; '));
    else providers.set(r.metadata.name, { r, entry: c.value });
  }

  const groups = new Map<string, { r: Resource<PricingGroupSpec>; entry: z.output<typeof pricingGroupSchema> }>();
  for (const r of world.pricingGroups) {
    if (deleting(r)) continue;
    const s = r.spec ?? {};
    const c = check(pricingGroupSchema, s.mode === 'input_tokens_tiers' ? { id: r.metadata.name, mode: s.mode, tiers: s.tiers, discount: s.discount } : { id: r.metadata.name, mode: s.mode, prices: s.prices, discount: s.discount });
    if (!c.ok) bad('PricingGroup', r, 'InvalidSpec', c.issues.join('; '));
    else groups.set(r.metadata.name, { r, entry: c.value });
  }

  const models = new Map<string, { r: Resource<ModelSpec>; entry: z.output<typeof modelSchema>; refs: { group: string; upstreams: { protocol: Protocol; provider: string }[] } }>();
  for (const r of world.models) {
    if (deleting(r)) continue;
    const s = r.spec ?? {};
    const protocols: Partial<Record<Protocol, { provider: string | undefined; model: string | undefined; weight: number | undefined }[]>> = {};
    const upstreams: { protocol: Protocol; provider: string }[] = [];
    let unknownProtocol: string | undefined;
    for (const u of s.upstreams ?? []) {
      if (!PROTOCOLS.includes(u.protocol as Protocol)) {
        unknownProtocol = String(u.protocol);
        continue;
      }
      const p = u.protocol as Protocol;
      (protocols[p] ??= []).push({ provider: u.providerRef?.name, model: u.model, weight: u.weight });
      upstreams.push({ protocol: p, provider: u.providerRef?.name ?? '' });
    }
    if (unknownProtocol !== undefined) {
      bad('Model', r, 'InvalidSpec', `spec.upstreams: unknown protocol "${unknownProtocol}" (one of ${PROTOCOLS.join(', ')})`);
      continue;
    }
    const c = check(modelSchema, { id: s.id, alias: s.alias, public: s.public, pricingGroup: s.pricingGroupRef?.name, created: s.created, protocols, capabilities: s.capabilities });
    if (!c.ok) bad('Model', r, 'InvalidSpec', c.issues.join('; '));
    else models.set(r.metadata.name, { r, entry: c.value, refs: { group: c.value.pricingGroup, upstreams } });
  }

  const orgs = new Map<string, { r: Resource<OrganizationSpec>; entry: z.output<typeof organizationSchema> }>();
  for (const r of world.organizations) {
    if (deleting(r)) continue;
    const s = r.spec ?? {};
    const c = check(organizationSchema, { id: r.metadata.name, models: s.models, discount: s.discount });
    if (!c.ok) bad('Organization', r, 'InvalidSpec', c.issues.join('; '));
    else orgs.set(r.metadata.name, { r, entry: c.value });
  }

  // 2. References and whole-snapshot rules (tiers ascending, unique names), to a fixed point: a resource the
  //    snapshot schema rejects is dropped with the schema's message, and whatever referenced it follows.
  const exists = (kind: Kind, name: string) => {
    const list = kind === 'Provider' ? world.providers : kind === 'PricingGroup' ? world.pricingGroups : world.organizations;
    return list.some((r) => r.metadata.name === name && !deleting(r));
  };
  let base: SnapshotBase | undefined;
  for (let pass = 0; pass < 1000 && base === undefined; pass++) {
    const modelList: { name: string; entry: z.output<typeof modelSchema> }[] = [];
    for (const [name, m] of models) {
      if (!groups.has(m.refs.group)) {
        const found = exists('PricingGroup', m.refs.group);
        bad('Model', m.r, found ? 'PricingGroupNotReady' : 'PricingGroupNotFound', found ? `PricingGroup "${m.refs.group}" is not Ready` : `PricingGroup "${m.refs.group}" (spec.pricingGroupRef) not found`);
        models.delete(name);
        continue;
      }
      let problem: [string, string] | undefined;
      for (const u of m.refs.upstreams) {
        const p = providers.get(u.provider);
        if (!p) {
          const found = exists('Provider', u.provider);
          problem = found ? ['ProviderNotReady', `Provider "${u.provider}" is not Ready`] : ['ProviderNotFound', `Provider "${u.provider}" (spec.upstreams[protocol=${u.protocol}].providerRef) not found`];
          break;
        }
        const served = p.r.spec?.protocols;
        if (served && !served.includes(u.protocol)) {
          problem = ['ProtocolNotServed', `Provider "${u.provider}" does not serve protocol "${u.protocol}" (its spec.protocols: ${served.join(', ') || 'none'})`];
          break;
        }
      }
      if (problem) {
        bad('Model', m.r, problem[0], problem[1]);
        models.delete(name);
        continue;
      }
      modelList.push({ name, entry: m.entry });
    }
    const providerList = [...providers.values()];
    const groupList = [...groups.values()];
    const orgList = [...orgs.values()];
    const r = snapshotSchema.safeParse({ providers: providerList.map((p) => p.entry), models: modelList.map((m) => m.entry), pricingGroups: groupList.map((g) => g.entry), organizations: orgList.map((o) => o.entry), apiKeys: [] });
    if (r.success) {
      const { providers: ps, models: ms, pricingGroups: gs, organizations: os } = r.data;
      base = { providers: ps, models: ms, pricingGroups: gs, organizations: os };
      break;
    }
    for (const issue of r.error.issues) {
      const [collection, index] = issue.path;
      const message = formatIssues({ issues: [{ ...issue, path: issue.path.slice(2) }] } as unknown as z.ZodError)[0];
      const reason = /already names|duplicate/.test(issue.message) ? 'Conflict' : 'InvalidSpec';
      if (collection === 'models' && typeof index === 'number') {
        const m = modelList[index];
        if (m && models.has(m.name)) {
          bad('Model', models.get(m.name)!.r, reason, `${message}`);
          models.delete(m.name);
        }
      } else if (collection === 'pricingGroups' && typeof index === 'number') {
        const g = groupList[index];
        if (g && groups.has(g.r.metadata.name)) {
          bad('PricingGroup', g.r, reason, message);
          groups.delete(g.r.metadata.name);
        }
      } else if (collection === 'providers' && typeof index === 'number') {
        const p = providerList[index];
        if (p && providers.has(p.r.metadata.name)) {
          bad('Provider', p.r, reason, message);
          providers.delete(p.r.metadata.name);
        }
      } else if (collection === 'organizations' && typeof index === 'number') {
        const o = orgList[index];
        if (o && orgs.has(o.r.metadata.name)) {
          bad('Organization', o.r, reason, message);
          orgs.delete(o.r.metadata.name);
        }
      } else throw new Error(`snapshot rejected at ${String(collection)}: ${issue.message}`);
    }
  }
  if (base === undefined) throw new Error('snapshot did not converge');

  const generations = new Map<string, number>();
  const ok = (kind: Kind, r: Resource<unknown>, reason = 'Compiled', message = 'in the snapshot') => {
    verdicts.set(refOf(kind, r.metadata.name), { kind, name: r.metadata.name, generation: gen(r), included: true, ready: true, reason, message });
    generations.set(refOf(kind, r.metadata.name), gen(r));
  };
  for (const p of providers.values()) ok('Provider', p.r);
  for (const g of groups.values()) ok('PricingGroup', g.r);
  for (const m of models.values()) ok('Model', m.r, 'Compiled', `serves ${m.entry.id} over ${Object.keys(m.entry.protocols).join(', ')}`);
  for (const o of orgs.values()) ok('Organization', o.r);

  // 3. ApiKeys: parsed once per (ApiKey, key Secret) version; the organization must be in the snapshot.
  const keys = new Map<string, SnapshotKey>();
  const needsKeySecret: Resource<ApiKeySpec>[] = [];
  const hashes = new Map<string, string>();
  let nextExpiry: number | undefined;
  const seen = new Set<string>();
  for (const r of world.apiKeys) {
    const name = r.metadata.name;
    seen.add(name);
    if (deleting(r)) continue; // revoked: out of the snapshot; the finalizer is released after the write
    const secretName = keySecretName(name);
    const secret = world.secret(secretName);
    if (!secret) {
      needsKeySecret.push(r);
      bad('ApiKey', r, 'Issuing', `generating the key into Secret "${secretName}"`);
      continue;
    }
    const owners = secret.metadata.ownerReferences ?? [];
    if (!owners.some((o) => o.uid === r.metadata.uid)) {
      if (owners.some((o) => o.kind === 'ApiKey' && o.name === name)) bad('ApiKey', r, 'Issuing', `Secret "${secretName}" of a previous ApiKey "${name}" is being garbage-collected`);
      else bad('ApiKey', r, 'SecretConflict', `Secret "${secretName}" exists and is not owned by this ApiKey; delete or rename it`);
      continue;
    }
    const stamp = `${r.metadata.resourceVersion}|${secret.metadata.resourceVersion}`;
    let m = memo.keys.get(name);
    if (!m || m.stamp !== stamp) {
      const key = secretValue(secret, 'key');
      if (!key || !looksLikeApiKey(key)) m = { stamp, entry: undefined, error: `Secret "${secretName}" data.key is not an sk_live_ key; delete the Secret to issue a new one` };
      else {
        const s = r.spec ?? {};
        const c = check(apiKeySchema, { id: name, hash: hashApiKey(key), prefix: displayPrefix(key), organization: s.organization, project: s.project, name: s.displayName, disabled: s.disabled, expiresAt: s.expiresAt, createdAt: timestamp(r.metadata.creationTimestamp) });
        m = c.ok ? { stamp, entry: c.value, error: undefined } : { stamp, entry: undefined, error: c.issues.join('; ') };
      }
      memo.keys.set(name, m);
    }
    if (!m.entry) {
      bad('ApiKey', r, m.error!.startsWith('Secret') ? 'InvalidKeySecret' : 'InvalidSpec', m.error!);
      continue;
    }
    const e = m.entry;
    if (!orgs.has(e.organization)) {
      const found = exists('Organization', e.organization);
      bad('ApiKey', r, found ? 'OrganizationNotReady' : 'OrganizationNotFound', found ? `Organization "${e.organization}" is not Ready` : `Organization "${e.organization}" (spec.organization) not found`);
      continue;
    }
    const other = hashes.get(e.hash);
    if (other !== undefined) {
      bad('ApiKey', r, 'DuplicateKey', `Secret "${secretName}" holds the same key as ApiKey "${other}"`);
      continue;
    }
    hashes.set(e.hash, name);
    keys.set(name, e);
    generations.set(refOf('ApiKey', name), gen(r));
    const expires = e.expiresAt ? Date.parse(e.expiresAt) : undefined;
    const base = { kind: 'ApiKey' as const, name, generation: gen(r), included: true, secretName, prefix: e.prefix };
    if (e.disabled) verdicts.set(refOf('ApiKey', name), { ...base, ready: false, reason: 'Disabled', message: 'spec.disabled is true: requests with this key are refused' });
    else if (expires !== undefined && expires <= now) verdicts.set(refOf('ApiKey', name), { ...base, ready: false, reason: 'Expired', message: `expired at ${e.expiresAt}: requests with this key are refused` });
    else {
      if (expires !== undefined) nextExpiry = Math.min(nextExpiry ?? Infinity, expires);
      verdicts.set(refOf('ApiKey', name), { ...base, ready: true, reason: 'Issued', message: `key ${e.prefix}… is in Secret "${secretName}" (data.key)` });
    }
  }
  for (const name of memo.keys.keys()) if (!seen.has(name)) memo.keys.delete(name);
  return { base, keys, verdicts, generations, needsKeySecret, nextExpiry };
}
