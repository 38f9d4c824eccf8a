// The status every custom resource gets: observedGeneration, Ready (from the compile verdict) and Applied
// (how many gateway pods serve the generation compiled from it), in metav1.Condition shape.
import type { V1Lease } from '@kubernetes/client-node';
import { SERVED_GENERATION_ANNOTATION, STALE_AFTER_ANNOTATION, STALE_ANNOTATION } from '../gateway/snapshot/kube-format.ts';
import type { Verdict } from './compile.ts';
import { stableStringify } from '../gateway/snapshot/runtime.ts';
import type { Condition, Resource } from './kinds.ts';
import type { EjectedReport } from '../gateway/snapshot/kube-ejections.ts';
import { decodeEjected, EJECTED_ANNOTATION } from '../gateway/snapshot/kube-ejections.ts';

export interface GatewayPod {
  name: string;
  /** The snapshot generation it serves. */
  generation: number;
  /** The upstream targets it has out of rotation (condition UpstreamsHealthy). */
  ejected: EjectedReport;
}

/** Time for a pod that turned not-ready to leave the Service's endpoints: readiness probe period × threshold, plus propagation. */
export const READINESS_MARGIN_MS = 10_000;

/**
 * Gateway pods that may be receiving traffic, with the generation they serve. A pod that says it is stale is not
 * ready: it is left out. A pod whose Lease ran out is counted still, at the generation it last reported, until its
 * own staleness bound and the readiness margin have passed too: a pod cut off from the API cannot renew its
 * Lease, but stays ready until its watch has been broken for that bound. So Applied never counts a generation as
 * served while a pod that could still be receiving traffic serves an older one. (A stale pod that recovers
 * renews its Lease at once, without the flag.)
 */
export function livePods(leases: V1Lease[], now: number): GatewayPod[] {
  const pods: GatewayPod[] = [];
  for (const l of leases) {
    const renew = l.spec?.renewTime ?? l.spec?.acquireTime;
    if (!renew) continue;
    const annotations = l.metadata?.annotations ?? {};
    const renewedAt = renew instanceof Date ? renew.getTime() : Date.parse(String(renew));
    const expiresAt = renewedAt + (l.spec?.leaseDurationSeconds ?? 15) * 1000;
    if (annotations[STALE_ANNOTATION] === 'true') continue;
    const staleAfter = Number(annotations[STALE_AFTER_ANNOTATION]);
    const mayServeUntil = expiresAt + (Number.isFinite(staleAfter) && staleAfter > 0 ? staleAfter * 1000 + READINESS_MARGIN_MS : 0);
    if (mayServeUntil < now) continue;
    const g = Number(l.metadata?.annotations?.[SERVED_GENERATION_ANNOTATION] ?? NaN);
    pods.push({ name: l.spec?.holderIdentity ?? l.metadata?.name ?? '?', generation: Number.isFinite(g) ? g : -1, ejected: decodeEjected(annotations[EJECTED_ANNOTATION]) });
  }
  return pods;
}

export function appliedCondition(v: Verdict | undefined, includedSince: number | undefined, generation: number, pods: GatewayPod[]): Omit<Condition, 'lastTransitionTime'> {
  const base = { type: 'Applied', observedGeneration: generation };
  if (!v?.included || includedSince === undefined) return { ...base, status: 'False', reason: 'NotInSnapshot', message: 'not in the snapshot: see condition Ready' };
  if (pods.length === 0) return { ...base, status: 'Unknown', reason: 'NoGatewayPods', message: `0/0 pods serve generation ${generation}` };
  const serving = pods.filter((p) => p.generation >= includedSince).length;
  const message = `${serving}/${pods.length} pods serve generation ${generation}`;
  return serving === pods.length ? { ...base, status: 'True', reason: 'Served', message } : { ...base, status: 'False', reason: 'Propagating', message };
}

export function readyCondition(v: Verdict | undefined, generation: number): Omit<Condition, 'lastTransitionTime'> {
  if (!v) return { type: 'Ready', status: 'Unknown', reason: 'Pending', message: 'not compiled yet', observedGeneration: generation };
  return { type: 'Ready', status: v.ready ? 'True' : 'False', reason: v.reason, message: v.message, observedGeneration: generation };
}

/** lastTransitionTime moves only when a condition's status flips. */
export function withTransitions(next: Omit<Condition, 'lastTransitionTime'>[], current: Condition[] | undefined, now: string): Condition[] {
  return next.map((c) => {
    const old = current?.find((o) => o.type === c.type);
    return { ...c, lastTransitionTime: old && old.status === c.status && old.lastTransitionTime ? old.lastTransitionTime : now };
  });
}

export function desiredStatus(r: Resource, v: Verdict | undefined, includedSince: number | undefined, pods: GatewayPod[], extra: Record<string, unknown>, now: string, more: Omit<Condition, 'lastTransitionTime'>[] = []): Record<string, unknown> {
  const generation = r.metadata.generation ?? 0;
  // Once every pod served this generation it stays Applied: pods that start later load the newest snapshot anyway,
  // and rewriting 50,000 ApiKeys' status on every gateway scale-up would be a write storm for no news.
  const current = r.status?.conditions?.find((c) => c.type === 'Applied');
  const applied = v?.included && current?.status === 'True' && current.observedGeneration === generation ? current : appliedCondition(v, includedSince, generation, pods);
  const conditions = withTransitions([readyCondition(v, generation), applied, ...more], r.status?.conditions, now);
  return { ...extra, observedGeneration: generation, conditions };
}

/** Equal apart from lastTransitionTime: then no write is needed. */
export function sameStatus(current: Resource['status'], desired: Record<string, unknown>): boolean {
  return statusKey(current ?? {}) === statusKey(desired);
}

/** Canonical text of a status without lastTransitionTime (key order and timestamps do not count). */
export function statusKey(status: object): string {
  const s = status as Record<string, unknown>;
  const conditions = ((s.conditions as Condition[] | undefined) ?? []).map(({ lastTransitionTime: _t, ...c }) => c);
  return stableStringify({ ...s, conditions });
}
