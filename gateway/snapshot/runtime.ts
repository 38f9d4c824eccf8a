// A validated snapshot compiled into the lookup tables the request path reads (no parsing per request).
import { createHash } from 'node:crypto';
import type { Decimal } from '../billing/decimal.ts';
import { parseDecimal } from '../billing/decimal.ts';
import type { CompiledPricing } from '../billing/pricing.ts';
import { compilePricing } from '../billing/pricing.ts';
import type { KeyGovernance, OrgGovernance } from '../governance/rules.ts';
import { compileKeyGovernance, compileOrgGovernance, compileScope } from '../governance/rules.ts';
import type { ApiKey, Model, Organization, PricingGroup, Protocol, Provider, Snapshot } from './schema.ts';
import { PROTOCOLS } from './schema.ts';
import type { RoutingPolicy } from '../resilience/policy.ts';
import { compilePolicy } from '../resilience/policy.ts';

export interface RuntimeProvider {
  id: string;
  /** Base URL without a trailing slash; protocol paths are appended. */
  baseUrl: string;
  credential: string | undefined;
  /** Names the env var when the credential is missing, for a clear error. */
  missingCredential?: string;
  headers: Record<string, string>;
  timeouts: Provider['timeouts'];
  abortOnDisconnect: boolean;
  /** Largest JSON answer read whole; undefined: the protocol's default. */
  maxResponseBytes?: number;
  /** As configured (read by the admin API's views, never on the request path). */
  config: Provider;
}

export interface UpstreamTarget {
  provider: RuntimeProvider;
  model: string;
  weight: number;
}

export interface RuntimeModel {
  id: string;
  config: Model;
  public: boolean;
  created: number;
  pricing: CompiledPricing;
  protocols: Partial<Record<Protocol, UpstreamTarget[]>>;
  drop: readonly string[];
  imageSizes: ReadonlySet<string> | undefined;
  /** Retries, ejection, concurrency and fallbacks (defaults ← first provider's routing ← the model's). */
  policy: RoutingPolicy;
}

export interface RuntimeOrganization {
  id: string;
  discount: Decimal | undefined;
  all: boolean;
  exact: ReadonlySet<string>;
  prefixes: readonly string[];
  /** Limits and budgets of the organization and its projects; undefined when none are set. */
  governance: OrgGovernance | undefined;
  /** A model name or alias to its canonical id, for per-model limits. */
  resolveModel(name: string): string | undefined;
  /** As configured (read by the admin API's views, never on the request path). */
  config: Organization;
}

export interface RuntimeKey {
  id: string;
  prefix: string;
  organization: RuntimeOrganization;
  project: string;
  disabled: boolean;
  expiresAtMs: number | undefined;
  /** Every limit and budget that applies to this key's requests; undefined when none do (the governor is skipped). */
  governance: KeyGovernance | undefined;
  /** As configured (read by the admin API's views, never on the request path). */
  config: ApiKey;
}

export interface RuntimeSnapshot {
  version: string;
  generation: number;
  loadedAt: number;
  models: readonly RuntimeModel[];
  byName: ReadonlyMap<string, RuntimeModel>;
  keysByHash: ReadonlyMap<string, RuntimeKey>;
  organizations: ReadonlyMap<string, RuntimeOrganization>;
  providers: ReadonlyMap<string, RuntimeProvider>;
  /** As configured, by id (the admin API's view). */
  pricingGroups: ReadonlyMap<string, PricingGroup>;
}

export interface CompileOptions {
  env?: NodeJS.ProcessEnv;
  warn?: (msg: string) => void;
}

export function snapshotVersion(s: Snapshot): string {
  const { version: _v, generation: _g, ...content } = s;
  return 'sha256:' + createHash('sha256').update(stableStringify(content)).digest('hex').slice(0, 32);
}

/** Everything but the keys: what a change to one key shard leaves as it is (cluster mode reuses it). */
export type RuntimeBase = Pick<RuntimeSnapshot, 'models' | 'byName' | 'organizations' | 'providers' | 'pricingGroups'>;

export function compileSnapshot(s: Snapshot, opts: CompileOptions = {}): RuntimeSnapshot {
  const base = compileBase(s, opts);
  return {
    version: s.version ?? snapshotVersion(s),
    generation: s.generation ?? 0,
    loadedAt: Date.now(),
    ...base,
    keysByHash: new Map(compileKeys(s.apiKeys, base.organizations)),
  };
}

export function compileBase(s: Omit<Snapshot, 'apiKeys'>, opts: CompileOptions = {}): RuntimeBase {
  const env = opts.env ?? process.env;
  const providers = new Map<string, RuntimeProvider>();
  for (const p of s.providers) {
    let credential: string | undefined;
    let missing: string | undefined;
    if (p.apiKey && 'value' in p.apiKey) credential = p.apiKey.value;
    else if (p.apiKey) {
      credential = env[p.apiKey.fromEnv] || undefined;
      if (!credential) {
        missing = p.apiKey.fromEnv;
        opts.warn?.(`provider "${p.id}": environment variable ${missing} is not set; its requests will fail with 502`);
      }
    }
    providers.set(p.id, {
      id: p.id,
      baseUrl: p.baseUrl.replace(/\/+$/, ''),
      credential,
      missingCredential: missing,
      headers: p.headers ?? {},
      timeouts: p.timeouts,
      abortOnDisconnect: p.onClientDisconnect === 'abort',
      maxResponseBytes: p.maxResponseBytes,
      config: p,
    });
  }
  const pricing = new Map(s.pricingGroups.map((g) => [g.id, compilePricing(g)]));
  const models: RuntimeModel[] = [];
  const byName = new Map<string, RuntimeModel>();
  for (const m of s.models) {
    const protocols: Partial<Record<Protocol, UpstreamTarget[]>> = {};
    for (const proto of PROTOCOLS) {
      const ups = m.protocols[proto];
      if (ups) protocols[proto] = ups.map((u) => ({ provider: providers.get(u.provider)!, model: u.model, weight: u.weight }));
    }
    const rm: RuntimeModel = {
      id: m.id,
      config: m,
      public: m.public,
      created: m.created,
      pricing: pricing.get(m.pricingGroup)!,
      protocols,
      drop: m.capabilities.drop,
      imageSizes: m.capabilities.imageSizes ? new Set(m.capabilities.imageSizes) : undefined,
      policy: compilePolicy(s.providers.find((p) => p.id === firstProvider(m))?.routing, m.routing),
    };
    models.push(rm);
    byName.set(m.id.toLowerCase(), rm);
    if (m.alias) byName.set(m.alias.toLowerCase(), rm);
  }
  const organizations = new Map<string, RuntimeOrganization>();
  const resolve = (name: string) => byName.get(name.toLowerCase())?.id;
  for (const o of s.organizations) {
    organizations.set(o.id, {
      id: o.id,
      discount: o.discount === undefined ? undefined : parseDecimal(o.discount),
      all: o.models.includes('*'),
      exact: new Set(o.models.filter((x) => !x.endsWith('*'))),
      prefixes: o.models.filter((x) => x.endsWith('*') && x !== '*').map((x) => x.slice(0, -1)),
      governance: compileOrgGovernance(o, resolve, opts.warn),
      resolveModel: resolve,
      config: o,
    });
  }
  return { models, byName, organizations, providers, pricingGroups: new Map(s.pricingGroups.map((g) => [g.id, g])) };
}

function firstProvider(m: Model): string | undefined {
  for (const proto of PROTOCOLS) {
    const ups = m.protocols[proto];
    if (ups) return ups[0].provider;
  }
  return undefined;
}

/** [hash, key] pairs of validated keys, whose organizations are all in `organizations`. */
export function compileKeys(keys: Snapshot['apiKeys'], organizations: ReadonlyMap<string, RuntimeOrganization>): [string, RuntimeKey][] {
  return keys.map((k) => [
    k.hash,
    {
      id: k.id,
      prefix: k.prefix,
      organization: organizations.get(k.organization)!,
      project: k.project,
      disabled: k.disabled,
      expiresAtMs: k.expiresAt ? Date.parse(k.expiresAt) : undefined,
      governance: keyGovernance(k, organizations.get(k.organization)!),
      config: k,
    },
  ]);
}

function keyGovernance(k: Snapshot['apiKeys'][number], org: RuntimeOrganization): KeyGovernance | undefined {
  const own = k.limits || k.budget ? compileScope('key', k.id, `k:${k.id}`, k.limits, k.budget, org.resolveModel) : [];
  return compileKeyGovernance(own, org.governance, k.project);
}

export function orgAllows(org: RuntimeOrganization, modelId: string): boolean {
  if (org.all || org.exact.has(modelId)) return true;
  for (const p of org.prefixes) if (modelId.startsWith(p)) return true;
  return false;
}

/** Deterministic JSON (sorted keys) so equal content always hashes to the same version. */
export function stableStringify(v: unknown): string {
  if (v === null || typeof v !== 'object') return JSON.stringify(v) ?? 'null';
  if (Array.isArray(v)) return '[' + v.map(stableStringify).join(',') + ']';
  const o = v as Record<string, unknown>;
  return '{' + Object.keys(o).sort().filter((k) => o[k] !== undefined).map((k) => JSON.stringify(k) + ':' + stableStringify(o[k])).join(',') + '}';
}
