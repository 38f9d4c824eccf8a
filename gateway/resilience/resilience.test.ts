import { describe, expect, it } from 'vitest';
import { backoffMs, retryAfterMs } from './backoff.ts';
import { TargetHealth } from './health.ts';
import { compilePolicy, DEFAULT_POLICY } from './policy.ts';

describe('backoff', () => {
  const p = { ...DEFAULT_POLICY, backoffBaseMs: 100, backoffMaxMs: 1000 };
  it('is full jitter under an exponential ceiling capped at backoffMaxMs', () => {
    expect([1, 2, 3, 4, 5].map((n) => backoffMs(p, n, () => 0.999999))).toEqual([99, 199, 399, 799, 999]);
    expect(backoffMs(p, 3, () => 0)).toBe(0);
  });

  it('reads retry-after as seconds, as an HTTP date, and retry-after-ms', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(retryAfterMs({ 'retry-after': '2' }, now)).toBe(2000);
    expect(retryAfterMs({ 'retry-after': '0.5' }, now)).toBe(500);
    expect(retryAfterMs({ 'retry-after': 'Thu, 01 Jan 2026 00:00:03 GMT' }, now)).toBe(3000);
    expect(retryAfterMs({ 'retry-after-ms': '250', 'retry-after': '9' }, now)).toBe(250);
    expect(retryAfterMs({ 'retry-after': 'soon' }, now)).toBeUndefined();
    expect(retryAfterMs({}, now)).toBeUndefined();
  });
});

describe('policy', () => {
  it('a model overrides its provider, which overrides the defaults', () => {
    const p = compilePolicy({ maxAttempts: 5, ejectAfter: 2 }, { maxAttempts: 2, fallbacks: ['b'] });
    expect(p).toMatchObject({ maxAttempts: 2, ejectAfter: 2, backoffBaseMs: DEFAULT_POLICY.backoffBaseMs, fallbacks: ['b'] });
    expect(compilePolicy(undefined, undefined)).toBe(DEFAULT_POLICY);
  });
});

describe('target health', () => {
  const policy = { ...DEFAULT_POLICY, ejectAfter: 2, ejectBaseMs: 1000, ejectMaxMs: 3000 };

  it('ejects after consecutive failures, probes once half-open, doubles the cooldown up to the cap, recovers', () => {
    const h = new TargetHealth('k', 'p', 'm');
    h.failed('server_error', 0, policy);
    expect(h.state).toBe('healthy');
    h.succeeded('success');
    h.failed('server_error', 0, policy);
    expect(h.state).toBe('healthy'); // a success in between reset the count
    h.failed('timeout', 0, policy);
    expect(h.state).toBe('ejected');
    expect(h.available(999, policy)).toBe(false);
    // Half-open: exactly one request goes through.
    expect(h.available(1000, policy)).toBe(true);
    h.begin();
    expect(h.available(1000, policy)).toBe(false);
    h.failed('server_error', 1000, policy);
    h.release();
    expect(h.ejectedUntil).toBe(3000); // doubled
    expect(h.available(2999, policy)).toBe(false);
    expect(h.available(3000, policy)).toBe(true);
    h.begin();
    h.failed('transport_error', 3000, policy);
    h.release();
    expect(h.ejectedUntil).toBe(6000); // capped at ejectMaxMs
    expect(h.available(6000, policy)).toBe(true);
    h.begin();
    h.succeeded('success');
    h.release();
    expect(h.state).toBe('healthy');
    expect(h.ejections).toBe(3);
    // Recovered: the next ejection starts from the base cooldown again.
    h.failed('server_error', 10_000, policy);
    h.failed('server_error', 10_000, policy);
    expect(h.ejectedUntil).toBe(11_000);
  });

  it('a client error proves the target alive', () => {
    const h = new TargetHealth('k', 'p', 'm');
    h.failed('server_error', 0, policy);
    h.succeeded('client_error');
    h.failed('server_error', 0, policy);
    expect(h.state).toBe('healthy');
  });

  it('a target at its concurrency limit is unavailable until a request ends', () => {
    const limited = { ...policy, maxConcurrency: 2 };
    const h = new TargetHealth('k', 'p', 'm');
    h.begin();
    h.begin();
    expect(h.available(0, limited)).toBe(false);
    expect(h.saturated(limited)).toBe(true);
    h.release();
    expect(h.available(0, limited)).toBe(true);
  });
});
