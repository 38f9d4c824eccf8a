// POST /api/v1/gemini/{v1beta|v1}/models/{model}:generateContent and :streamGenerateContent (docs/contract.md: endpoints, pricing):
// pass-through to a gemini-protocol upstream, billed from candidatesTokenCount at the output price.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { GatewayError } from '../errors.ts';
import { parseJsonObject } from '../http/json-body.ts';
import { queryKeyOf } from '../http/query-key.ts';
import { gemini } from '../protocols/gemini.ts';
import { relayCall } from '../relay/call.ts';
import type { RelayCall } from '../relay/relay.ts';
import { relay } from '../relay/relay.ts';
import { orderByWeight, resolveModel, upstreamsFor } from '../routing/resolve-model.ts';
import type { GatewayContext } from './context.ts';
import { admit, handle } from './context.ts';

const VERSIONS = ['v1beta', 'v1'] as const;
const ACTIONS = new Set(['generateContent', 'streamGenerateContent']);

export function registerGeminiRoutes(app: FastifyInstance, ctx: GatewayContext): void {
  // A wildcard, parsed here: model ids contain `/` and may arrive raw or as %2F (see modelPath).
  for (const version of VERSIONS) {
    app.post(`/api/v1/gemini/${version}/models/*`, handle('gemini', (req, reply) => generateContent(ctx, req, reply, version)));
  }
}

export interface ModelPath {
  model: string;
  action: 'generateContent' | 'streamGenerateContent';
}

/**
 * Reads `{model}:{action}` from what follows `/models/`. The model may be written with a raw `/`
 * (`google/gemini-2.5-flash-image`, what @google/genai sends) or URL-encoded (`google%2Fgemini-2.5-flash-image`);
 * the text is percent-decoded once and the action is what follows the last `:` (model ids may contain `:` too).
 */
export function modelPath(url: string, version: string): ModelPath | undefined {
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  const prefix = `/api/v1/gemini/${version}/models/`;
  if (!path.startsWith(prefix)) return undefined;
  let tail: string;
  try {
    tail = decodeURIComponent(path.slice(prefix.length));
  } catch {
    return undefined;
  }
  const colon = tail.lastIndexOf(':');
  if (colon <= 0) return undefined;
  const action = tail.slice(colon + 1);
  if (!ACTIONS.has(action)) return undefined;
  return { model: tail.slice(0, colon), action: action as ModelPath['action'] };
}

async function generateContent(ctx: GatewayContext, req: FastifyRequest, reply: FastifyReply, version: string): Promise<void> {
  const target = modelPath(req.url, version);
  if (!target) throw new GatewayError('not_found', `No route for ${req.method} ${req.url.split('?')[0]}: expected models/{model}:generateContent or :streamGenerateContent.`);
  const goog = req.headers['x-goog-api-key'];
  const { snapshot, key } = admit(ctx, req, typeof goog === 'string' && goog !== '' ? goog.trim() : queryKeyOf(req.raw));
  const { raw, value: body } = parseJsonObject(Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0));
  requireContents(body);
  const clientModel = target.model;
  const model = resolveModel(snapshot, key, clientModel);
  const targets = orderByWeight(upstreamsFor(model, 'gemini', clientModel));
  // The path names the model; a `model` in the body would only let the two disagree upstream.
  let changed = 'model' in body;
  delete body.model;
  for (const f of model.drop) {
    if (f in body) {
      delete body[f];
      changed = true;
    }
  }
  // Nothing to rewrite in the body (the model is in the path): the client's bytes go upstream as they came.
  const upstreamBody = changed ? JSON.stringify(body) : raw;
  const stream = target.action === 'streamGenerateContent';
  const sse = stream && (req.query as Record<string, unknown>).alt === 'sse';
  const build: RelayCall['build'] = (t) => ({ path: gemini.modelPath(t.model, target.action, sse), body: upstreamBody });
  const endpoint = `/api/v1/gemini/${version}/models/{model}:${target.action}`;
  const call = relayCall(req, gemini, { family: 'gemini', key, model, clientModel, protocol: 'gemini', targets, stream, requestBytes: raw.length, build, reader: gemini.outputOnlyReader, billing: 'output_only', endpoint });
  await relay(ctx.relay, call, reply);
}

export function requireContents(body: Record<string, unknown>): void {
  if (!Array.isArray(body.contents) || body.contents.length === 0) {
    throw new GatewayError('invalid_request', '* GenerateContentRequest.contents: contents is not specified', { param: 'contents' });
  }
}
