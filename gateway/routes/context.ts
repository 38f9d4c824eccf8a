// What every route needs from the running gateway, and the checks every billed route makes first.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { authenticate, presentedKey } from '../auth/authenticate.ts';
import type { ErrorFamily } from '../errors.ts';
import { GatewayError } from '../errors.ts';
import { replyError } from '../http/reply-error.ts';
import type { Ledger } from '../ledger/ledger.ts';
import type { RelayDeps } from '../relay/relay.ts';
import type { SnapshotHolder } from '../snapshot/holder.ts';
import type { RuntimeKey, RuntimeSnapshot } from '../snapshot/runtime.ts';
import { telemetryOf } from '../telemetry/request-hook.ts';

export interface GatewayContext {
  holder: SnapshotHolder;
  relay: RelayDeps;
  /** Readiness and the usage report; rows go in through `relay.ledger`. */
  ledger: Pick<Ledger, 'health' | 'usageReport'>;
  /** Set once SIGTERM arrives: readiness turns false while in-flight requests finish. */
  draining: { value: boolean };
  /** Checks the database answers, for /readyz. */
  databaseReachable(): Promise<boolean>;
}

export function snapshotOrFail(ctx: GatewayContext): RuntimeSnapshot {
  const s = ctx.holder.current;
  if (!s) throw new GatewayError('not_ready', 'The gateway has not loaded its configuration yet.');
  // Revoked keys might still be in a stale snapshot: refuse rather than serve them (TOLLGATE_STALE_REFUSE).
  if (ctx.holder.stale !== undefined && ctx.holder.refuseWhenStale) throw new GatewayError('not_ready', 'This gateway instance has lost contact with its configuration source; try again shortly.');
  return s;
}

/** Authenticates and checks the ledger can take one more row, before any upstream is called. */
export function admit(ctx: GatewayContext, req: FastifyRequest, geminiKey?: string): { snapshot: RuntimeSnapshot; key: RuntimeKey } {
  const snapshot = snapshotOrFail(ctx);
  const key = authenticate(snapshot, presentedKey(req.headers, geminiKey));
  telemetryOf(req).admitted(key);
  const health = ctx.ledger.health();
  if (!health.ready) throw new GatewayError('ledger_unavailable', 'Usage cannot be recorded right now (the local journal is full); try again shortly.');
  return { snapshot, key };
}

/** Runs a handler and renders any GatewayError in the route's family. */
export function handle(family: ErrorFamily, fn: (req: FastifyRequest, reply: FastifyReply) => Promise<void>) {
  return async (req: FastifyRequest, reply: FastifyReply): Promise<void> => {
    try {
      await fn(req, reply);
    } catch (err) {
      if (!(err instanceof GatewayError)) throw err;
      if (reply.sent || reply.raw.headersSent) return;
      replyError(reply, family, err, req.id);
    }
  };
}
