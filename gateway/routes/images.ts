// Images generations and edits, v1 (images style, chat errors) and v3 (compat style): pass-through to an
// images-protocol upstream (docs/contract.md: endpoints, pass-through, pricing). Multipart edits stream through; only `model` is rewritten.
import { tmpdir } from 'node:os';
import type { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ErrorFamily } from '../errors.ts';
import { GatewayError } from '../errors.ts';
import { parseJsonObject } from '../http/json-body.ts';
import type { MultipartRewriter } from '../http/multipart-rewrite.ts';
import { multipartBoundary } from '../http/multipart-rewrite.ts';
import { drain, MultipartUpload, tooLarge } from '../http/multipart-upload.ts';
import { images } from '../protocols/images.ts';
import { relayCall, traceHeaders } from '../relay/call.ts';
import type { RelayCall } from '../relay/relay.ts';
import { relay } from '../relay/relay.ts';
import { orderByWeight, resolveModel, upstreamsFor } from '../routing/resolve-model.ts';
import type { RuntimeKey, RuntimeModel, UpstreamTarget } from '../snapshot/runtime.ts';
import type { GatewayContext } from './context.ts';
import { admit, handle } from './context.ts';

/** docs/contract.md, errors: image bodies up to 64 MiB. */
export const IMAGES_MAX_BYTES = 64 * 1024 * 1024;
export const MAX_EDIT_IMAGES = 16;
/** Parts before `model` are held in memory up to this, then spooled to a temp file. */
const SPOOL_THRESHOLD = 1024 * 1024;

export function registerImageRoutes(app: FastifyInstance, ctx: GatewayContext): void {
  const opts = { bodyLimit: IMAGES_MAX_BYTES };
  app.post('/api/v1/images/generations', opts, handle('chat', (req, reply) => generations(ctx, req, reply, 'chat')));
  app.post('/api/v3/images/generations', opts, handle('compat', (req, reply) => generations(ctx, req, reply, 'compat')));
  void app.register(async (scope) => {
    // Multipart uploads reach the handler as the raw request stream: never buffered whole, limits enforced as read.
    scope.addContentTypeParser('multipart/form-data', (_req, payload, done) => done(null, payload));
    scope.post('/api/v1/images/edits', opts, handle('chat', (req, reply) => edits(ctx, req, reply, 'chat')));
    scope.post('/api/v3/images/edits', opts, handle('compat', (req, reply) => edits(ctx, req, reply, 'compat')));
  });
}

async function generations(ctx: GatewayContext, req: FastifyRequest, reply: FastifyReply, family: ErrorFamily): Promise<void> {
  const { snapshot, key } = admit(ctx, req);
  const { raw, value: body } = parseJsonObject(req.body as Buffer);
  const clientModel = checkGeneration(body, family);
  const model = resolveModel(snapshot, key, clientModel);
  if (family === 'compat') checkSize(model, body.size);
  await forwardJson(ctx, req, reply, family, { key, body, raw, clientModel, model, path: images.paths.generations });
}

interface JsonCall {
  key: RuntimeKey;
  body: Record<string, unknown>;
  raw: Buffer;
  clientModel: string;
  model: RuntimeModel;
  path: string;
}

async function forwardJson(ctx: GatewayContext, req: FastifyRequest, reply: FastifyReply, family: ErrorFamily, c: JsonCall): Promise<void> {
  const targets = orderByWeight(upstreamsFor(c.model, 'images', c.clientModel));
  const { body, key } = c;
  for (const f of c.model.drop) delete body[f];
  const n = typeof body.n === 'number' ? body.n : 1;
  const build: RelayCall['build'] = (target) => ((body.model = target.model), { path: c.path, body: JSON.stringify(body) });
  const call = relayCall(req, images, { family, key, model: c.model, clientModel: c.clientModel, protocol: 'images', targets, stream: body.stream === true, requestBytes: c.raw.length, build, reader: images.reader(() => n), billing: 'images' });
  await relay(ctx.relay, call, reply);
}

async function edits(ctx: GatewayContext, req: FastifyRequest, reply: FastifyReply, family: ErrorFamily): Promise<void> {
  const contentType = String(req.headers['content-type'] ?? '');
  if (!contentType.toLowerCase().startsWith('multipart/form-data')) return jsonEdits(ctx, req, reply, family);
  const source = req.body as Readable;
  const declared = req.headers['content-length'] === undefined ? undefined : Number(req.headers['content-length']);
  let boundary: string | undefined;
  let admitted: ReturnType<typeof admit>;
  try {
    // Decided from the headers alone: a refused body is drained unread (so the client can read the answer), never held.
    if (declared !== undefined && declared > IMAGES_MAX_BYTES) throw tooLarge(IMAGES_MAX_BYTES);
    boundary = multipartBoundary(contentType);
    if (boundary === undefined) throw new GatewayError('invalid_request', 'The multipart/form-data content type has no valid boundary.');
    admitted = admit(ctx, req);
  } catch (err) {
    drain(source, IMAGES_MAX_BYTES * 2);
    throw err;
  }
  const { snapshot, key } = admitted;
  let model: RuntimeModel | undefined;
  let target: UpstreamTarget | undefined;
  const upload = new MultipartUpload(
    source,
    boundary,
    { maxBytes: IMAGES_MAX_BYTES, spoolThreshold: SPOOL_THRESHOLD, spoolDir: tmpdir() },
    {
      maxImages: MAX_EDIT_IMAGES,
      capture: ['stream', 'n', 'partial_images'],
      model: (name) => {
        model = resolveModel(snapshot, key, name);
        // A streamed body cannot be sent twice: only the first upstream (by weight) is tried.
        target = orderByWeight(upstreamsFor(model, 'images', name))[0];
        return target.model;
      },
      finish: checkEditFields,
    },
  );
  try {
    await upload.readUntilModel();
    const r = upload.rewriter;
    const passHeaders: Record<string, string> = { ...traceHeaders(req) };
    // The client's length less its model name plus ours: the upstream gets an exact Content-Length when the client gave one.
    if (declared !== undefined) passHeaders['content-length'] = String(declared + r.delta);
    const call = relayCall(req, images, {
      family,
      key,
      model: model!,
      clientModel: r.clientModel!,
      protocol: 'images',
      targets: [target!],
      // `stream` and `n` may come after the images, so they are read when needed (the row is charged at the end).
      get stream(): boolean {
        return r.fields.get('stream') === 'true';
      },
      build: () => ({ path: images.paths.edits, body: upload.body(), contentType }),
      passHeaders,
      reader: images.reader(() => positiveInt(r.fields.get('n')) ?? 1),
      // The body is images, not prompt tokens: no byte-count guess from it.
      requestBytes: 0,
      billing: 'images',
    });
    await relay(ctx.relay, call, reply);
  } finally {
    await upload.discard();
  }
}

/** The newer JSON edits body (`images: [{image_url} | {file_id}]`): same rules, forwarded like generations. */
async function jsonEdits(ctx: GatewayContext, req: FastifyRequest, reply: FastifyReply, family: ErrorFamily): Promise<void> {
  const { snapshot, key } = admit(ctx, req);
  const { raw, value: body } = parseJsonObject(req.body as Buffer);
  const clientModel = checkJsonEdit(body, family);
  const model = resolveModel(snapshot, key, clientModel);
  await forwardJson(ctx, req, reply, family, { key, body, raw, clientModel, model, path: images.paths.edits });
}

/** The JSON edits body: the generation rules and 1 to 16 images; returns the client's model. */
export function checkJsonEdit(body: Record<string, unknown>, family: ErrorFamily): string {
  const model = checkGeneration(body, family);
  if (!Array.isArray(body.images) || body.images.length === 0) throw new GatewayError('invalid_request', "Missing required parameter: 'images'.", { param: 'images' });
  if (body.images.length > MAX_EDIT_IMAGES) throw new GatewayError('invalid_request', `At most ${MAX_EDIT_IMAGES} images may be edited in one request.`, { param: 'images' });
  return model;
}

/** Field rules shared by generations and JSON edits; returns the client's model. */
export function checkGeneration(body: Record<string, unknown>, family: ErrorFamily): string {
  const model = body.model;
  if (typeof model !== 'string' || model.trim() === '') throw new GatewayError('invalid_request', 'you must provide a model parameter', { param: 'model' });
  if (typeof body.prompt !== 'string' || body.prompt === '') throw new GatewayError('invalid_request', "Missing required parameter: 'prompt'.", { param: 'prompt' });
  if (body.n !== undefined && (!Number.isSafeInteger(body.n) || (body.n as number) < 1)) throw new GatewayError('invalid_request', "'n' must be a positive integer.", { param: 'n' });
  if (body.stream !== undefined && body.stream !== null && typeof body.stream !== 'boolean') throw new GatewayError('invalid_request', "'stream' must be a boolean.", { param: 'stream' });
  if (body.partial_images !== undefined && body.partial_images !== null) {
    const p = body.partial_images;
    if (!Number.isSafeInteger(p) || (p as number) < 0 || (p as number) > 3) throw new GatewayError('invalid_request', "'partial_images' must be an integer from 0 to 3.", { param: 'partial_images' });
    if (body.stream !== true) throw new GatewayError('invalid_request', "'partial_images' is only allowed with 'stream': true.", { param: 'partial_images' });
  }
  if (family === 'compat' && body.response_format !== undefined && body.response_format !== 'url' && body.response_format !== 'b64_json') {
    throw new GatewayError('invalid_request', "'response_format' must be 'url' or 'b64_json'.", { param: 'response_format' });
  }
  return model;
}

/** v3: a model with an image size list accepts only those sizes. */
export function checkSize(model: RuntimeModel, size: unknown): void {
  if (size === undefined || model.imageSizes === undefined) return;
  if (typeof size === 'string' && model.imageSizes.has(size)) return;
  throw new GatewayError('invalid_request', `The size ${JSON.stringify(size)} is not supported by this model; use one of: ${[...model.imageSizes].join(', ')}.`, { param: 'size' });
}

/** Multipart edits: rules on fields that may come after the images, checked once the whole body was read. */
function checkEditFields(r: MultipartRewriter): void {
  const partial = r.fields.get('partial_images');
  if (partial !== undefined && r.fields.get('stream') !== 'true') {
    throw new GatewayError('invalid_request', "'partial_images' is only allowed with 'stream': true.", { param: 'partial_images' });
  }
}

function positiveInt(v: string | undefined): number | undefined {
  const n = Number(v);
  return Number.isInteger(n) && n > 0 ? n : undefined;
}
