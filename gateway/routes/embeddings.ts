// POST /api/v1/embeddings and /api/v0/embeddings: OpenAI embeddings passed through to a model's `embeddings`
// upstreams, else its `openai` ones; only `model` is rewritten (base64 vectors come back untouched), billed as input
// tokens from `usage.prompt_tokens`.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { GatewayError } from '../errors.ts';
import { parseJsonObject } from '../http/json-body.ts';
import { spliceString, topLevelValue } from '../http/json-scan.ts';
import { embeddings as embeddingsAdapter } from '../protocols/embeddings.ts';
import { openai } from '../protocols/openai.ts';
import { relayCall } from '../relay/call.ts';
import type { RelayCall } from '../relay/relay.ts';
import { relay } from '../relay/relay.ts';
import { orderByWeight, resolveModel, upstreamsFor } from '../routing/resolve-model.ts';
import type { GatewayContext } from './context.ts';
import { admit, handle } from './context.ts';

export function registerEmbeddingsRoutes(app: FastifyInstance, ctx: GatewayContext): void {
  for (const path of ['/api/v1/embeddings', '/api/v0/embeddings']) app.post(path, handle('chat', (req, reply) => embeddings(ctx, req, reply)));
}

async function embeddings(ctx: GatewayContext, req: FastifyRequest, reply: FastifyReply): Promise<void> {
  const { snapshot, key } = admit(ctx, req);
  const { raw, value: body } = parseJsonObject(req.body as Buffer);
  const clientModel = requireEmbeddingsFields(body);
  const model = resolveModel(snapshot, key, clientModel);
  const targets = orderByWeight(model.protocols.embeddings ?? upstreamsFor(model, 'openai', clientModel));
  const at = topLevelValue(raw, 'model');
  const build: RelayCall['build'] = (target) => {
    if (at && raw[at.start] === 0x22 && model.drop.length === 0) return { path: embeddingsAdapter.paths.embeddings, body: spliceString(raw, at, target.model) };
    for (const f of model.drop) delete body[f];
    body.model = target.model;
    return { path: embeddingsAdapter.paths.embeddings, body: JSON.stringify(body) };
  };
  const call = relayCall(req, openai, { family: 'chat', key, model, clientModel, protocol: 'embeddings', targets, stream: false, requestBytes: raw.length, build, reader: embeddingsAdapter.reader });
  await relay(ctx.relay, call, reply);
}

export function requireEmbeddingsFields(body: Record<string, unknown>): string {
  const model = body.model;
  if (typeof model !== 'string' || model.trim() === '') throw new GatewayError('invalid_request', 'you must provide a model parameter', { param: 'model' });
  if (body.input === undefined || body.input === null) throw new GatewayError('invalid_request', "'input' is required", { param: 'input' });
  return model;
}
