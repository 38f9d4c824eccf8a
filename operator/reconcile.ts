// The reconcile decisions, apart from watching and queueing (controller.ts): given what the informers hold and
// what the compiler decided, which finalizers to add or release, which resources count as invalid, what extra
// status fields a resource gets, and when a resource's status is known current without recomputing it. Pure:
// no API calls, no timers.
import type { ScopeSpend } from '../gateway/governance/spend-report.ts';
import type { Compiled, Verdict } from './compile.ts';
import type { ApiKeySpec, Condition, Kind, ModelSpec, Resource, SecretObject } from './kinds.ts';
import type { GatewayPod } from './status.ts';
import { FINALIZER, KIND_NAMES, keySecretName } from './kinds.ts';

/** Reasons that are states, not mistakes: no Warning Event, not counted as invalid. */
export const NO_EVENT_REASONS: ReadonlySet<string> = new Set(['Issuing', 'Disabled', 'Expired', 'Compiled', 'Issued']);

export function isMistake(v: Verdict | undefined): v is Verdict {
  return v !== undefined && !v.ready && !NO_EVENT_REASONS.has(v.reason);
}

/** Invalid resources per kind (every kind present, 0 when none). */
export function invalidCounts(c: Compiled): Map<Kind, number> {
  const invalid = new Map<Kind, number>(KIND_NAMES.map((k) => [k, 0]));
  for (const v of c.verdicts.values()) if (isMistake(v)) invalid.set(v.kind, invalid.get(v.kind)! + 1);
  return invalid;
}

/** ApiKeys that need the revocation finalizer added, with their new finalizer list. */
export function finalizersToAdd(apiKeys: Iterable<Resource<ApiKeySpec>>): [Resource<ApiKeySpec>, string[]][] {
  const out: [Resource<ApiKeySpec>, string[]][] = [];
  for (const r of apiKeys) {
    const f = r.metadata.finalizers ?? [];
    if (!r.metadata.deletionTimestamp && !f.includes(FINALIZER)) out.push([r, [...f, FINALIZER]]);
  }
  return out;
}

/** Deleting ApiKeys whose finalizer may go: call only once a snapshot without them is in the cluster. */
export function finalizersToRelease(c: Compiled): [Resource<ApiKeySpec>, string[]][] {
  const out: [Resource<ApiKeySpec>, string[]][] = [];
  for (const r of c.deleting) {
    const f = r.metadata.finalizers ?? [];
    if (f.includes(FINALIZER)) out.push([r, f.filter((x) => x !== FINALIZER)]);
  }
  return out;
}

/** Status fields beyond the conditions: an ApiKey's Secret name and prefix, a Model's joined protocols. */
export function statusExtra(kind: Kind, r: Resource, v: Verdict | undefined, keySecret: SecretObject | undefined, spend?: ScopeSpend): Record<string, unknown> {
  if (kind === 'Organization') return spend ? { spend } : {};
  if (kind === 'ApiKey') {
    const extra: Record<string, unknown> = {};
    if (spend) extra.spend = spend;
    // Only a Secret this ApiKey owns is its key (a same-named Secret of someone else's is not).
    if (keySecret?.metadata.ownerReferences?.some((o) => o.uid === r.metadata.uid)) extra.secretName = keySecretName(r.metadata.name);
    const prefix = v?.prefix ?? r.status?.prefix;
    if (prefix !== undefined) extra.prefix = prefix;
    return extra;
  }
  if (kind === 'Model') {
    // `kubectl get models` shows this joined list: a printer column shows only the first value of a list path.
    const ups = (r.spec as { upstreams?: { protocol?: string }[] } | undefined)?.upstreams ?? [];
    const protocols = [...new Set(ups.map((u) => u.protocol).filter((p): p is string => typeof p === 'string'))].join(',');
    return protocols ? { protocols } : {};
  }
  return {};
}

/** Applied=True at the resource's current generation: which pods serve what no longer changes its status. */
export function appliedAtGeneration(r: Resource, v: Verdict | undefined): boolean {
  return v?.included === true && (r.status?.conditions?.some((c) => c.type === 'Applied' && c.status === 'True' && c.observedGeneration === (r.metadata.generation ?? 0)) ?? false);
}

/**
 * Everything a resource's desired status depends on, as one string: when it equals the one recorded when the
 * status was last found current, the status needs no work (what keeps a pass over 50,000 keys cheap).
 */
export function statusInputs(r: Resource, v: Verdict | undefined, applied: boolean, includedSince: number | undefined, podsKey: string, keySecret: SecretObject | undefined, spend?: ScopeSpend): string {
  const verdict = v ? `${v.included}|${v.reason}|${v.message}|${v.prefix}` : '-';
  return `${r.metadata.resourceVersion}|${verdict}|${applied ? 'applied' : `${includedSince}|${podsKey}`}|${keySecret?.metadata.resourceVersion ?? ''}|${spend ? `${spend.day}|${spend.month}|${spend.total}` : ''}`;
}

/** Milliseconds until the next key expiry needs a pass, if any. */
export function expiryDelay(c: Compiled, now: number): number | undefined {
  return c.nextExpiry === undefined ? undefined : Math.min(2 ** 31 - 1, Math.max(0, c.nextExpiry - now + 5));
}

// ---- Condition UpstreamsHealthy: the upstream targets gateway pods report ejected, on their Provider and Model.

/** One upstream target some pods have out of rotation. */
export interface Ejection {
  provider: string;
  model: string;
  /** Pods that report it, sorted; `halfOpen` those of them only waiting for a probe. */
  pods: string[];
  halfOpen: number;
}

/** The targets the live pods report ejected, merged across pods, in a stable order. */
export function aggregateEjections(pods: GatewayPod[]): Ejection[] {
  const by = new Map<string, Ejection>();
  for (const p of pods) {
    for (const t of p.ejected.targets) {
      const k = `${t.provider}\u0000${t.model}`;
      let e = by.get(k);
      if (!e) by.set(k, (e = { provider: t.provider, model: t.model, pods: [], halfOpen: 0 }));
      e.pods.push(p.name);
      if (t.state === 'half_open') e.halfOpen++;
    }
  }
  const out = [...by.values()];
  for (const e of out) e.pods.sort();
  return out.sort((a, b) => (a.provider === b.provider ? (a.model < b.model ? -1 : 1) : a.provider < b.provider ? -1 : 1));
}

/** The message lists this many targets and pods per target; the rest are counted. */
const LISTED_TARGETS = 8;
const LISTED_PODS = 5;

/** The targets of `r` (a Provider: its own; a Model: its upstreams') that pods report ejected. */
export function ejectionsOf(kind: Kind, r: Resource, all: Ejection[]): Ejection[] {
  if (kind === 'Provider') return all.filter((e) => e.provider === r.metadata.name);
  const ups = (r.spec as ModelSpec | undefined)?.upstreams ?? [];
  return all.filter((e) => ups.some((u) => u.providerRef?.name === e.provider && u.model === e.model));
}

/**
 * UpstreamsHealthy on a Provider or Model: False (TargetsEjected) while any live gateway pod has one of its
 * targets out of rotation, naming them and the pods; True when the pods report none; Unknown with no pods.
 */
export function upstreamsCondition(kind: Kind, r: Resource, all: Ejection[], pods: GatewayPod[]): Omit<Condition, 'lastTransitionTime'> {
  const base = { type: 'UpstreamsHealthy', observedGeneration: r.metadata.generation ?? 0 };
  if (pods.length === 0) return { ...base, status: 'Unknown', reason: 'NoGatewayPods', message: 'no gateway pod reports upstream health' };
  const mine = ejectionsOf(kind, r, all);
  if (mine.length === 0) return { ...base, status: 'True', reason: 'NoTargetsEjected', message: `no ejected upstream target on ${pods.length} pods` };
  const parts = mine.slice(0, LISTED_TARGETS).map((e) => {
    const names = e.pods.slice(0, LISTED_PODS).join(', ') + (e.pods.length > LISTED_PODS ? ` and ${e.pods.length - LISTED_PODS} more` : '');
    const how = e.halfOpen === e.pods.length ? ' (half-open, awaiting a probe)' : '';
    return `${e.provider}/${e.model}${how} on ${e.pods.length}/${pods.length} pods (${names})`;
  });
  if (mine.length > LISTED_TARGETS) parts.push(`and ${mine.length - LISTED_TARGETS} more`);
  return { ...base, status: 'False', reason: 'TargetsEjected', message: `ejected: ${parts.join('; ')}` };
}

/**
 * Rate limit for UpstreamsHealthy: a change is written at most once per `minIntervalMs` per object. Within the
 * interval the current condition is kept and `retryInMs` says when the change may go out (ejections come and go
 * by the second under load; an API write per flap per object would not be cheap).
 */
export function holdCondition(next: Omit<Condition, 'lastTransitionTime'>, current: Condition | undefined, lastChangeAt: number | undefined, now: number, minIntervalMs: number): { condition: Omit<Condition, 'lastTransitionTime'>; changed: boolean; retryInMs?: number } {
  // A new observedGeneration alone is not news about the upstreams: it rides along with the status write a spec
  // change brings anyway, unthrottled.
  const same = current !== undefined && current.status === next.status && current.reason === next.reason && current.message === next.message;
  if (same) return { condition: next, changed: false };
  if (current !== undefined && lastChangeAt !== undefined && now - lastChangeAt < minIntervalMs) {
    const { lastTransitionTime: _t, ...kept } = current;
    return { condition: { ...kept, observedGeneration: next.observedGeneration }, changed: false, retryInMs: minIntervalMs - (now - lastChangeAt) };
  }
  return { condition: next, changed: true };
}
