// OpenAI embeddings (POST /v1/embeddings): deterministic vectors derived from the input text, float or base64
// (little-endian float32, as the API sends), usage.prompt_tokens from the fake's tokenizer.
import { isObj, str, tokensOf } from './common.ts';
import type { HandlerCtx, Plan } from './common.ts';
import { badRequest, CT_JSON, openaiHeaders } from './openai-chat.ts';

const DEFAULT_DIMENSIONS = 8;

/** The fake's vector for one input: values in [-1, 1) from the text's char codes, the same every time. */
export function fakeEmbedding(text: string, dimensions = DEFAULT_DIMENSIONS): number[] {
  const v: number[] = [];
  for (let i = 0; i < dimensions; i++) {
    const c = text.length === 0 ? 0 : text.charCodeAt(i % text.length);
    v.push(Math.fround(((c * (i + 7)) % 200) / 100 - 1));
  }
  return v;
}

export function base64Embedding(v: number[]): string {
  const buf = Buffer.alloc(v.length * 4);
  v.forEach((x, i) => buf.writeFloatLE(x, i * 4));
  return buf.toString('base64');
}

/** The inputs as texts (token-id arrays count one token per id; as text they are their ids joined). */
function inputsOf(input: unknown): string[] | undefined {
  if (typeof input === 'string') return [input];
  if (!Array.isArray(input) || input.length === 0) return undefined;
  if (input.every((x) => typeof x === 'number')) return [input.join(' ')];
  if (input.every((x) => typeof x === 'string' || Array.isArray(x))) return input.map((x) => (typeof x === 'string' ? x : (x as unknown[]).join(' ')));
  return undefined;
}

export function embeddingsPlan(ctx: HandlerCtx): Plan {
  const body = isObj(ctx.json) ? ctx.json : undefined;
  if (!body) return badRequest('We could not parse the JSON body of your request.', null, ctx.seq);
  const inputs = inputsOf(body.input);
  if (!inputs) return badRequest("'input' is a required property", 'input', ctx.seq);
  const dims = typeof body.dimensions === 'number' && body.dimensions > 0 ? Math.min(body.dimensions, 3072) : DEFAULT_DIMENSIONS;
  const base64 = body.encoding_format === 'base64';
  const prompt = inputs.reduce((n, text) => n + tokensOf(text.length), 0);
  const data = inputs.map((text, index) => {
    const v = fakeEmbedding(text, dims);
    return { object: 'embedding', index, embedding: base64 ? base64Embedding(v) : v };
  });
  return {
    status: 200,
    headers: openaiHeaders(CT_JSON, ctx.seq),
    body: JSON.stringify({ object: 'list', data, model: str(body.model), usage: { prompt_tokens: prompt, total_tokens: prompt } }),
  };
}
