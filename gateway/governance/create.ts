// Builds the governor for one gateway process: in-process counters, or Redis when a URL is given; and the
// reconciliation that raises spend counters to what the ledger says was spent (at start, then every minute).
import type { Meter } from '@opentelemetry/api';
import type { Logger } from 'pino';
import { spendSince } from '../ledger/spend-rollup.ts';
import type { SpendScope } from '../ledger/spend-rollup.ts';
import type { SnapshotHolder } from '../snapshot/holder.ts';
import type { RuntimeSnapshot } from '../snapshot/runtime.ts';
import type { Store } from '../store/store.ts';
import type { CounterBackend } from './backend.ts';
import { Governor } from './governor.ts';
import { MemoryBackend } from './memory-backend.ts';
import { periodId, periodStart, spendTtl } from './periods.ts';
import type { RatesWhenDown } from './redis-backend.ts';
import type { Rule } from './rules.ts';
import { SpendReportBuilder } from './spend-report.ts';
import { pointsToUnits } from './spend-units.ts';

export interface CreateGovernorOptions {
  redisUrl?: string;
  redisPrefix?: string;
  ratesWhenDown?: RatesWhenDown;
  redisTimeoutMs?: number;
  log: Logger;
  store: Store;
  holder: SnapshotHolder;
  meter?: Meter;
  reconcileEveryMs?: number;
  redisPodTtlMs?: number;
}

export async function createGovernor(o: CreateGovernorOptions): Promise<Governor> {
  let backend: CounterBackend;
  let degraded = (): boolean => false;
  if (o.redisUrl) {
    const { RedisBackend } = await import('./redis-backend.ts');
    const calls = o.meter?.createCounter('tollgate.limits.redis.calls', { description: 'Script calls sent to Redis by the limits (each carries the admissions of one event-loop turn and the settlements queued since).' });
    const admissions = o.meter?.createCounter('tollgate.limits.redis.admissions', { description: 'Requests admitted (or refused) through Redis: divided by tollgate.limits.redis.calls, the requests sharing one call.' });
    const onBatch = calls && admissions ? (n: number) => {
      calls.add(1);
      if (n > 0) admissions.add(n);
    } : undefined;
    const redis = new RedisBackend({ url: o.redisUrl, prefix: o.redisPrefix, ratesWhenDown: o.ratesWhenDown, commandTimeoutMs: o.redisTimeoutMs, podTtlMs: o.redisPodTtlMs, log: o.log, onBatch });
    try {
      await redis.ready();
    } catch {
      // Serving never waits for Redis: the pod starts degraded and joins the shared counters when Redis answers.
      o.log.warn('redis not reachable at start: limits served from the local view until it is');
    }
    backend = redis;
    degraded = () => redis.degraded;
    if (o.meter) {
      const pods = o.meter.createObservableGauge('tollgate.limits.pods', { description: 'Pods sharing the Redis counters as this pod last counted them: while Redis is unreachable each takes this share of every limit and of what was left of each budget.' });
      pods.addCallback((r) => r.observe(redis.share.pods));
    }
  } else backend = new MemoryBackend();
  if (o.meter) {
    const g = o.meter.createObservableGauge('tollgate.limits.degraded', { description: '1 while the shared limit counters (Redis) cannot be reached and limits are served from this pod\'s local view.' });
    g.addCallback((r) => r.observe(degraded() ? 1 : 0, { 'tollgate.limits.backend': backend.kind }));
  }
  const governor = new Governor({ backend });
  const every = o.reconcileEveryMs ?? 60_000;
  let running = false;
  const tick = () => {
    const s = o.holder.current;
    if (!s || running) return;
    running = true;
    reconcile(backend, o.store, s, governor.now()).then(
      (report) => {
        running = false;
        governor.spendReport = report;
      },
      (err: unknown) => {
        running = false;
        o.log.warn({ err: (err as Error).message }, 'limits: reconciliation with the ledger failed');
      },
    );
  };
  const timer = setInterval(tick, every);
  timer.unref();
  o.holder.onChange(() => setImmediate(tick));
  const close = governor.close.bind(governor);
  governor.close = async () => {
    clearInterval(timer);
    await close();
  };
  return governor;
}

/**
 * Raises every budget counter of the snapshot to the ledger's spend for its current period; returns those figures
 * for organizations and keys as the report the operator shows on their status (gateway/governance/spend-report.ts).
 */
export async function reconcile(backend: CounterBackend, store: Store, s: RuntimeSnapshot, now: number): Promise<string | undefined> {
  const seen = new Set<string>();
  const report = new SpendReportBuilder(periodId('day', now), periodId('month', now));
  const one = async (r: Rule, scope: SpendScope, ref?: string) => {
    const key = r.id + periodId(r.period!, now);
    if (seen.has(key)) return;
    seen.add(key);
    const spent = await spendSince(store, scope, new Date(periodStart(r.period!, now)));
    await backend.raiseSpend(key, pointsToUnits(spent), spendTtl(r));
    if (ref !== undefined) report.add(ref, r.period!, spent);
  };
  for (const org of s.organizations.values()) {
    const g = org.governance;
    if (!g) continue;
    for (const r of g.rules) if (r.kind === 'budget') await one(r, { scope: 'organization', organization: org.id }, `Organization/${org.id}`);
    for (const [project, rules] of g.projects) for (const r of rules) if (r.kind === 'budget') await one(r, { scope: 'project', organization: org.id, project });
  }
  for (const k of s.keysByHash.values()) {
    for (const r of k.governance?.rules ?? []) if (r.kind === 'budget' && r.scope === 'key') await one(r, { scope: 'key', apiKeyId: k.id }, `ApiKey/${k.id}`);
  }
  return report.text();
}
