// Builds the RelayCall a route hands the relay: the fields every route fills the same way are filled here once.
import type { FastifyRequest } from 'fastify';
import { routeUrl } from '../http/route-url.ts';
import type { ProtocolAdapter } from '../protocols/adapter.ts';
import type { RelayCall } from './relay.ts';

/** What differs between routes; the rest of a RelayCall is the same everywhere and filled in by `relayCall`. */
export type CallSpec = Omit<RelayCall, 'requestId' | 'endpoint' | 'billing' | 'streamError' | 'passHeaders'> & Partial<Pick<RelayCall, 'endpoint' | 'billing' | 'passHeaders'>>;

/**
 * Completes `spec` in place into the call (no second object per request): the request id, the endpoint (default: the
 * route's path pattern), billing (default `text`), the client's trace headers (default pass-through headers), and
 * mid-stream errors framed by `client`, the protocol the client speaks (the upstream's is `spec.protocol`).
 */
export function relayCall(req: FastifyRequest, client: ProtocolAdapter, spec: CallSpec): RelayCall {
  const call = spec as RelayCall;
  call.requestId = req.id;
  call.endpoint ??= routePath(req);
  call.billing ??= 'text';
  call.passHeaders ??= traceHeaders(req);
  call.streamError = (err) => client.streamError(call.family, err);
  return call;
}

/** The route's path pattern (what the ledger and metrics record as the endpoint), never the raw URL with ids in it. */
export function routePath(req: FastifyRequest): string {
  return routeUrl(req) ?? req.url.split('?')[0];
}

/** The client's W3C trace context, passed upstream so one trace spans the gateway and the provider. */
export function traceHeaders(req: FastifyRequest): Record<string, string> | undefined {
  const tp = req.headers.traceparent;
  if (typeof tp !== 'string') return undefined;
  const ts = req.headers.tracestate;
  return typeof ts === 'string' ? { traceparent: tp, tracestate: ts } : { traceparent: tp };
}
