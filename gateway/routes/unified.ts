// POST /api/v0/chat/completions and /api/paas/v4/chat/completions: chat in, the model's native upstream protocol
// (openai, else anthropic, else gemini), and the answer, the stream and errors back in chat (docs/contract.md, endpoints).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ChatContext } from '../convert/chat-completion.ts';
import { chatRequestToGemini } from '../convert/chat-request-to-gemini.ts';
import { chatRequestToMessages } from '../convert/chat-request-to-messages.ts';
import { geminiErrorToChat } from '../convert/gemini-error-to-chat.ts';
import { geminiResponseToChat } from '../convert/gemini-response-to-chat.ts';
import { GeminiStreamToChat } from '../convert/gemini-stream-to-chat.ts';
import { messagesErrorToChat } from '../convert/messages-error-to-chat.ts';
import { messagesResponseToChat } from '../convert/messages-response-to-chat.ts';
import { MessagesStreamToChat } from '../convert/messages-stream-to-chat.ts';
import { openaiErrorToChat } from '../convert/openai-error-to-chat.ts';
import { GatewayError, renderError } from '../errors.ts';
import { parseJsonObject } from '../http/json-body.ts';
import { anthropicReader } from '../meter/anthropic.ts';
import { geminiReader } from '../meter/gemini.ts';
import type { ResponseConverter } from '../relay/relay.ts';
import { relay } from '../relay/relay.ts';
import { orderByWeight, resolveModel } from '../routing/resolve-model.ts';
import type { UpstreamTarget } from '../snapshot/runtime.ts';
import { relayChatPassThrough, requireChatFields, routePath, traceHeaders } from './chat.ts';
import type { GatewayContext } from './context.ts';
import { admit, handle } from './context.ts';

/** In order of preference: pass-through first, then the richer conversion. */
const UNIFIED_PROTOCOLS = ['openai', 'anthropic', 'gemini'] as const;

/** Sent on converted requests: the Messages API requires a version, and chat clients do not send one. */
const ANTHROPIC_VERSION = '2023-06-01';

export function registerUnifiedRoutes(app: FastifyInstance, ctx: GatewayContext): void {
  app.post('/api/v0/chat/completions', handle('chat', (req, reply) => unifiedChat(ctx, req, reply)));
  app.post('/api/paas/v4/chat/completions', handle('chat', (req, reply) => unifiedChat(ctx, req, reply)));
}

const streamError = (err: GatewayError): string => `data: ${renderError('chat', err).body}\n\n`;

async function unifiedChat(ctx: GatewayContext, req: FastifyRequest, reply: FastifyReply): Promise<void> {
  const { snapshot, key } = admit(ctx, req);
  const { raw, value: body } = parseJsonObject(req.body as Buffer);
  const clientModel = requireChatFields(body);
  const model = resolveModel(snapshot, key, clientModel);
  const protocol = UNIFIED_PROTOCOLS.find((p) => model.protocols[p] !== undefined);
  if (!protocol) {
    throw new GatewayError('unsupported_protocol', `The model \`${clientModel}\` does not support this endpoint (it needs the openai, anthropic or gemini protocol).`, { param: 'model' });
  }
  const targets = orderByWeight(model.protocols[protocol]!);
  if (protocol === 'openai') {
    await relayChatPassThrough(ctx, req, reply, { family: 'chat', key, model, clientModel, targets, body, requestBytes: raw.length, convertError: openaiErrorToChat });
    return;
  }
  for (const f of model.drop) delete body[f];
  const stream = body.stream === true;
  // The fallback model name follows the upstream picked (failover may change it).
  const chat: ChatContext = { id: `chatcmpl-${req.id}`, created: Math.floor(Date.now() / 1000), model: targets[0].model };
  let build: (target: UpstreamTarget) => { path: string; body: string };
  let convert: ResponseConverter;
  let passHeaders = traceHeaders(req);
  if (protocol === 'anthropic') {
    // Converted once, before any upstream is called: a request Anthropic cannot take is a 400 here.
    const upstreamBody = chatRequestToMessages(body, { model: targets[0].model });
    build = (target) => {
      chat.model = upstreamBody.model = target.model;
      return { path: '/messages', body: JSON.stringify(upstreamBody) };
    };
    convert = { json: (b) => messagesResponseToChat(b, chat), stream: () => new MessagesStreamToChat(chat), error: messagesErrorToChat };
    passHeaders = { ...passHeaders, 'anthropic-version': ANTHROPIC_VERSION };
  } else {
    const upstreamBody = JSON.stringify(chatRequestToGemini(body));
    build = (target) => {
      chat.model = target.model;
      const id = encodeURIComponent(target.model.replace(/^models\//, ''));
      return { path: `/models/${id}:${stream ? 'streamGenerateContent?alt=sse' : 'generateContent'}`, body: upstreamBody };
    };
    convert = { json: (b) => geminiResponseToChat(b, chat), stream: () => new GeminiStreamToChat(chat), error: geminiErrorToChat };
  }
  await relay(
    ctx.relay,
    {
      requestId: req.id,
      key,
      model,
      clientModel,
      endpoint: routePath(req),
      stream,
      // A gemini upstream reached through chat is billed by the text rule (docs/contract.md, pricing), like every other path here.
      billing: 'text',
      family: 'chat',
      protocol,
      targets,
      build,
      reader: protocol === 'anthropic' ? anthropicReader : geminiReader,
      requestBytes: raw.length,
      streamError,
      convert,
      passHeaders,
    },
    reply,
  );
}
