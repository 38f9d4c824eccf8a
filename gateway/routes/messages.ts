// POST /api/v1/messages and /api/anthropic/v1/messages (identical), and their count_tokens (DESIGN §3, §4).
// anthropic models: pass-through. openai-only models: converted through chat and back (gateway/convert/).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { chatErrorToMessages } from '../convert/chat-error-to-messages.ts';
import type { ChatToMessagesContext } from '../convert/chat-response-to-messages.ts';
import { chatResponseToMessages } from '../convert/chat-response-to-messages.ts';
import { ChatToMessagesStream } from '../convert/chat-stream-to-messages.ts';
import { messagesRequestToChat } from '../convert/messages-request-to-chat.ts';
import { GatewayError, renderError } from '../errors.ts';
import { parseJsonObject } from '../http/json-body.ts';
import { anthropicReader } from '../meter/anthropic.ts';
import { openaiChatReader } from '../meter/openai-chat.ts';
import type { RelayCall, ResponseConverter } from '../relay/relay.ts';
import { relay } from '../relay/relay.ts';
import { orderByWeight, resolveModel } from '../routing/resolve-model.ts';
import { withFallbacks } from '../resilience/fallbacks.ts';
import type { RuntimeModel } from '../snapshot/runtime.ts';
import { TimeoutError, upstreamError } from '../upstream/client.ts';
import { routePath, traceHeaders } from './chat.ts';
import type { GatewayContext } from './context.ts';
import { admit, handle } from './context.ts';

/** What the Anthropic API requires when a client leaves it out; a client's own value is passed on as sent. */
export const DEFAULT_ANTHROPIC_VERSION = '2023-06-01';

export function registerMessagesRoutes(app: FastifyInstance, ctx: GatewayContext): void {
  for (const base of ['/api/v1', '/api/anthropic/v1']) {
    app.post(`${base}/messages`, handle('messages', (req, reply) => messages(ctx, req, reply)));
    app.post(`${base}/messages/count_tokens`, handle('messages', (req, reply) => countTokens(ctx, req, reply)));
  }
}

async function messages(ctx: GatewayContext, req: FastifyRequest, reply: FastifyReply): Promise<void> {
  const { snapshot, key } = admit(ctx, req);
  const { raw, value: body } = parseJsonObject(req.body as Buffer);
  const clientModel = requireMessagesFields(body);
  const model = resolveModel(snapshot, key, clientModel);
  const base = { requestId: req.id, key, model, clientModel, endpoint: routePath(req), stream: body.stream === true, billing: 'text' as const, family: 'messages' as const, requestBytes: raw.length };
  const streamError = (err: GatewayError) => `event: error\ndata: ${renderError('messages', err).body}\n\n`;

  // The call for one model: pass-through for anthropic models, through chat for openai-only ones. A fallback model
  // (routing.fallbacks) gets its own call, possibly over the other protocol; the client's model stays reported.
  const callFor = (m: RuntimeModel): RelayCall | undefined => {
    const anthropic = m.protocols.anthropic;
    if (anthropic) {
      const mb = m === model ? body : { ...body };
      for (const f of m.drop) delete mb[f];
      const path = `/messages${betaQuery(req)}`;
      return { ...base, model: m, protocol: 'anthropic', targets: orderByWeight(anthropic), build: (target) => ((mb.model = target.model), { path, body: JSON.stringify(mb) }), reader: anthropicReader, streamError, passHeaders: anthropicHeaders(req), requireTerminalEvent: true };
    }
    const openai = m.protocols.openai;
    if (!openai) return undefined;
    const chat = messagesRequestToChat(body, { drop: m.drop });
    return {
      ...base,
      model: m,
      protocol: 'openai',
      targets: orderByWeight(openai),
      build: (target) => ((chat.model = target.model), { path: '/chat/completions', body: JSON.stringify(chat) }),
      // The upstream's protocol decides the meter: a converted call bills exactly like the same chat call.
      reader: openaiChatReader,
      streamError,
      passHeaders: traceHeaders(req),
      convert: messagesOverChat({ stopSequences: stopSequences(body), fallbackId: req.id.replaceAll('-', ''), fallbackModel: clientModel }),
    };
  };
  const call = callFor(model);
  if (!call) throw unsupported(clientModel);
  await relay(ctx.relay, model.policy.fallbacks.length > 0 ? withFallbacks(snapshot, key, model, call, callFor) : call, reply);
}

function messagesOverChat(c: ChatToMessagesContext): ResponseConverter {
  return {
    json: (b) => chatResponseToMessages(b, c),
    stream: () => new ChatToMessagesStream(c),
    error: (status, b) => chatErrorToMessages(status, b),
  };
}

// Token counting costs nothing upstream and is not billed, so it skips the relay (no meter, no ledger row).
async function countTokens(ctx: GatewayContext, req: FastifyRequest, reply: FastifyReply): Promise<void> {
  const { snapshot, key } = admit(ctx, req);
  const { value: body } = parseJsonObject(req.body as Buffer);
  const clientModel = requireMessagesFields(body);
  const model = resolveModel(snapshot, key, clientModel);
  const targets = model.protocols.anthropic;
  if (!targets) {
    if (!model.protocols.openai) throw unsupported(clientModel);
    throw new GatewayError('unsupported_protocol', `Token counting is available only for models served over the anthropic protocol; \`${clientModel}\` is served over openai.`, { param: 'model' });
  }
  for (const f of model.drop) delete body[f];
  await forwardUnbilled(ctx, req, reply, orderByWeight(targets), body, `/messages/count_tokens${betaQuery(req)}`);
}

async function forwardUnbilled(ctx: GatewayContext, req: FastifyRequest, reply: FastifyReply, targets: RelayCall['targets'], body: Record<string, unknown>, path: string): Promise<void> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new TimeoutError()), targets[0].provider.timeouts.totalMs);
  try {
    let lastErr: GatewayError | undefined;
    for (const target of targets) {
      body.model = target.model;
      try {
        const res = await ctx.relay.upstream.request({ provider: target.provider, protocol: 'anthropic', path, body: JSON.stringify(body), passHeaders: anthropicHeaders(req), signal: controller.signal });
        const buf = await res.body.bytes();
        await reply
          .code(res.statusCode)
          .header('content-type', res.headers['content-type'] ?? 'application/json')
          .header('x-tollgate-request-id', req.id)
          .send(buf);
        return;
      } catch (err) {
        lastErr = upstreamError(err, target.provider.id, controller.signal);
        if (controller.signal.aborted) break;
      }
    }
    throw lastErr ?? new GatewayError('upstream_unavailable', 'No upstream is available for this model.');
  } finally {
    clearTimeout(timer);
  }
}

export function requireMessagesFields(body: Record<string, unknown>): string {
  const model = body.model;
  if (typeof model !== 'string' || model.trim() === '') throw new GatewayError('invalid_request', 'model: Field required', { param: 'model' });
  if (!Array.isArray(body.messages) || body.messages.length === 0) throw new GatewayError('invalid_request', 'messages: at least one message is required', { param: 'messages' });
  return model;
}

function unsupported(clientModel: string): GatewayError {
  return new GatewayError('unsupported_protocol', `The model \`${clientModel}\` does not support this endpoint (it needs the anthropic or openai protocol).`, { param: 'model' });
}

// Claude Code calls /v1/messages?beta=true; the flag goes on to Anthropic, any other query stays here.
function betaQuery(req: FastifyRequest): string {
  const q = req.query as Record<string, unknown> | undefined;
  return q?.beta === 'true' ? '?beta=true' : '';
}

function anthropicHeaders(req: FastifyRequest): Record<string, string> {
  const version = req.headers['anthropic-version'];
  const headers: Record<string, string> = { ...traceHeaders(req), 'anthropic-version': typeof version === 'string' && version !== '' ? version : DEFAULT_ANTHROPIC_VERSION };
  const beta = req.headers['anthropic-beta'];
  if (beta !== undefined && beta !== '') headers['anthropic-beta'] = Array.isArray(beta) ? beta.join(',') : beta;
  return headers;
}

function stopSequences(body: Record<string, unknown>): string[] {
  const s = body.stop_sequences;
  return Array.isArray(s) ? s.filter((x): x is string => typeof x === 'string') : [];
}
