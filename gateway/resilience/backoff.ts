// How long to wait before the next attempt: full-jitter exponential backoff, or the upstream's retry-after.
import type { IncomingHttpHeaders } from 'node:http';
import type { Abortable } from '../upstream/abort-switch.ts';
import { watchAbort } from '../upstream/abort-switch.ts';
import type { RoutingPolicy } from './policy.ts';

/** Full jitter: uniform in [0, min(max, base·2^(attempt-1))], so a burst of clients does not retry in step. */
export function backoffMs(policy: RoutingPolicy, attempt: number, random: () => number = Math.random): number {
  const ceiling = Math.min(policy.backoffMaxMs, policy.backoffBaseMs * 2 ** Math.max(0, attempt - 1));
  return Math.floor(random() * ceiling);
}

/**
 * The upstream's `retry-after` (seconds or an HTTP date) or `retry-after-ms`, in milliseconds; undefined when absent
 * or unreadable.
 */
export function retryAfterMs(headers: IncomingHttpHeaders, now = Date.now()): number | undefined {
  const ms = headers['retry-after-ms'];
  if (typeof ms === 'string' && /^\d+(\.\d+)?$/.test(ms.trim())) return Math.ceil(Number(ms));
  const v = headers['retry-after'];
  if (typeof v !== 'string' || v.trim() === '') return undefined;
  const s = v.trim();
  if (/^\d+(\.\d+)?$/.test(s)) return Math.ceil(Number(s) * 1000);
  const at = Date.parse(s);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** Resolves after `ms`, or at once (false) when `signal` aborts first. */
export function pause(ms: number, signal: Abortable): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  if (ms <= 0) return Promise.resolve(true);
  return new Promise((resolve) => {
    const t = setTimeout(() => {
      unwatch();
      resolve(true);
    }, ms);
    const unwatch = watchAbort(signal, {
      onAbort() {
        clearTimeout(t);
        resolve(false);
      },
    });
  });
}
