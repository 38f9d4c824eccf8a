// Attaches per-request telemetry to every request (fastify's onRequest hook) and finds it again for the relay.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Exchange } from './exchange.ts';
import { LiveExchange, NOOP_EXCHANGE } from './exchange.ts';
import { rememberParsedBodies } from './request-bodies.ts';
import type { Telemetry } from './telemetry.ts';

declare module 'fastify' {
  interface FastifyRequest {
    telemetry: Exchange | null;
  }
}

/** Call once on the root instance, before routes are registered. Telemetry off: nothing is attached. */
export function instrumentServer(app: FastifyInstance, t: Telemetry | undefined): void {
  app.decorateRequest('telemetry', null);
  if (!t?.enabled) return;
  if (t.tracer) rememberParsedBodies();
  app.addHook('onRequest', (req, reply, done) => {
    const x = new LiveExchange(t, req, reply.raw);
    req.telemetry = x;
    // 'close' comes for every response: finished, hijacked (streams skip onResponse when the client leaves), or cut.
    reply.raw.on('close', x.onClose);
    done();
  });
}

/** The request's telemetry, or one that does nothing. */
export function telemetryOf(r: FastifyReply | FastifyRequest): Exchange {
  const req = 'request' in r ? r.request : r;
  return req.telemetry ?? NOOP_EXCHANGE;
}

/** Requests fastify refuses before routing (malformed URLs) skip onRequest: their error handler attaches telemetry. */
export function instrumentRefused(t: Telemetry | undefined, req: FastifyRequest, reply: FastifyReply): void {
  if (!t?.enabled || req.telemetry) return;
  const x = new LiveExchange(t, req, reply.raw);
  req.telemetry = x;
  reply.raw.on('close', x.onClose);
}
