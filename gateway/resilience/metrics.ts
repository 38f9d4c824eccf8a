// Per-upstream metrics, read from the health registry when /metrics is scraped (no cost per request).
import type { Meter } from '@opentelemetry/api';
import type { HealthRegistry } from './health.ts';
import { OUTCOMES } from './health.ts';

export function observeUpstreams(meter: Meter, registry: HealthRegistry): void {
  const attempts = meter.createObservableCounter('tollgate.upstream.attempts', { description: 'Upstream attempts, by target and outcome (success, client_error, rate_limited, server_error, transport_error, timeout).', unit: '{attempt}' });
  const retries = meter.createObservableCounter('tollgate.upstream.retries', { description: 'Attempts sent again after a retryable failure, by the target that failed.', unit: '{attempt}' });
  const ejections = meter.createObservableCounter('tollgate.upstream.ejections', { description: 'Times a target was ejected, by the detector that fired (tollgate.upstream.ejection.cause: consecutive failures, or failure ratio in the window).', unit: '{ejection}' });
  const healthy = meter.createObservableGauge('tollgate.upstream.healthy', { description: '1 while a target takes traffic normally, 0 while it is ejected or half-open.' });
  const state = meter.createObservableGauge('tollgate.upstream.state', { description: '1 for the state a target is in (tollgate.upstream.state: healthy, ejected, half_open).' });
  const inFlight = meter.createObservableGauge('tollgate.upstream.in_flight', { description: 'Requests in flight per target.', unit: '{request}' });
  meter.addBatchObservableCallback(
    (r) => {
      const now = Date.now();
      for (const h of registry.all()) {
        const target = { 'tollgate.provider': h.provider, 'tollgate.upstream.model': h.model };
        for (const o of OUTCOMES) if (h.attempts[o] > 0) r.observe(attempts, h.attempts[o], { ...target, 'tollgate.upstream.outcome': o });
        r.observe(retries, h.retries, target);
        if (h.ejectionsBy.consecutive > 0) r.observe(ejections, h.ejectionsBy.consecutive, { ...target, 'tollgate.upstream.ejection.cause': 'consecutive' });
        if (h.ejectionsBy.ratio > 0) r.observe(ejections, h.ejectionsBy.ratio, { ...target, 'tollgate.upstream.ejection.cause': 'ratio' });
        const v = h.view(now);
        r.observe(healthy, v.healthy ? 1 : 0, target);
        r.observe(state, 1, { ...target, 'tollgate.upstream.state': v.state });
        r.observe(inFlight, h.inFlight, target);
      }
    },
    [attempts, retries, ejections, healthy, state, inFlight],
  );
}
