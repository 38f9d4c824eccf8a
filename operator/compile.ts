// Custom resources (+ the Secrets they reference) → the snapshot's parts, validated with the gateway's own schema,
// and a verdict per resource. A resource that cannot be compiled is left out with a precise reason and never
// breaks the rest. No I/O here; the controller does the writing. The few resources besides ApiKeys are compiled
// whole on every pass; the ApiKeys (50,000 of them) incrementally: only those the controller names as changed,
// or all of them when the organizations in the snapshot changed.
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
  apiKeys(): Iterable<Resource<ApiKeySpec>>;
  apiKey(name: string): Resource<ApiKeySpec> | undefined;
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
  /** ApiKey name → its entry, for every key in the snapshot. */
  keys: ReadonlyMap<string, SnapshotKey>;
  /** ApiKey name → metadata.generation, for every key in the snapshot. */
  keyGenerations: ReadonlyMap<string, number>;
  /** ApiKey names whose entry or generation changed in this pass, or undefined: any may have (a full pass). */
  changedKeys: ReadonlySet<string> | undefined;
  /** "Kind/name" → verdict, for every resource. */
  verdicts: ReadonlyMap<string, Verdict>;
  /** "Kind/name" of the resources compiled in this pass (all but the unchanged ApiKeys), or undefined: all. */
  recompiled: ReadonlySet<string> | undefined;
  /** "Kind/name" → metadata.generation, for every resource in the snapshot besides ApiKeys. */
  generations: ReadonlyMap<string, number>;
  /** ApiKeys that have no key Secret yet. */
  needsKeySecret: Resource<ApiKeySpec>[];
  /** ApiKeys being deleted, out of the snapshot: their finalizer may go once it is written. */
  deleting: Resource<ApiKeySpec>[];
  /** Earliest future expiresAt (ms), to re-reconcile when a key expires. */
  nextExpiry: number | undefined;
}

interface KeyMemo {
  /** What the entry was parsed from: the ApiKey (uid, generation) and its Secret's resourceVersion (strings shared with the caches). */
  uid: string | undefined;
  generation: number;
  secretVersion: string | undefined;
  entry: SnapshotKey | undefined;
  error: string | undefined;
}

interface KeyResult {
  verdict: Verdict | undefined;
  entry: SnapshotKey | undefined;
  generation: number;
  /** The parsed key, kept while the ApiKey's spec and its Secret are unchanged: 50,000 keys are hashed once each. */
  memo: KeyMemo | undefined;
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

interface BaseCompiled {
  base: SnapshotBase;
  verdicts: Map<string, Verdict>;
  generations: Map<string, number>;
  /** Organizations in the snapshot, and those that exist at all (for a key's reason). */
  orgs: ReadonlySet<string>;
  orgNames: ReadonlySet<string>;
}

/** Everything but the ApiKeys: a handful of resources, compiled whole every pass. */
export function compileBase(world: World): BaseCompiled {
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
    const c = check(providerSchema, { id: r.metadata.name, baseUrl: s.baseUrl, apiKey, headers: s.headers, timeouts: s.timeouts, onClientDisconnect: s.onClientDisconnect, maxResponseBytes: s.maxResponseBytes, routing: s.routing });
    if (!c.ok) bad('Provider', r, 'InvalidSpec', c.issues.join('; '));
    else providers.set(r.metadata.name, { r, entry: c.value });
  }

  // The CRD's last tier has no upTo (a CRD field cannot be null); the snapshot spells that bound null.
  const unboundedLastTier = (tiers: PricingGroupSpec['tiers']) => (Array.isArray(tiers) ? tiers.map((t) => (t && typeof t === 'object' && !('upTo' in t) ? { ...t, upTo: null } : t)) : tiers);
  const groups = new Map<string, { r: Resource<PricingGroupSpec>; entry: z.output<typeof pricingGroupSchema> }>();
  for (const r of world.pricingGroups) {
    if (deleting(r)) continue;
    const s = r.spec ?? {};
    const c = check(pricingGroupSchema, s.mode === 'input_tokens_tiers' ? { id: r.metadata.name, mode: s.mode, tiers: unboundedLastTier(s.tiers), discount: s.discount } : { id: r.metadata.name, mode: s.mode, prices: s.prices, discount: s.discount });
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
    const c = check(modelSchema, { id: s.id, alias: s.alias, public: s.public, pricingGroup: s.pricingGroupRef?.name, created: s.created, protocols, capabilities: s.capabilities, routing: s.routing });
    if (!c.ok) bad('Model', r, 'InvalidSpec', c.issues.join('; '));
    else models.set(r.metadata.name, { r, entry: c.value, refs: { group: c.value.pricingGroup, upstreams } });
  }

  const orgs = new Map<string, { r: Resource<OrganizationSpec>; entry: z.output<typeof organizationSchema> }>();
  for (const r of world.organizations) {
    if (deleting(r)) continue;
    const s = r.spec ?? {};
    const c = check(organizationSchema, { id: r.metadata.name, models: s.models, discount: s.discount, limits: s.limits, budget: s.budget, projects: s.projects });
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

  const orgNames = new Set(world.organizations.filter((r) => !deleting(r)).map((r) => r.metadata.name));
  return { base, verdicts, generations, orgs: new Set(orgs.keys()), orgNames };
}

/** The compile state between passes: every ApiKey's result, updated for the keys that changed. */
export class Compiler {
  private readonly results = new Map<string, KeyResult>();
  private readonly keys = new Map<string, SnapshotKey>();
  private readonly keyGenerations = new Map<string, number>();
  private readonly verdicts = new Map<string, Verdict>();
  /** Key hash → the ApiKey whose entry carries it (a second ApiKey with the same key is refused). */
  private readonly hashes = new Map<string, string>();
  private readonly duplicates = new Set<string>();
  private readonly missing = new Map<string, Resource<ApiKeySpec>>();
  private readonly deleting = new Map<string, Resource<ApiKeySpec>>();
  /** Keys whose expiry is still ahead: they are recompiled when it passes. */
  private readonly expiries = new Map<string, number>();
  private baseRefs: string[] = [];
  private orgFingerprint: string | undefined;

  /** Recompiles the base, and the ApiKeys named in `dirty` (all of them when undefined or the organizations changed). */
  compile(world: World, now: number, dirty?: Iterable<string>): Compiled {
    const b = compileBase(world);
    for (const ref of this.baseRefs) this.verdicts.delete(ref);
    for (const [ref, v] of b.verdicts) this.verdicts.set(ref, v);
    this.baseRefs = [...b.verdicts.keys()];
    const recompiled = new Set<string>(this.baseRefs);
    const fingerprint = `${[...b.orgs].sort().join(',')}|${[...b.orgNames].sort().join(',')}`;
    const full = dirty === undefined || fingerprint !== this.orgFingerprint;
    this.orgFingerprint = fingerprint;
    const changed = new Set<string>();
    let freed = false;
    const one = (name: string, r: Resource<ApiKeySpec> | undefined) => {
      const before = this.results.get(name);
      if (before?.entry && this.hashes.get(before.entry.hash) === name) {
        this.hashes.delete(before.entry.hash);
        freed = true;
      }
      this.missing.delete(name);
      this.deleting.delete(name);
      this.expiries.delete(name);
      this.duplicates.delete(name);
      const ref = refOf('ApiKey', name);
      recompiled.add(ref);
      const res = r ? this.compileKey(r, world, b, now, before?.memo) : undefined;
      if (res?.verdict) this.verdicts.set(ref, res.verdict);
      else this.verdicts.delete(ref);
      if (res) this.results.set(name, res);
      else this.results.delete(name);
      if (res?.entry) {
        this.keys.set(name, res.entry);
        this.keyGenerations.set(name, res.generation);
      } else {
        this.keys.delete(name);
        this.keyGenerations.delete(name);
      }
      if ((before?.entry || res?.entry) && (before?.entry !== res?.entry || before?.generation !== res?.generation)) changed.add(name);
    };
    if (full) {
      this.hashes.clear();
      const seen = new Set<string>();
      for (const r of world.apiKeys()) {
        seen.add(r.metadata.name);
        one(r.metadata.name, r);
      }
      for (const name of [...this.results.keys()]) if (!seen.has(name)) one(name, undefined);
    } else {
      const names = new Set(dirty);
      for (const [name, at] of this.expiries) if (at <= now) names.add(name);
      for (const name of names) one(name, world.apiKey(name));
      // A key refused for carrying another's key gets its turn when that one lets go of it.
      if (freed) for (const name of [...this.duplicates]) if (!names.has(name)) one(name, world.apiKey(name));
    }
    let nextExpiry: number | undefined;
    for (const at of this.expiries.values()) nextExpiry = Math.min(nextExpiry ?? Infinity, at);
    return {
      base: b.base,
      keys: this.keys,
      keyGenerations: this.keyGenerations,
      changedKeys: full ? undefined : changed,
      verdicts: this.verdicts,
      recompiled: full ? undefined : recompiled,
      generations: b.generations,
      needsKeySecret: [...this.missing.values()],
      deleting: [...this.deleting.values()],
      nextExpiry,
    };
  }

  /** One ApiKey: parsed once per (ApiKey, key Secret) version; the organization must be in the snapshot. */
  private compileKey(r: Resource<ApiKeySpec>, world: World, b: BaseCompiled, now: number, memo: KeyMemo | undefined): KeyResult {
    const name = r.metadata.name;
    const generation = gen(r);
    const bad = (reason: string, message: string, m = memo): KeyResult => ({ verdict: { kind: 'ApiKey', name, generation, included: false, ready: false, reason, message }, entry: undefined, generation, memo: m });
    if (deleting(r)) {
      // Revoked: out of the snapshot; the finalizer is released after the write.
      this.deleting.set(name, r);
      return { verdict: undefined, entry: undefined, generation, memo };
    }
    const secretName = keySecretName(name);
    const secret = world.secret(secretName);
    if (!secret) {
      this.missing.set(name, r);
      return bad('Issuing', `generating the key into Secret "${secretName}"`);
    }
    const owners = secret.metadata.ownerReferences ?? [];
    if (!owners.some((o) => o.uid === r.metadata.uid)) {
      if (owners.some((o) => o.kind === 'ApiKey' && o.name === name)) return bad('Issuing', `Secret "${secretName}" of a previous ApiKey "${name}" is being garbage-collected`);
      return bad('SecretConflict', `Secret "${secretName}" exists and is not owned by this ApiKey; delete or rename it`);
    }
    // The entry depends on the spec (metadata.generation), not on status writes or finalizers (resourceVersion):
    // the echo of a status write re-hashes nothing and leaves the key's shard as it is.
    const uid = r.metadata.uid;
    const secretVersion = secret.metadata.resourceVersion;
    let m = memo;
    if (!m || m.uid !== uid || m.generation !== generation || m.secretVersion !== secretVersion) {
      const key = secretValue(secret, 'key');
      if (!key || !looksLikeApiKey(key)) m = { uid, generation, secretVersion, entry: undefined, error: `Secret "${secretName}" data.key is not an sk_live_ key; delete the Secret to issue a new one` };
      else {
        const s = r.spec ?? {};
        const c = check(apiKeySchema, { id: name, hash: hashApiKey(key), prefix: displayPrefix(key), organization: s.organization, project: s.project, name: s.displayName, disabled: s.disabled, expiresAt: s.expiresAt, createdAt: timestamp(r.metadata.creationTimestamp), limits: s.limits, budget: s.budget });
        m = c.ok ? { uid, generation, secretVersion, entry: c.value, error: undefined } : { uid, generation, secretVersion, entry: undefined, error: c.issues.join('; ') };
      }
    }
    if (!m.entry) return bad(m.error!.startsWith('Secret') ? 'InvalidKeySecret' : 'InvalidSpec', m.error!, m);
    const e = m.entry;
    if (!b.orgs.has(e.organization)) {
      const found = b.orgNames.has(e.organization);
      return bad(found ? 'OrganizationNotReady' : 'OrganizationNotFound', found ? `Organization "${e.organization}" is not Ready` : `Organization "${e.organization}" (spec.organization) not found`, m);
    }
    const other = this.hashes.get(e.hash);
    if (other !== undefined && other !== name) {
      this.duplicates.add(name);
      return bad('DuplicateKey', `Secret "${secretName}" holds the same key as ApiKey "${other}"`, m);
    }
    this.hashes.set(e.hash, name);
    const expires = e.expiresAt ? Date.parse(e.expiresAt) : undefined;
    const base = { kind: 'ApiKey' as const, name, generation, included: true, secretName, prefix: e.prefix };
    let verdict: Verdict;
    if (e.disabled) verdict = { ...base, ready: false, reason: 'Disabled', message: 'spec.disabled is true: requests with this key are refused' };
    else if (expires !== undefined && expires <= now) verdict = { ...base, ready: false, reason: 'Expired', message: `expired at ${e.expiresAt}: requests with this key are refused` };
    else {
      if (expires !== undefined) this.expiries.set(name, expires);
      verdict = { ...base, ready: true, reason: 'Issued', message: `key ${e.prefix}… is in Secret "${secretName}" (data.key)` };
    }
    return { verdict, entry: e, generation, memo: m };
  }
}
