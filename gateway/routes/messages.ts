// POST /api/v1/messages and /api/anthropic/v1/messages (identical), and their count_tokens (docs/contract.md: endpoints, pass-through).
// anthropic models: pass-through. openai-only models: converted through chat and back (gateway/convert/).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { messagesOverOpenai } from '../convert/messages-over-openai/index.ts';
import { onTokenizerLoadError } from '../convert/prompt-estimate.ts';
import { GatewayError } from '../errors.ts';
import { parseJsonObject } from '../http/json-body.ts';
import { anthropic } from '../protocols/anthropic.ts';
import { openai } from '../protocols/openai.ts';
import { relayCall, traceHeaders } from '../relay/call.ts';
import type { RelayCall } from '../relay/relay.ts';
import { relay } from '../relay/relay.ts';
import { orderByWeight, resolveModel } from '../routing/resolve-model.ts';
import { withFallbacks } from '../resilience/fallbacks.ts';
import type { RuntimeModel } from '../snapshot/runtime.ts';
import { TimeoutError, upstreamError } from '../upstream/client.ts';
import type { GatewayContext } from './context.ts';
import { admit, handle } from './context.ts';

export function registerMessagesRoutes(app: FastifyInstance, ctx: GatewayContext): void {
  // message_start estimates over chat load their encoding in the background on first use, never on a request.
  onTokenizerLoadError((err) => app.log.warn({ err: err.message }, 'tokenizer not loaded; message_start estimates use characters / 4'));
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
  const stream = body.stream === true;
  // The call for one model: pass-through for anthropic models, through chat for openai-only ones. A fallback model
  // (routing.fallbacks) gets its own call, possibly over the other protocol; the client's model stays reported.
  const callFor = (m: RuntimeModel): RelayCall | undefined => {
    const targets = m.protocols.anthropic;
    if (targets) {
      const mb = m === model ? body : { ...body };
      for (const f of m.drop) delete mb[f];
      const path = `${anthropic.paths.messages}${betaQuery(req)}`;
      const build: RelayCall['build'] = (target) => ((mb.model = target.model), { path, body: JSON.stringify(mb) });
      const passHeaders = anthropic.versionHeaders(req.headers, { ...traceHeaders(req) });
      return relayCall(req, anthropic, { family: 'messages', key, model: m, clientModel, protocol: 'anthropic', targets: orderByWeight(targets), stream, requestBytes: raw.length, build, reader: anthropic.reader, passHeaders, requireTerminalEvent: anthropic.requireTerminalEvent });
    }
    const openaiTargets = m.protocols.openai;
    if (!openaiTargets) return undefined;
    const conversion = messagesOverOpenai(body, { drop: m.drop, requestId: req.id, clientModel });
    const build: RelayCall['build'] = (target) => ({ path: openai.paths.chat, body: conversion.body(target.model) });
    // The upstream's protocol decides the meter: a converted call bills exactly like the same chat call.
    return relayCall(req, anthropic, { family: 'messages', key, model: m, clientModel, protocol: 'openai', targets: orderByWeight(openaiTargets), stream, requestBytes: raw.length, build, reader: openai.reader, convert: conversion.converter });
  };
  const call = callFor(model);
  if (!call) throw unsupported(clientModel);
  await relay(ctx.relay, model.policy.fallbacks.length > 0 ? withFallbacks(snapshot, key, model, call, callFor) : call, reply);
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
  await forwardUnbilled(ctx, req, reply, orderByWeight(targets), body, `${anthropic.paths.countTokens}${betaQuery(req)}`);
}

async function forwardUnbilled(ctx: GatewayContext, req: FastifyRequest, reply: FastifyReply, targets: RelayCall['targets'], body: Record<string, unknown>, path: string): Promise<void> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new TimeoutError()), targets[0].provider.timeouts.totalMs);
  try {
    let lastErr: GatewayError | undefined;
    for (const target of targets) {
      body.model = target.model;
      try {
        const res = await ctx.relay.upstream.request({ provider: target.provider, protocol: 'anthropic', path, body: JSON.stringify(body), passHeaders: anthropic.versionHeaders(req.headers, { ...traceHeaders(req) }), signal: controller.signal });
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
