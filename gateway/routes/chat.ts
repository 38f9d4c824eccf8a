// POST /api/v1/chat/completions and /api/v3/chat/completions: pass-through to an openai-protocol upstream (docs/contract.md: endpoints, pass-through).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ErrorFamily } from '../errors.ts';
import { GatewayError } from '../errors.ts';
import { parseJsonObject } from '../http/json-body.ts';
import type { Span } from '../http/json-scan.ts';
import { spliceString, topLevelValue } from '../http/json-scan.ts';
import { openai } from '../protocols/openai.ts';
import { relayCall } from '../relay/call.ts';
import type { RelayCall } from '../relay/relay.ts';
import { relay } from '../relay/relay.ts';
import { orderByWeight, resolveModel, upstreamsFor } from '../routing/resolve-model.ts';
import { withFallbacks } from '../resilience/fallbacks.ts';
import type { RuntimeKey, RuntimeModel, UpstreamTarget } from '../snapshot/runtime.ts';
import type { GatewayContext } from './context.ts';
import { admit, handle } from './context.ts';

export function registerChatRoutes(app: FastifyInstance, ctx: GatewayContext): void {
  app.post('/api/v1/chat/completions', handle('chat', (req, reply) => chatCompletions(ctx, req, reply, 'chat')));
  app.post('/api/v3/chat/completions', handle('compat', (req, reply) => chatCompletions(ctx, req, reply, 'compat')));
}

// Not async (one promise fewer per request): a refusal thrown here reaches `handle`, which awaits this call in its try.
function chatCompletions(ctx: GatewayContext, req: FastifyRequest, reply: FastifyReply, family: ErrorFamily): Promise<void> {
  const { snapshot, key } = admit(ctx, req);
  const { raw, value: body } = parseJsonObject(req.body as Buffer);
  const clientModel = requireChatFields(body);
  const model = resolveModel(snapshot, key, clientModel);
  const targets = orderByWeight(upstreamsFor(model, 'openai', clientModel));
  return relayChatPassThrough(ctx, req, reply, { family, key, model, clientModel, targets, body, raw, requestBytes: raw.length });
}

export interface ChatPassThrough {
  family: ErrorFamily;
  key: RuntimeKey;
  model: RuntimeModel;
  clientModel: string;
  targets: UpstreamTarget[];
  body: Record<string, unknown>;
  /** The client's bytes that `body` was parsed from, when `body` is still exactly that parse. */
  raw?: Buffer;
  requestBytes: number;
  /** Set by routes that answer upstream errors in their own shape instead of passing them on. */
  convertError?: RelayCall['convertError'];
}

/** The pass-through rule (docs/contract.md, pass-through) for a chat body going to openai-protocol upstreams; shared with the unified entry. */
/** Not async (one promise fewer per request); its callers await it, so anything thrown here still rejects theirs. */
export function relayChatPassThrough(ctx: GatewayContext, req: FastifyRequest, reply: FastifyReply, p: ChatPassThrough): Promise<void> {
  const { family, key, model, clientModel, targets, body } = p;
  const stream = body.stream === true;
  // Only `model` changes: the client's bytes go upstream with the upstream model id spliced in, nothing re-serialised.
  const modelAt = p.raw && !stream && !model.drop.some((f) => Object.hasOwn(body, f)) ? modelValue(p.raw, body.model) : undefined;
  for (const f of model.drop) delete body[f];
  if (stream) {
    const opts = body.stream_options;
    body.stream_options = opts !== null && typeof opts === 'object' ? { ...opts, include_usage: true } : { include_usage: true };
  }
  const build: RelayCall['build'] = (target) => {
    if (modelAt && p.raw) return { path: openai.paths.chat, body: target.model === body.model ? p.raw : spliceString(p.raw, modelAt, target.model) };
    body.model = target.model;
    return { path: openai.paths.chat, body: JSON.stringify(body) };
  };
  // requireTerminalEvent: a stream that ends without `data: [DONE]` was cut; the client is told, the row flagged estimated.
  const call = relayCall(req, openai, { family, key, model, clientModel, protocol: 'openai', targets, stream, requestBytes: p.requestBytes, build, reader: openai.reader, convertError: p.convertError, requireTerminalEvent: true });
  // Fallback models (routing.fallbacks) are looked at only when the model has some: the happy path builds nothing.
  const snapshot = ctx.holder.current;
  return relay(ctx.relay, snapshot && model.policy.fallbacks.length > 0 ? withFallbacks(snapshot, key, model, call, (m) => chatFallback(call, body, m)) : call, reply);
}

/** The same chat body for a fallback model that speaks openai, re-serialised with its drops. */
function chatFallback(call: RelayCall, body: Record<string, unknown>, m: RuntimeModel): RelayCall | undefined {
  const ups = m.protocols.openai;
  if (!ups) return undefined;
  return {
    ...call,
    model: m,
    targets: orderByWeight(ups),
    build: (target) => {
      const b: Record<string, unknown> = { ...body, model: target.model };
      for (const f of m.drop) delete b[f];
      return { path: openai.paths.chat, body: JSON.stringify(b) };
    },
  };
}

/** Where the top-level `model` string sits in `raw`, when it is found exactly once and reads as `model`. */
function modelValue(raw: Buffer, model: unknown): Span | undefined {
  const span = topLevelValue(raw, 'model');
  if (!span || raw[span.start] !== 0x22) return undefined;
  // Bytes equal to the model's text between the quotes are that string (an escape would not read as itself).
  if (typeof model === 'string' && span.end - span.start === model.length + 2 && raw.toString('latin1', span.start + 1, span.end - 1) === model) return span;
  try {
    return JSON.parse(raw.toString('utf8', span.start, span.end)) === model ? span : undefined;
  } catch {
    return undefined;
  }
}

export function requireChatFields(body: Record<string, unknown>): string {
  const model = body.model;
  if (typeof model !== 'string' || model.trim() === '') throw new GatewayError('invalid_request', 'you must provide a model parameter', { param: 'model' });
  if (!Array.isArray(body.messages) || body.messages.length === 0) throw new GatewayError('invalid_request', "'messages' must be a non-empty array", { param: 'messages' });
  return model;
}
