// The reconcile decisions, apart from watching and queueing (controller.ts): given what the informers hold and
// what the compiler decided, which finalizers to add or release, which resources count as invalid, what extra
// status fields a resource gets, and when a resource's status is known current without recomputing it. Pure:
// no API calls, no timers.
import type { ScopeSpend } from '../gateway/governance/spend-report.ts';
import type { Compiled, Verdict } from './compile.ts';
import type { ApiKeySpec, Kind, Resource, SecretObject } from './kinds.ts';
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
