// POST /api/v0/chat/completions and /api/paas/v4/chat/completions: chat in, the model's native upstream protocol
// (openai, else anthropic, else gemini), and the answer, the stream and errors back in chat (docs/contract.md, endpoints).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ChatContext } from '../convert/chat-completion.ts';
import { chatOverAnthropic } from '../convert/chat-over-anthropic/index.ts';
import { chatOverGemini } from '../convert/chat-over-gemini/index.ts';
import { chatOverOpenaiError } from '../convert/chat-over-openai/index.ts';
import { GatewayError } from '../errors.ts';
import { parseJsonObject } from '../http/json-body.ts';
import { anthropic } from '../protocols/anthropic.ts';
import { gemini } from '../protocols/gemini.ts';
import { openai } from '../protocols/openai.ts';
import { relayCall, traceHeaders } from '../relay/call.ts';
import type { RelayCall } from '../relay/relay.ts';
import { relay } from '../relay/relay.ts';
import { orderByWeight, resolveModel } from '../routing/resolve-model.ts';
import { relayChatPassThrough, requireChatFields } from './chat.ts';
import type { GatewayContext } from './context.ts';
import { admit, handle } from './context.ts';

/** In order of preference: pass-through first, then the richer conversion. */
const UNIFIED_PROTOCOLS = ['openai', 'anthropic', 'gemini'] as const;

export function registerUnifiedRoutes(app: FastifyInstance, ctx: GatewayContext): void {
  app.post('/api/v0/chat/completions', handle('chat', (req, reply) => unifiedChat(ctx, req, reply)));
  app.post('/api/paas/v4/chat/completions', handle('chat', (req, reply) => unifiedChat(ctx, req, reply)));
}

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
    await relayChatPassThrough(ctx, req, reply, { family: 'chat', key, model, clientModel, targets, body, requestBytes: raw.length, convertError: chatOverOpenaiError });
    return;
  }
  for (const f of model.drop) delete body[f];
  const stream = body.stream === true;
  // The fallback model name follows the upstream picked (failover may change it).
  const chat: ChatContext = { id: `chatcmpl-${req.id}`, created: Math.floor(Date.now() / 1000), model: targets[0].model };
  // Converted once, before any upstream is called: a request the upstream cannot take is a 400 here.
  const conversion = protocol === 'anthropic' ? chatOverAnthropic(body, chat) : chatOverGemini(body, chat);
  const action = stream ? 'streamGenerateContent' : 'generateContent';
  const build: RelayCall['build'] =
    protocol === 'anthropic'
      ? (target) => ({ path: anthropic.paths.messages, body: conversion.body(target.model) })
      : (target) => ({ path: gemini.modelPath(target.model, action, stream), body: conversion.body(target.model) });
  // Chat clients send no anthropic-version: the default goes.
  const passHeaders = protocol === 'anthropic' ? anthropic.versionHeaders(undefined, { ...traceHeaders(req) }) : traceHeaders(req);
  const reader = protocol === 'anthropic' ? anthropic.reader : gemini.reader;
  // A gemini upstream reached through chat is billed by the text rule (docs/contract.md, pricing), like every other path here.
  const call = relayCall(req, openai, { family: 'chat', key, model, clientModel, protocol, targets, stream, requestBytes: raw.length, build, reader, convert: conversion.converter, passHeaders });
  await relay(ctx.relay, call, reply);
}
