// OpenAI Images generations/edits (reference §4) and the Ark-compatible v3 generations (reference §5).
import busboy from 'busboy';
import {
  IMAGE_TOKENS,
  PARTIAL_PNG_B64,
  SSE_DONE,
  TINY_PNG_B64,
  errorStatus,
  idBody,
  isObj,
  sseEvent,
  str,
  tokensOf,
} from './common.ts';
import type { HandlerCtx, HeaderList, Obj, Plan } from './common.ts';
import { CT_JSON, CT_SSE, OPENAI_STREAM_ERROR_FRAME, badRequest, openaiError, openaiHeaders } from './openai-chat.ts';

/** Output tokens per generated image for GPT image models, by quality, for square and for 3:2 / 2:3 sizes. */
const GPT_IMAGE_TOKENS: Record<string, [number, number]> = {
  low: [272, 408],
  medium: [1056, 1584],
  high: [4160, 6240],
};
/** Extra output tokens billed per streamed partial image. */
export const PARTIAL_IMAGE_TOKENS = 100;

export function gptImageOutputTokens(quality: string, size: string): number {
  const row = GPT_IMAGE_TOKENS[quality] ?? GPT_IMAGE_TOKENS.medium;
  return size === '1536x1024' || size === '1024x1536' ? row[1] : row[0];
}

interface ImageParams {
  model: string;
  prompt: string;
  n: number;
  size: string;
  quality: string;
  background: string;
  outputFormat: string;
  responseFormat: string;
  stream: boolean;
  partialImages: number;
  inputImages: number;
  scenario: string;
}

function params(fields: Obj, inputImages: number): ImageParams {
  const num = (v: unknown, d: number): number => {
    const x = typeof v === 'number' ? v : typeof v === 'string' && v !== '' ? Number(v) : NaN;
    return Number.isFinite(x) ? x : d;
  };
  const model = str(fields.model) || 'dall-e-2';
  const quality = str(fields.quality) || 'auto';
  const size = str(fields.size) || 'auto';
  const background = str(fields.background) || 'auto';
  return {
    model,
    prompt: str(fields.prompt),
    n: Math.max(1, Math.min(10, num(fields.n, 1))),
    size: size === 'auto' ? '1024x1024' : size,
    quality: quality === 'auto' || quality === 'standard' ? 'medium' : quality === 'hd' ? 'high' : quality,
    background: background === 'auto' ? 'opaque' : background,
    outputFormat: str(fields.output_format) || 'png',
    responseFormat: str(fields.response_format) || (model.startsWith('dall-e') ? 'url' : 'b64_json'),
    stream: fields.stream === true || fields.stream === 'true',
    partialImages: Math.max(0, Math.min(3, num(fields.partial_images, 0))),
    inputImages,
    scenario: '',
  };
}

function usageObj(p: ImageParams, partials: number): Obj {
  const text = tokensOf(p.prompt.length);
  const img = p.inputImages * IMAGE_TOKENS;
  const out = p.n * gptImageOutputTokens(p.quality, p.size) + partials * PARTIAL_IMAGE_TOKENS;
  return {
    total_tokens: text + img + out,
    input_tokens: text + img,
    output_tokens: out,
    input_tokens_details: { text_tokens: text, image_tokens: img },
    output_tokens_details: { image_tokens: out, text_tokens: 0 },
  };
}

function imagesPlan(ctx: HandlerCtx, p: ImageParams, kind: 'generation' | 'edit'): Plan {
  const sc = ctx.scenario.name;
  const errStatus = errorStatus(sc);
  if (errStatus !== undefined) return openaiError(errStatus, p.model, ctx.seq);
  if (!p.prompt) return badRequest("Missing required parameter: 'prompt'.", 'prompt', ctx.seq);
  if (kind === 'edit' && p.inputImages === 0) return badRequest("Missing required parameter: 'image'.", 'image', ctx.seq);
  const dalle = p.model.startsWith('dall-e');
  const withUsage = !dalle && sc !== 'no-usage';

  if (!p.stream || dalle) {
    const data: Obj[] = [];
    for (let i = 0; i < p.n; i++) {
      const item: Obj =
        p.responseFormat === 'url' ? { url: `${ctx.baseUrl}/files/img-${ctx.seq}-${i}.png` } : { b64_json: TINY_PNG_B64 };
      if (p.model === 'dall-e-3') item.revised_prompt = p.prompt;
      data.push(item);
    }
    const resp: Obj = { created: ctx.now, data };
    if (!dalle) {
      resp.background = p.background;
      resp.output_format = p.outputFormat;
      resp.size = p.size;
      resp.quality = p.quality;
    }
    if (withUsage) resp.usage = usageObj(p, 0);
    return { status: 200, headers: openaiHeaders(CT_JSON, ctx.seq), body: JSON.stringify(resp) };
  }

  const prefix = kind === 'generation' ? 'image_generation' : 'image_edit';
  const common = (b64: string): Obj => ({
    b64_json: b64,
    created_at: ctx.now,
    size: p.size,
    quality: p.quality,
    background: p.background,
    output_format: p.outputFormat,
  });
  const events: string[] = [];
  for (let i = 0; i < p.partialImages; i++) {
    const type = prefix + '.partial_image';
    events.push(sseEvent(type, JSON.stringify({ type, ...common(PARTIAL_PNG_B64), partial_image_index: i })));
  }
  const type = prefix + '.completed';
  const done: Obj = { type, ...common(TINY_PNG_B64) };
  if (withUsage) done.usage = usageObj(p, p.partialImages);
  events.push(sseEvent(type, JSON.stringify(done)));
  return {
    status: 200,
    headers: openaiHeaders(CT_SSE, ctx.seq),
    events,
    cutAfter: Math.max(0, events.length - 1),
    errorFrame: OPENAI_STREAM_ERROR_FRAME,
  };
}

export function imageGenerationsPlan(ctx: HandlerCtx): Plan {
  if (!isObj(ctx.json)) return badRequest('We could not parse the JSON body of your request.', null, ctx.seq);
  return imagesPlan(ctx, params(ctx.json, 0), 'generation');
}

const IMAGE_FIELD = /^image(\[\d*\])?$/;

/** Parse a multipart body completely (fields as strings, files counted by field name). */
export function parseMultipart(raw: Buffer, contentType: string): Promise<{ fields: Obj; files: Map<string, number> }> {
  return new Promise((resolve, reject) => {
    const fields: Obj = {};
    const files = new Map<string, number>();
    let bb: busboy.Busboy;
    try {
      bb = busboy({ headers: { 'content-type': contentType }, limits: { fileSize: 64 * 1024 * 1024 } });
    } catch (err) {
      reject(err instanceof Error ? err : new Error(String(err)));
      return;
    }
    bb.on('field', (name, value) => {
      fields[name] = value;
    });
    bb.on('file', (name, stream) => {
      files.set(name, (files.get(name) ?? 0) + 1);
      stream.resume();
    });
    bb.on('close', () => resolve({ fields, files }));
    bb.on('error', (err: unknown) => reject(err instanceof Error ? err : new Error(String(err))));
    bb.end(raw);
  });
}

export async function imageEditsPlan(ctx: HandlerCtx): Promise<Plan> {
  if (ctx.contentType.startsWith('multipart/form-data')) {
    let parsed: { fields: Obj; files: Map<string, number> };
    try {
      parsed = await parseMultipart(ctx.raw, ctx.contentType);
    } catch (err) {
      return badRequest('Could not parse multipart form: ' + String(err), null, ctx.seq);
    }
    let images = 0;
    for (const [name, k] of parsed.files) if (IMAGE_FIELD.test(name)) images += k;
    return imagesPlan(ctx, params(parsed.fields, images), 'edit');
  }
  if (!isObj(ctx.json)) return badRequest('We could not parse the JSON body of your request.', null, ctx.seq);
  const images = Array.isArray(ctx.json.images) ? ctx.json.images.length : 0;
  return imagesPlan(ctx, params(ctx.json, images), 'edit');
}

// ---------------------------------------------------------------- Ark (Volcengine / BytePlus) v3 images

const ARK_ERRORS: Record<number, [string, string, string]> = {
  400: ['InvalidParameter', 'BadRequest', 'The parameter `size` specified in the request is not valid.'],
  401: ['AuthenticationError', 'Unauthorized', 'the API key or AK/SK in the request is missing or invalid.'],
  403: ['AccessDenied', 'Forbidden', 'You do not have access to the requested resource.'],
  404: ['InvalidEndpointOrModel.NotFound', 'NotFound', 'The model or endpoint does not exist or you do not have access to it.'],
  429: ['RateLimitExceeded.EndpointRPMExceeded', 'TooManyRequests', 'The request has exceeded the RPM rate limit.'],
  500: ['InternalServiceError', 'InternalServerError', 'The service encountered an unexpected internal error.'],
};

function arkHeaders(contentType: string, seq: number): HeaderList {
  return [
    ['content-type', contentType],
    ['x-request-id', idBody('', seq, 32)],
    ['x-client-request-id', idBody('', seq, 32)],
  ];
}

export function arkError(status: number, seq: number, message?: string, param = ''): Plan {
  const [code, type, msg] = ARK_ERRORS[status] ?? ARK_ERRORS[500];
  return {
    status,
    headers: arkHeaders(CT_JSON, seq),
    body: JSON.stringify({ error: { code, message: `${message ?? msg} Request id: ${idBody('', seq, 32)}`, param, type } }),
  };
}

const ARK_TIERS: Record<string, string> = { '1K': '1024x1024', '2K': '2048x2048', '3K': '3072x3072', '4K': '4096x4096', adaptive: '1024x1024' };

export function arkImagesPlan(ctx: HandlerCtx): Plan {
  const body = ctx.json;
  if (!isObj(body)) return arkError(400, ctx.seq, 'The request body is not valid JSON.');
  const model = str(body.model);
  if (!model) return arkError(400, ctx.seq, 'The parameter `model` specified in the request is missing.', 'model');
  if (!str(body.prompt)) return arkError(400, ctx.seq, 'The parameter `prompt` specified in the request is missing.', 'prompt');
  const errStatus = errorStatus(ctx.scenario.name);
  if (errStatus !== undefined) return arkError(errStatus, ctx.seq);
  const sizeIn = str(body.size) || '2K';
  const size = ARK_TIERS[sizeIn] ?? sizeIn.toLowerCase();
  const m = /^(\d+)x(\d+)$/.exec(size);
  if (!m) return arkError(400, ctx.seq, undefined, 'size');
  const perImage = Math.floor((Number(m[1]) * Number(m[2])) / 256);
  const opt = isObj(body.sequential_image_generation_options) ? body.sequential_image_generation_options : {};
  const n = body.sequential_image_generation === 'auto' ? Math.max(1, Math.min(15, Number(opt.max_images ?? 1) || 1)) : 1;
  const b64 = body.response_format === 'b64_json';
  const image = (i: number): Obj => (b64 ? { b64_json: TINY_PNG_B64 } : { url: `${ctx.baseUrl}/files/ark-${ctx.seq}-${i}.png` });
  const usage: Obj | undefined =
    ctx.scenario.name === 'no-usage' ? undefined : { generated_images: n, output_tokens: n * perImage, total_tokens: n * perImage };
  if (body.stream !== true) {
    const data: Obj[] = [];
    for (let i = 0; i < n; i++) data.push({ ...image(i), size });
    return {
      status: 200,
      headers: arkHeaders(CT_JSON, ctx.seq),
      body: JSON.stringify({ model, created: ctx.now, data, usage }),
    };
  }
  const events: string[] = [];
  for (let i = 0; i < n; i++) {
    const type = 'image_generation.partial_succeeded';
    events.push(sseEvent(type, JSON.stringify({ type, model, created: ctx.now, image_index: i, ...image(i), size })));
  }
  const type = 'image_generation.completed';
  events.push(sseEvent(type, JSON.stringify({ type, model, created: ctx.now, usage })));
  events.push(SSE_DONE);
  return {
    status: 200,
    headers: arkHeaders('text/event-stream', ctx.seq),
    events,
    cutAfter: 1,
    errorFrame: sseEvent(
      'error',
      JSON.stringify({ error: { code: 'InternalServiceError', message: 'The service encountered an unexpected internal error.', param: '', type: 'InternalServerError' } }),
    ),
  };
}
