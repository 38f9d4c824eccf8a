// POST /api/v1/responses: pass-through to a responses-protocol upstream, JSON and SSE byte for byte (docs/contract.md: endpoints, pass-through).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { GatewayError } from '../errors.ts';
import { parseJsonObject } from '../http/json-body.ts';
import { responses } from '../protocols/responses.ts';
import { relayCall } from '../relay/call.ts';
import type { RelayCall } from '../relay/relay.ts';
import { relay } from '../relay/relay.ts';
import { orderByWeight, resolveModel, upstreamsFor } from '../routing/resolve-model.ts';
import type { GatewayContext } from './context.ts';
import { admit, handle } from './context.ts';

const ENDPOINT = '/api/v1/responses';

export function registerResponsesRoutes(app: FastifyInstance, ctx: GatewayContext): void {
  app.post(ENDPOINT, handle('chat', (req, reply) => createResponse(ctx, req, reply)));
}

async function createResponse(ctx: GatewayContext, req: FastifyRequest, reply: FastifyReply): Promise<void> {
  const { snapshot, key } = admit(ctx, req);
  const { raw, value: body } = parseJsonObject(req.body as Buffer);
  const clientModel = requireResponsesFields(body);
  const model = resolveModel(snapshot, key, clientModel);
  const targets = orderByWeight(upstreamsFor(model, 'responses', clientModel));
  for (const f of model.drop) delete body[f];
  const build: RelayCall['build'] = (target) => ((body.model = target.model), { path: responses.paths.create, body: JSON.stringify(body) });
  const call = relayCall(req, responses, { family: 'chat', key, model, clientModel, protocol: 'responses', targets, stream: body.stream === true, requestBytes: raw.length, build, reader: responses.reader, endpoint: ENDPOINT, requireTerminalEvent: responses.requireTerminalEvent });
  await relay(ctx.relay, call, reply);
}

/** The one field checked here; `input` is optional on the wire (previous_response_id, conversation or a stored prompt can stand in for it). */
export function requireResponsesFields(body: Record<string, unknown>): string {
  const model = body.model;
  if (typeof model !== 'string' || model.trim() === '') throw new GatewayError('invalid_request', 'you must provide a model parameter', { param: 'model' });
  return model;
}
