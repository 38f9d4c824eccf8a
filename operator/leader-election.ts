// Leader election on a coordination.k8s.io Lease with client-go's semantics: leaseDuration 15 s, renewDeadline
// 10 s, retryPeriod 2 s; optimistic concurrency on the Lease's resourceVersion (a 409 means someone else won);
// expiry judged by when *we* last saw the record change (local clock), never by the other holder's timestamps.
// A leader that cannot renew within renewDeadline stops leading at once, before its lease can expire elsewhere.
import type { V1Lease } from '@kubernetes/client-node';
import type { Logger } from '../kube/informer.ts';
import { quietLogger, statusOf } from '../kube/informer.ts';
import type { KubeClient } from './kube.ts';

export interface ElectorOptions {
  client: KubeClient;
  name: string;
  identity: string;
  leaseDurationMs?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
  onStartedLeading: () => void;
  onStoppedLeading: () => void;
  log?: Logger;
}

export class LeaderElector {
  private readonly o: Required<ElectorOptions>;
  private leading = false;
  private lastRenew = 0;
  private observed = '';
  private observedAt = 0;
  private timer: NodeJS.Timeout | undefined;
  private stopped = true;
  private tick: Promise<void> | undefined;

  constructor(o: ElectorOptions) {
    this.o = { ...o, leaseDurationMs: o.leaseDurationMs ?? 15_000, renewDeadlineMs: o.renewDeadlineMs ?? 10_000, retryPeriodMs: o.retryPeriodMs ?? 2_000, log: o.log ?? quietLogger };
  }

  /** True only while the last successful renew is younger than renewDeadline: the fence before every write. */
  isLeader(): boolean {
    return this.leading && Date.now() - this.lastRenew < this.o.renewDeadlineMs;
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    const loop = () => {
      this.tick = this.tryAcquireOrRenew().finally(() => {
        this.tick = undefined;
        if (!this.stopped) {
          // Jitter the candidates' retries, as client-go does (JitterFactor 1.2).
          const delay = this.leading ? this.o.retryPeriodMs : this.o.retryPeriodMs * (1 + Math.random() * 0.2);
          this.timer = setTimeout(loop, delay);
        }
      });
    };
    loop();
  }

  /** Stops campaigning; a leader releases the Lease so the next replica takes over without waiting for expiry. */
  async stop(opts: { release?: boolean } = {}): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.tick;
    if (opts.release === false) {
      this.setLeading(false);
      return;
    }
    if (this.leading) {
      this.setLeading(false);
      try {
        const l = await this.o.client.readLease(this.o.name);
        if (l.spec?.holderIdentity === this.o.identity) {
          await this.o.client.replaceLease({ ...l, spec: { ...l.spec, holderIdentity: '', leaseDurationSeconds: 1, renewTime: new Date() } });
        }
      } catch (err) {
        this.o.log.warn({ err: (err as Error).message }, 'could not release the leader Lease');
      }
    }
  }

  private setLeading(v: boolean): void {
    if (v === this.leading) return;
    this.leading = v;
    this.o.log.info({ identity: this.o.identity, lease: this.o.name }, v ? 'became leader' : 'stopped leading');
    if (v) this.o.onStartedLeading();
    else this.o.onStoppedLeading();
  }

  private async tryAcquireOrRenew(): Promise<void> {
    const now = new Date();
    const durationSeconds = Math.max(1, Math.round(this.o.leaseDurationMs / 1000));
    try {
      let lease: V1Lease;
      try {
        lease = await this.o.client.readLease(this.o.name);
      } catch (err) {
        if (statusOf(err) !== 404) throw err;
        await this.o.client.createLease({ metadata: { name: this.o.name }, spec: { holderIdentity: this.o.identity, leaseDurationSeconds: durationSeconds, acquireTime: now, renewTime: now, leaseTransitions: 0 } });
        this.lastRenew = Date.now();
        this.setLeading(true);
        return;
      }
      const spec = lease.spec ?? {};
      const record = `${spec.holderIdentity ?? ''}|${String(spec.renewTime ?? '')}|${spec.leaseDurationSeconds ?? ''}`;
      if (record !== this.observed) {
        this.observed = record;
        this.observedAt = Date.now();
      }
      const holder = spec.holderIdentity ?? '';
      const heldByOther = holder !== '' && holder !== this.o.identity;
      const expired = this.observedAt + (spec.leaseDurationSeconds ?? durationSeconds) * 1000 < Date.now();
      if (heldByOther && !expired) {
        this.setLeading(false);
        return;
      }
      const acquiring = holder !== this.o.identity;
      const next = await this.o.client.replaceLease({
        ...lease,
        spec: {
          ...spec,
          holderIdentity: this.o.identity,
          leaseDurationSeconds: durationSeconds,
          renewTime: now,
          acquireTime: acquiring ? now : spec.acquireTime,
          leaseTransitions: (spec.leaseTransitions ?? 0) + (acquiring && holder !== '' ? 1 : 0),
        },
      });
      this.observed = `${next.spec?.holderIdentity ?? ''}|${String(next.spec?.renewTime ?? '')}|${next.spec?.leaseDurationSeconds ?? ''}`;
      this.observedAt = Date.now();
      this.lastRenew = Date.now();
      this.setLeading(true);
    } catch (err) {
      const code = statusOf(err);
      if (code !== 409) this.o.log.warn({ err: (err as Error).message, status: code }, 'leader Lease not renewed');
      // Past the renew deadline without a renew (or having lost a race): stop writing now.
      if (this.leading && (code === 409 || Date.now() - this.lastRenew >= this.o.renewDeadlineMs)) this.setLeading(false);
    }
  }
}
