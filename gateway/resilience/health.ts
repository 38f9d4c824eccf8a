// Outlier ejection per upstream target (provider base URL + upstream model): consecutive failures, or a failure
// ratio over a sliding window, eject it for a cooldown that doubles on every repeat; once the cooldown is over one
// request probes it (half-open) and its outcome closes the circuit again or ejects it for longer. State lives per
// process and survives snapshot reloads.
import type { UpstreamTarget } from '../snapshot/runtime.ts';
import type { RoutingPolicy } from './policy.ts';

export type TargetState = 'healthy' | 'ejected' | 'half_open';
/** What ejected a target last: a run of failures, or too high a share of failures in the window. */
export type EjectCause = 'consecutive' | 'ratio';

/** Buckets in the failure-ratio window: the window slides in steps of ejectWindowMs / BUCKETS. */
const BUCKETS = 10;

/**
 * Attempts and failures over the last `windowMs`, in a fixed ring of buckets: recording an outcome touches two
 * counters (and zeroes the buckets that slid out since the last one), so the hot path allocates nothing.
 */
export class FailureWindow {
  private readonly total = new Uint32Array(BUCKETS);
  private readonly failed = new Uint32Array(BUCKETS);
  private bucketMs = 0;
  /** Index (time / bucketMs) of the newest bucket written. */
  private head = 0;
  requests = 0;
  failures = 0;

  /** Counts one outcome at `now`; returns whether the share of failures reaches `percent` over at least `min` requests. */
  record(now: number, failure: boolean, windowMs: number, percent: number, min: number): boolean {
    const bucketMs = Math.max(1, Math.ceil(windowMs / BUCKETS));
    if (bucketMs !== this.bucketMs) {
      // Another window length (a reload changed the policy): start over rather than mix bucket sizes.
      this.clear();
      this.bucketMs = bucketMs;
    }
    const idx = Math.floor(now / bucketMs);
    if (idx > this.head) {
      // Buckets that slid out of the window since the last outcome are emptied (all of them after a long pause).
      const gone = Math.min(BUCKETS, idx - this.head);
      for (let i = 1; i <= gone; i++) {
        const b = (this.head + i) % BUCKETS;
        this.requests -= this.total[b];
        this.failures -= this.failed[b];
        this.total[b] = 0;
        this.failed[b] = 0;
      }
      this.head = idx;
    }
    // An outcome stamped before the head (a slow request finishing after a fast one) lands in the head bucket.
    const b = this.head % BUCKETS;
    this.total[b]++;
    this.requests++;
    if (failure) {
      this.failed[b]++;
      this.failures++;
    }
    return failure && percent > 0 && this.requests >= min && this.failures * 100 >= percent * this.requests;
  }

  clear(): void {
    this.total.fill(0);
    this.failed.fill(0);
    this.requests = 0;
    this.failures = 0;
    this.head = 0;
  }
}

/** How one attempt ended, as counted in metrics and /upstreams. */
export type AttemptOutcome = 'success' | 'client_error' | 'rate_limited' | 'server_error' | 'transport_error' | 'timeout';
export const OUTCOMES: readonly AttemptOutcome[] = ['success', 'client_error', 'rate_limited', 'server_error', 'transport_error', 'timeout'];

export class TargetHealth {
  readonly key: string;
  readonly provider: string;
  readonly model: string;
  state: TargetState = 'healthy';
  consecutiveFailures = 0;
  /** Ejections since the target last recovered: the exponent of the next cooldown. */
  private streak = 0;
  ejectedUntil = 0;
  /** A half-open target lets exactly one request through. */
  private probing = false;
  inFlight = 0;
  /** Outcomes seen while healthy, for the failure-ratio detector. */
  readonly window = new FailureWindow();
  lastEjectCause: EjectCause | undefined;
  // Totals since the process started (monotonic counters for metrics).
  readonly attempts: Record<AttemptOutcome, number> = { success: 0, client_error: 0, rate_limited: 0, server_error: 0, transport_error: 0, timeout: 0 };
  retries = 0;
  ejections = 0;
  /** Ejections by the detector that fired. */
  readonly ejectionsBy: Record<EjectCause, number> = { consecutive: 0, ratio: 0 };

  constructor(key: string, provider: string, model: string) {
    this.key = key;
    this.provider = provider;
    this.model = model;
  }

  /** Whether a request may be sent now (moves an ejected target whose cooldown is over to half-open). */
  available(now: number, policy: RoutingPolicy): boolean {
    if (policy.maxConcurrency > 0 && this.inFlight >= policy.maxConcurrency) return false;
    if (this.state === 'healthy') return true;
    if (this.state === 'ejected') {
      if (now < this.ejectedUntil) return false;
      this.state = 'half_open';
      this.probing = false;
    }
    return !this.probing;
  }

  /** Full because of its concurrency limit (rather than ejected). */
  saturated(policy: RoutingPolicy): boolean {
    return policy.maxConcurrency > 0 && this.inFlight >= policy.maxConcurrency;
  }

  /** An attempt starts; true when it is the half-open target's probe. */
  begin(): boolean {
    this.inFlight++;
    if (this.state !== 'half_open') return false;
    this.probing = true;
    return true;
  }

  /**
   * The request is over (answer relayed or given up): frees its concurrency slot. A probe that ended without an
   * outcome (the request aborted, or its own upload refused itself) lets the next request probe instead.
   */
  release(probe = false): void {
    if (this.inFlight > 0) this.inFlight--;
    if (probe && this.state === 'half_open') this.probing = false;
  }

  /** An answer that says the target works (2xx/3xx, or a 4xx about the request itself). */
  succeeded(outcome: 'success' | 'client_error', now: number, policy: RoutingPolicy): void {
    this.attempts[outcome]++;
    this.consecutiveFailures = 0;
    // An attempt sent before the ejection, answering late: the cooldown stands (as for a late failure).
    if (this.state === 'ejected') return;
    if (this.state !== 'healthy') {
      this.state = 'healthy';
      this.streak = 0;
      this.probing = false;
    } else if (policy.ejectFailurePercent > 0) this.window.record(now, false, policy.ejectWindowMs, policy.ejectFailurePercent, policy.ejectMinRequests);
  }

  failed(outcome: Exclude<AttemptOutcome, 'success' | 'client_error'>, now: number, policy: RoutingPolicy): void {
    this.attempts[outcome]++;
    this.consecutiveFailures++;
    if (this.state === 'half_open') this.eject(now, policy, this.lastEjectCause ?? 'consecutive');
    else if (this.state !== 'healthy') return; // an attempt sent before the ejection, answering late
    else if (this.consecutiveFailures >= policy.ejectAfter) this.eject(now, policy, 'consecutive');
    else if (policy.ejectFailurePercent > 0 && this.window.record(now, true, policy.ejectWindowMs, policy.ejectFailurePercent, policy.ejectMinRequests)) this.eject(now, policy, 'ratio');
  }

  private eject(now: number, policy: RoutingPolicy, cause: EjectCause): void {
    // The window starts empty after an ejection: failures that ejected the target once do not eject it again
    // the moment its probe succeeds.
    this.window.clear();
    this.lastEjectCause = cause;
    this.streak++;
    this.ejections++;
    this.ejectionsBy[cause]++;
    const cooldown = Math.min(policy.ejectMaxMs, policy.ejectBaseMs * 2 ** (this.streak - 1));
    this.ejectedUntil = now + cooldown;
    this.state = 'ejected';
    this.probing = false;
  }

  view(now: number): UpstreamView {
    return {
      provider: this.provider,
      model: this.model,
      state: this.state === 'ejected' && now >= this.ejectedUntil ? 'half_open' : this.state,
      healthy: this.state === 'healthy',
      consecutiveFailures: this.consecutiveFailures,
      window: { requests: this.window.requests, failures: this.window.failures },
      lastEjectCause: this.lastEjectCause ?? null,
      ejectedUntil: this.state === 'ejected' ? new Date(this.ejectedUntil).toISOString() : null,
      inFlight: this.inFlight,
      attempts: { ...this.attempts },
      retries: this.retries,
      ejections: this.ejections,
      ejectionsBy: { ...this.ejectionsBy },
    };
  }
}

export interface UpstreamView {
  provider: string;
  model: string;
  state: TargetState;
  healthy: boolean;
  consecutiveFailures: number;
  /** Outcomes in the failure-ratio window (while healthy). */
  window: { requests: number; failures: number };
  lastEjectCause: EjectCause | null;
  ejectedUntil: string | null;
  inFlight: number;
  attempts: Record<AttemptOutcome, number>;
  retries: number;
  ejections: number;
  ejectionsBy: Record<EjectCause, number>;
}

/** Every target's health in this process, found per target object without building a key on the request path. */
export class HealthRegistry {
  private readonly byKey = new Map<string, TargetHealth>();
  private readonly byTarget = new WeakMap<UpstreamTarget, TargetHealth>();

  of(target: UpstreamTarget): TargetHealth {
    let h = this.byTarget.get(target);
    if (h) return h;
    // A reloaded snapshot brings new target objects for the same upstream: they share its state.
    const key = `${target.provider.id} ${target.provider.baseUrl} ${target.model}`;
    h = this.byKey.get(key);
    if (!h) this.byKey.set(key, (h = new TargetHealth(key, target.provider.id, target.model)));
    this.byTarget.set(target, h);
    return h;
  }

  /** Targets out of rotation now (ejected, or half-open and not yet proven by a probe): what a pod reports. */
  *ejected(now = Date.now()): Generator<{ provider: string; model: string; state: 'ejected' | 'half_open' }> {
    for (const h of this.byKey.values()) {
      if (h.state === 'healthy') continue;
      yield { provider: h.provider, model: h.model, state: h.state === 'ejected' && now < h.ejectedUntil ? 'ejected' : 'half_open' };
    }
  }

  all(): Iterable<TargetHealth> {
    return this.byKey.values();
  }

  /** The /upstreams body: each target's state, with the snapshot generation this process serves. */
  view(generation: number | undefined, now = Date.now()): { generation: number | null; upstreams: UpstreamView[] } {
    const upstreams: UpstreamView[] = [];
    for (const h of this.byKey.values()) upstreams.push(h.view(now));
    upstreams.sort((a, b) => (a.provider + a.model < b.provider + b.model ? -1 : 1));
    return { generation: generation ?? null, upstreams };
  }
}
