import { describe, expect, it } from 'vitest';
import { generateApiKey } from '../auth/api-key.ts';
import { GatewayError } from '../errors.ts';
import type { RelayCall } from '../relay/relay.ts';
import { compileSnapshot } from '../snapshot/runtime.ts';
import { snapshotSchema } from '../snapshot/schema.ts';
import { withFallbacks } from './fallbacks.ts';
import { retryableStatus } from './attempts.ts';
import { backoffMs, retryAfterMs } from './backoff.ts';
import { FailureWindow, TargetHealth } from './health.ts';
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

describe('retryable statuses', () => {
  it('retries 408, 429, 5xx gateway errors and Anthropic 529; never other 4xx or 501', () => {
    for (const s of [408, 429, 500, 502, 503, 504, 529]) expect(retryableStatus(s), String(s)).toBe(true);
    for (const s of [200, 400, 401, 403, 404, 409, 413, 422, 501, 505]) expect(retryableStatus(s), String(s)).toBe(false);
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
  const policy = { ...DEFAULT_POLICY, ejectAfter: 2, ejectBaseMs: 1000, ejectMaxMs: 3000, ejectFailurePercent: 0 };

  it('ejects after consecutive failures, probes once half-open, doubles the cooldown up to the cap, recovers', () => {
    const h = new TargetHealth('k', 'p', 'm');
    h.failed('server_error', 0, policy);
    expect(h.state).toBe('healthy');
    h.succeeded('success', 0, policy);
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
    h.succeeded('success', 0, policy);
    h.release();
    expect(h.state).toBe('healthy');
    expect(h.ejections).toBe(3);
    // Recovered: the next ejection starts from the base cooldown again.
    h.failed('server_error', 10_000, policy);
    h.failed('server_error', 10_000, policy);
    expect(h.ejectedUntil).toBe(11_000);
  });

  it('a late success from before the ejection leaves the cooldown as it is', () => {
    const h = new TargetHealth('k', 'p', 'm');
    h.begin(); // sent while healthy, answers after the ejection
    h.failed('server_error', 0, policy);
    h.failed('server_error', 0, policy);
    expect(h.state).toBe('ejected');
    h.succeeded('success', 10, policy);
    h.release();
    expect(h.state).toBe('ejected');
    expect(h.available(999, policy)).toBe(false);
    expect(h.available(1000, policy)).toBe(true);
  });

  it('a probe that ends without an outcome (aborted) lets the next request probe', () => {
    const h = new TargetHealth('k', 'p', 'm');
    h.failed('server_error', 0, policy);
    h.failed('server_error', 0, policy);
    expect(h.available(1000, policy)).toBe(true);
    expect(h.begin()).toBe(true);
    expect(h.available(1000, policy)).toBe(false);
    h.release(true);
    expect(h.state).toBe('half_open');
    expect(h.available(1000, policy)).toBe(true);
    // An attempt from before that ends meanwhile frees no probe.
    expect(h.begin()).toBe(true);
    h.release();
    expect(h.available(1000, policy)).toBe(false);
  });

  it('a client error proves the target alive', () => {
    const h = new TargetHealth('k', 'p', 'm');
    h.failed('server_error', 0, policy);
    h.succeeded('client_error', 0, policy);
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

describe('failure-ratio ejection (fake clock)', () => {
  // Consecutive ejection out of the way: only the ratio can eject here.
  const policy = { ...DEFAULT_POLICY, ejectAfter: 1_000, ejectFailurePercent: 50, ejectMinRequests: 20, ejectWindowMs: 10_000, ejectBaseMs: 1000, ejectMaxMs: 8000 };

  /** Alternating success/failure, one every `stepMs` from `t0`: never two failures in a row. */
  function alternate(h: TargetHealth, n: number, t0: number, stepMs: number, p = policy): number {
    let t = t0;
    for (let i = 0; i < n; i++, t += stepMs) {
      if (i % 2 === 0) h.succeeded('success', t, p);
      else h.failed('server_error', t, p);
    }
    return t;
  }

  it('ejects at 50 % failures once the window holds 20 attempts, never before', () => {
    const h = new TargetHealth('k', 'p', 'm');
    alternate(h, 19, 0, 100);
    expect(h.state).toBe('healthy');
    expect(h.view(0).window).toEqual({ requests: 19, failures: 9 });
    h.failed('server_error', 1900, policy); // 20 attempts, 10 failed
    expect(h.state).toBe('ejected');
    expect(h.lastEjectCause).toBe('ratio');
    expect(h.ejectedUntil).toBe(2900);
    expect(h.view(2000).window).toEqual({ requests: 0, failures: 0 }); // cleared on ejection
  });

  it('a lower share of failures never ejects, however long it goes on', () => {
    const h = new TargetHealth('k', 'p', 'm');
    let t = 0;
    for (let i = 0; i < 10_000; i++, t += 7) {
      if (i % 3 === 2) h.failed('rate_limited', t, policy);
      else h.succeeded('success', t, policy);
    }
    expect(h.state).toBe('healthy');
    expect(h.ejections).toBe(0);
  });

  it('failures that slid out of the window no longer count', () => {
    const h = new TargetHealth('k', 'p', 'm');
    // 10 failures among 20 attempts in 600 ms eject...
    alternate(h, 20, 0, 30);
    expect(h.state).toBe('ejected');
    const h2 = new TargetHealth('k', 'p', 'm');
    // ...but spread so that at most 19 attempts are ever inside a 10 s window: never ejected.
    alternate(h2, 200, 0, 600);
    expect(h2.state).toBe('healthy');
    expect(h2.window.requests).toBeLessThan(20);
    // After a pause longer than the window, the window is empty again.
    h2.succeeded('success', 1_000_000, policy);
    expect(h2.view(1_000_000).window).toEqual({ requests: 1, failures: 0 });
  });

  it('the same half-open probe and cooldown growth as consecutive ejection', () => {
    const h = new TargetHealth('k', 'p', 'm');
    let t = alternate(h, 20, 0, 10);
    expect(h.state).toBe('ejected');
    expect(h.ejectedUntil - (t - 10)).toBe(1000);
    t = h.ejectedUntil;
    expect(h.available(t, policy)).toBe(true);
    h.begin();
    expect(h.available(t, policy)).toBe(false); // one probe only
    h.failed('server_error', t, policy);
    h.release();
    expect(h.state).toBe('ejected');
    expect(h.lastEjectCause).toBe('ratio');
    expect(h.ejectedUntil - t).toBe(2000); // doubled
    t = h.ejectedUntil;
    expect(h.available(t, policy)).toBe(true);
    h.begin();
    h.succeeded('success', t, policy);
    h.release();
    expect(h.state).toBe('healthy');
    // Recovered with an empty window: the failures from before do not eject it again.
    alternate(h, 19, t, 1);
    expect(h.state).toBe('healthy');
    expect(h.ejections).toBe(2);
  });

  it('off with ejectFailurePercent 0; a late answer from before an ejection is not counted', () => {
    const off = { ...policy, ejectFailurePercent: 0 };
    const h = new TargetHealth('k', 'p', 'm');
    alternate(h, 1000, 0, 1, off);
    expect(h.state).toBe('healthy');
    const h2 = new TargetHealth('k', 'p', 'm');
    alternate(h2, 20, 0, 1);
    expect(h2.state).toBe('ejected');
    const until = h2.ejectedUntil;
    h2.failed('server_error', 25, policy);
    expect(h2.ejectedUntil).toBe(until);
    expect(h2.ejections).toBe(1);
  });

  it('the window ring allocates nothing per outcome and changes bucket size with the policy', () => {
    const w = new FailureWindow();
    for (let i = 0; i < 5; i++) w.record(i * 1000, true, 10_000, 50, 100);
    expect([w.requests, w.failures]).toEqual([5, 5]);
    w.record(5000, false, 20_000, 50, 100); // another window length: starts over
    expect([w.requests, w.failures]).toEqual([1, 0]);
  });
});

describe('fallbacks', () => {
  it('skips a fallback the request cannot be built for, and tries the next', () => {
    const k = generateApiKey();
    const model = (id: string, extra: Record<string, unknown> = {}) => ({ id, pricingGroup: 'g', protocols: { openai: [{ provider: 'p', model: id }] }, ...extra });
    const s = compileSnapshot(
      snapshotSchema.parse({
        providers: [{ id: 'p', baseUrl: 'http://127.0.0.1:9/v1' }],
        pricingGroups: [{ id: 'g', mode: 'flat_tokens', prices: { input: '1', output: '2' } }],
        models: [model('m/a', { routing: { fallbacks: ['m/b', 'm/c'] } }), model('m/b'), model('m/c')],
        organizations: [{ id: 'o', models: ['*'] }],
        apiKeys: [{ id: 'k', hash: k.hash, prefix: k.prefix, organization: 'o', project: 'web' }],
      }),
    );
    const first = s.byName.get('m/a')!;
    const made: string[] = [];
    const call = withFallbacks(s, s.keysByHash.get(k.hash)!, first, { model: first } as unknown as RelayCall, (m) => {
      made.push(m.id);
      // m/b cannot take this request (a conversion its protocol refuses).
      if (m.id === 'm/b') throw new GatewayError('invalid_request', 'cannot be expressed');
      return { model: m } as unknown as RelayCall;
    });
    const next = call.fallback!();
    expect(made).toEqual(['m/b', 'm/c']);
    expect(next!.model.id).toBe('m/c');
    expect(next!.fallback!()).toBeUndefined();
  });
});
