// GET /api/v1/models: public models without a key; with a key, what its organization may call. GET /api/v1/models/{id}
// (the OpenAI SDK's models.retrieve) answers one of those, by the same rule.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { authenticate, presentedKey } from '../auth/authenticate.ts';
import { GatewayError } from '../errors.ts';
import type { ModelObject } from '../openapi/answer-bodies.ts';
import type { RuntimeKey, RuntimeModel, RuntimeSnapshot } from '../snapshot/runtime.ts';
import { orgAllows } from '../snapshot/runtime.ts';
import type { GatewayContext } from './context.ts';
import { handle, snapshotOrFail } from './context.ts';

export function registerModelRoutes(app: FastifyInstance, ctx: GatewayContext): void {
  for (const path of ['/api/v1/models', '/api/v3/models', '/api/v0/models', '/api/paas/v4/models']) {
    app.get(
      path,
      handle(path.startsWith('/api/v3') ? 'compat' : 'chat', async (req, reply) => {
        const snapshot = snapshotOrFail(ctx);
        const key = keyOf(snapshot, req);
        const data = snapshot.models.filter((m) => visible(m, key)).map(modelObject);
        await reply.send({ object: 'list', data });
      }),
    );
    // Ids hold a `/` (openai/gpt-4o-mini): the SDK sends it encoded, curl users raw; the wildcard takes both.
    app.get(
      `${path}/*`,
      handle(path.startsWith('/api/v3') ? 'compat' : 'chat', async (req, reply) => {
        const snapshot = snapshotOrFail(ctx);
        const key = keyOf(snapshot, req);
        const name = (req.params as { '*': string })['*'];
        const m = snapshot.models.find((x) => x.id === name || x.config.alias === name);
        if (!m || !visible(m, key)) throw new GatewayError('model_not_found', `The model '${name}' does not exist or you do not have access to it.`, { param: 'model' });
        await reply.send(modelObject(m));
      }),
    );
  }
}

function keyOf(snapshot: RuntimeSnapshot, req: FastifyRequest): RuntimeKey | undefined {
  const presented = presentedKey(req.headers);
  return presented === undefined ? undefined : authenticate(snapshot, presented);
}

function visible(m: RuntimeModel, key: RuntimeKey | undefined): boolean {
  return key ? orgAllows(key.organization, m.id) : m.public;
}

function modelObject(m: RuntimeModel): ModelObject {
  return { id: m.id, object: 'model', created: m.created, owned_by: 'system' };
}
