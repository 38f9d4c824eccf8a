// GET /api/v1/models: public models without a key; with a key, what its organization may call.
import type { FastifyInstance } from 'fastify';
import { authenticate, presentedKey } from '../auth/authenticate.ts';
import { orgAllows } from '../snapshot/runtime.ts';
import type { GatewayContext } from './context.ts';
import { handle, snapshotOrFail } from './context.ts';

export function registerModelRoutes(app: FastifyInstance, ctx: GatewayContext): void {
  for (const path of ['/api/v1/models', '/api/v3/models', '/api/v0/models', '/api/paas/v4/models']) {
    app.get(
      path,
      handle(path.startsWith('/api/v3') ? 'compat' : 'chat', async (req, reply) => {
        const snapshot = snapshotOrFail(ctx);
        const presented = presentedKey(req.headers);
        const key = presented === undefined ? undefined : authenticate(snapshot, presented);
        const data = snapshot.models
          .filter((m) => (key ? orgAllows(key.organization, m.id) : m.public))
          .map((m) => ({ id: m.id, object: 'model', created: m.created, owned_by: 'system' }));
        await reply.send({ object: 'list', data });
      }),
    );
  }
}
