// The upstream exchange with retries: picks a healthy target, sends, and on a retryable failure (before anything
// reached the client) waits and tries again, on the next target when there is one. The first attempt that
// succeeds allocates nothing here beyond what a single send did.
import type { Readable } from 'node:stream';
import { GatewayError } from '../errors.ts';
import type { UpstreamTarget } from '../snapshot/runtime.ts';
import type { Protocol } from '../snapshot/schema.ts';
import type { Exchange, ExchangeCall } from '../telemetry/exchange.ts';
import type { Abortable } from '../upstream/abort-switch.ts';
import { AbortSwitch } from '../upstream/abort-switch.ts';
import type { UpstreamClient, UpstreamResponse } from '../upstream/client.ts';
import { isTimeout, upstreamError } from '../upstream/client.ts';
import { backoffMs, pause, retryAfterMs } from './backoff.ts';
import type { AttemptOutcome, HealthRegistry, TargetHealth } from './health.ts';
import type { RoutingPolicy } from './policy.ts';

export interface AttemptCall extends ExchangeCall {
  protocol: Protocol;
  targets: UpstreamTarget[];
  build(target: UpstreamTarget): { path: string; body: string | Buffer | Readable; contentType?: string };
  passHeaders?: Record<string, string>;
}

/** Told of every attempt before it is sent (the relay needs the target that is answering). */
export type OnAttempt = (target: UpstreamTarget, health: TargetHealth) => void;

/** Exhausted: every attempt failed (or every target is ejected) before an answer could be relayed. */
export class ExhaustedError extends GatewayError {}

/** Status codes worth another attempt: the request itself was fine, the upstream could not serve it now.
 * 529 is Anthropic's "overloaded", a 503 by another number. */
export function retryableStatus(status: number): boolean {
  return status === 408 || status === 429 || status === 500 || status === 502 || status === 503 || status === 504 || status === 529;
}

function statusOutcome(status: number): AttemptOutcome {
  if (status < 400) return 'success';
  if (status === 429) return 'rate_limited';
  if (status === 408) return 'timeout';
  return status >= 500 ? 'server_error' : 'client_error';
}

/**
 * Sends `call` and returns the upstream response to relay: a success, a non-retryable error, or the last retryable
 * error once attempts or time ran out. Throws (ExhaustedError) when no attempt got an answer at all.
 */
export async function sendWithRetries(
  client: UpstreamClient,
  registry: HealthRegistry,
  policy: RoutingPolicy,
  call: AttemptCall,
  signal: Abortable,
  deadline: number,
  tel: Exchange,
  onAttempt: OnAttempt,
): Promise<UpstreamResponse> {
  const targets = call.targets;
  const n = targets.length;
  let attempt = 0;
  let next = 0;
  let lastErr: GatewayError | undefined;
  for (;;) {
    const now = Date.now();
    // The next target in order that may take a request; ejected and full ones are skipped.
    let target: UpstreamTarget | undefined;
    let health: TargetHealth | undefined;
    let saturated = false;
    for (let i = 0; i < n; i++) {
      const t = targets[(next + i) % n];
      const h = registry.of(t);
      if (h.available(now, policy)) {
        target = t;
        health = h;
        next = (next + i + 1) % n;
        break;
      }
      if (h.saturated(policy)) saturated = true;
    }
    if (!target || !health) {
      if (lastErr) throw new ExhaustedError(lastErr.kind, lastErr.message);
      if (saturated) throw new ExhaustedError('upstream_unavailable', 'Every upstream of this model is at its concurrency limit; try again shortly.', { status: 503 });
      throw new ExhaustedError('upstream_unavailable', 'Every upstream of this model is ejected after repeated failures; try again shortly.', { status: 503 });
    }
    attempt++;
    const { path, body, contentType } = call.build(target);
    // A streamed body can be sent once: no attempt after this one.
    const last = attempt >= policy.maxAttempts || (typeof body !== 'string' && !Buffer.isBuffer(body));
    const probe = health.begin();
    onAttempt(target, health);
    tel.upstreamStart(call, target);
    let res: UpstreamResponse;
    try {
      res = await client.request({ provider: target.provider, protocol: call.protocol, path, body, contentType, passHeaders: tel.upstreamHeaders(call.passHeaders), signal });
    } catch (err) {
      if (err instanceof GatewayError && err.status < 500) {
        // The request's own body refused itself while it was streamed up (a client error found mid-upload, a 4xx):
        // not the upstream's failure, and not worth another attempt; the client gets it as it is.
        tel.upstreamFailed(err);
        health.release(probe);
        throw err;
      }
      const e = upstreamError(err, target.provider.id, signal);
      tel.upstreamFailed(e);
      // Our own abort, or a provider with no credential: nothing another attempt could change (nor any outcome).
      if (signal.aborted || target.provider.missingCredential) {
        health.release(probe);
        throw e;
      }
      health.release();
      health.failed(isTimeout(err) || e.kind === 'upstream_timeout' ? 'timeout' : 'transport_error', Date.now(), policy);
      lastErr = e;
      if (last || stopped(signal)) throw new ExhaustedError(e.kind, e.message);
      const wait = backoffMs(policy, attempt);
      if (Date.now() + wait >= deadline) throw new ExhaustedError(e.kind, e.message);
      health.retries++;
      if (!(await pause(wait, signal))) throw e;
      if (stopped(signal)) throw new ExhaustedError(e.kind, e.message);
      continue;
    }
    const status = res.statusCode;
    tel.upstreamAnswered(status);
    const outcome = statusOutcome(status);
    if (outcome === 'success' || outcome === 'client_error') {
      health.succeeded(outcome, Date.now(), policy);
      return res;
    }
    health.failed(outcome, Date.now(), policy);
    if (last || !retryableStatus(status) || stopped(signal)) return res;
    let wait = backoffMs(policy, attempt);
    const asked = retryAfterMs(res.headers);
    if (asked !== undefined) {
      // Asked to wait longer than we would: the upstream's answer is the answer.
      if (asked > policy.retryAfterCapMs) return res;
      wait = Math.max(wait, asked);
    }
    if (Date.now() + wait >= deadline) return res;
    // This answer is dropped: close its attempt (its status is already counted and on its span) and its connection.
    lastErr = new GatewayError(status === 429 ? 'rate_limited' : 'upstream_unavailable', `The upstream provider "${target.provider.id}" answered ${status}.`, { status: status === 429 ? 429 : 502 });
    tel.upstreamDone();
    res.body.destroy();
    health.release();
    health.retries++;
    if (!(await pause(wait, signal)) || stopped(signal)) throw lastErr;
  }
}

/** The client left: the attempt in flight is relayed and billed as the provider bills it, but no other is started. */
function stopped(signal: Abortable): boolean {
  return signal instanceof AbortSwitch && signal.noMoreAttempts;
}
