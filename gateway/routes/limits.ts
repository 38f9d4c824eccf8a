// GET /api/business/v1/customer/limits: the limits and budgets that apply to the calling key and what is left.
// Never limited itself (like the usage report): a key over its budget can still see why.
import type { FastifyInstance } from 'fastify';
import { authenticate, presentedKey } from '../auth/authenticate.ts';
import { GatewayError } from '../errors.ts';
import type { GatewayContext } from './context.ts';
import { handle, snapshotOrFail } from './context.ts';
import { telemetryOf } from '../telemetry/request-hook.ts';

export function registerLimitsRoutes(app: FastifyInstance, ctx: GatewayContext): void {
  app.get(
    '/api/business/v1/customer/limits',
    handle('problem', async (req, reply) => {
      const key = authenticate(snapshotOrFail(ctx), presentedKey(req.headers));
      telemetryOf(req).admitted(key);
      const governor = ctx.relay.governor;
      if (!governor) throw new GatewayError('internal', 'Limits are not available in this gateway.');
      let view;
      try {
        view = await governor.describe(key);
      } catch (err) {
        req.log.warn({ err: (err as Error).message }, 'limits view failed');
        throw new GatewayError('ledger_unavailable', 'The limit counters cannot be read right now; try again shortly.');
      }
      await reply.header('cache-control', 'no-store').send(view);
    }),
  );
}
