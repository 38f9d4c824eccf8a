// POST /api/v1/responses: pass-through to a responses-protocol upstream, JSON and SSE byte for byte (docs/contract.md: endpoints, pass-through).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { GatewayError } from '../errors.ts';
import { parseJsonObject } from '../http/json-body.ts';
import { responsesReader } from '../meter/responses.ts';
import { relay } from '../relay/relay.ts';
import { orderByWeight, resolveModel, upstreamsFor } from '../routing/resolve-model.ts';
import { traceHeaders } from './chat.ts';
import type { GatewayContext } from './context.ts';
import { admit, handle } from './context.ts';

const ENDPOINT = '/api/v1/responses';

export function registerResponsesRoutes(app: FastifyInstance, ctx: GatewayContext): void {
  app.post(ENDPOINT, handle('chat', (req, reply) => createResponse(ctx, req, reply)));
}

async function createResponse(ctx: GatewayContext, req: FastifyRequest, reply: FastifyReply): Promise<void> {
  const { snapshot, key } = admit(ctx, req);
  const { raw, value: body } = parseJsonObject(req.body as Buffer);
  const clientModel = body.model;
  // `input` is optional on the wire (previous_response_id, conversation or a stored prompt can stand in for it).
  if (typeof clientModel !== 'string' || clientModel.trim() === '') throw new GatewayError('invalid_request', 'you must provide a model parameter', { param: 'model' });
  const model = resolveModel(snapshot, key, clientModel);
  const targets = orderByWeight(upstreamsFor(model, 'responses', clientModel));
  for (const f of model.drop) delete body[f];
  await relay(
    ctx.relay,
    {
      requestId: req.id,
      key,
      model,
      clientModel,
      endpoint: ENDPOINT,
      stream: body.stream === true,
      billing: 'text',
      family: 'chat',
      protocol: 'responses',
      targets,
      build: (target) => {
        body.model = target.model;
        return { path: '/responses', body: JSON.stringify(body) };
      },
      reader: responsesReader,
      requestBytes: raw.length,
      streamError,
      // The SDK's stream helper needs response.completed (or .failed / .incomplete) last: a stream ending without it is an error.
      requireTerminalEvent: true,
      passHeaders: traceHeaders(req),
    },
    reply,
  );
}

/** A failure after the stream began, as the Responses API's own `error` event (the openai SDK raises it as an APIError). */
function streamError(err: GatewayError): string {
  const data = { type: 'error', code: err.kind, message: err.message, param: null };
  return `event: error\ndata: ${JSON.stringify(data)}\n\n`;
}
