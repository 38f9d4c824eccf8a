// The routing policy a model's requests follow: how often to retry, how long to wait, when to eject a target.
// Compiled once per snapshot (defaults ← provider `routing` ← model `routing`), read as plain fields per request.
import type { RoutingInput } from '../snapshot/schema.ts';

export interface RoutingPolicy {
  /** Attempts in all, the first included (1 = never retry). */
  maxAttempts: number;
  /** Full-jitter exponential backoff: a delay drawn from [0, min(maxMs, baseMs·2^(n-1))]. */
  backoffBaseMs: number;
  backoffMaxMs: number;
  /** A `retry-after` longer than this is not waited for: the upstream's answer goes to the client instead. */
  retryAfterCapMs: number;
  /** Consecutive failures that eject a target. */
  ejectAfter: number;
  /** Failure-ratio ejection: at least this share (in %) of the attempts in the window failed; 0 = off. */
  ejectFailurePercent: number;
  /** ...over at least this many attempts... */
  ejectMinRequests: number;
  /** ...in a sliding window this long. */
  ejectWindowMs: number;
  /** First ejection's cooldown; each repeat doubles it up to ejectMaxMs. */
  ejectBaseMs: number;
  ejectMaxMs: number;
  /** Requests in flight per target; 0 = unbounded. A target at its limit is skipped; all at it: 503. */
  maxConcurrency: number;
  /** Model ids tried in order once this model's upstreams are exhausted or ejected. */
  fallbacks: readonly string[];
}

export const DEFAULT_POLICY: RoutingPolicy = Object.freeze({
  maxAttempts: 3,
  backoffBaseMs: 100,
  backoffMaxMs: 2_000,
  retryAfterCapMs: 10_000,
  ejectAfter: 5,
  ejectFailurePercent: 50,
  ejectMinRequests: 20,
  ejectWindowMs: 10_000,
  ejectBaseMs: 5_000,
  ejectMaxMs: 300_000,
  maxConcurrency: 0,
  fallbacks: Object.freeze([]) as readonly string[],
});

export function compilePolicy(provider: RoutingInput | undefined, model: RoutingInput | undefined): RoutingPolicy {
  if (!provider && !model) return DEFAULT_POLICY;
  const p: RoutingPolicy = { ...DEFAULT_POLICY };
  for (const src of [provider, model]) {
    if (!src) continue;
    for (const k of Object.keys(src) as (keyof RoutingInput)[]) {
      const v = src[k];
      if (v !== undefined) (p as unknown as Record<string, unknown>)[k] = v;
    }
  }
  return Object.freeze(p);
}
