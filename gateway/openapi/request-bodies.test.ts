// The routes check request fields with hand-written guards (no zod parse on the hot path); the document describes
// them with zod schemas. Here both meet: on any body, guard and schema accept or refuse alike, and the JSON Schema
// in the served document says the same (where a cross-field rule cannot be said in JSON Schema, it accepts more).
import fc from 'fast-check';
import type { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { GatewayError } from '../errors.ts';
import { requireChatFields } from '../routes/chat.ts';
import { requireEmbeddingsFields } from '../routes/embeddings.ts';
import { requireContents } from '../routes/gemini.ts';
import { checkGeneration, checkJsonEdit } from '../routes/images.ts';
import { requireMessagesFields } from '../routes/messages.ts';
import { requireResponsesFields } from '../routes/responses.ts';
import { openApiAjv } from '../../test/support/openapi.ts';
import { buildOpenApi } from './document.ts';
import { PUBLIC_ROUTES } from './public-routes.ts';
import * as request from './request-bodies.ts';

/** Values chosen to sit on each guard's edges, plus any JSON. */
const edgy = fc.oneof(
  fc.constantFrom('', ' ', '\n\t', '\u00a0', '\ufeff', '\u2028', 'gpt-4o-mini', ' x ', 'true', 'url', 'b64_json', 'png'),
  fc.constantFrom(0, 1, 2, 3, 4, -1, 1.5, 16, 17, Number.MAX_SAFE_INTEGER, 2 ** 53, 1e20, -0),
  fc.boolean(),
  fc.constant(null),
  fc.constantFrom([], [{}], [1, 2], Array.from({ length: 16 }, () => ({ image_url: 'x' })), Array.from({ length: 17 }, () => ({ file_id: 'f' }))),
  fc.constantFrom({}, { include_usage: true }),
  fc.jsonValue({ maxDepth: 2 }),
);

/** A value each guard accepts, so that bodies passing every check are common enough to test acceptance too. */
const GOOD: Record<string, fc.Arbitrary<unknown>> = {
  model: fc.constantFrom('gpt-image-1', 'openai/gpt-4o-mini', ' m '),
  prompt: fc.constantFrom('a cat', ' '),
  messages: fc.constantFrom([{ role: 'user', content: 'hi' }], [1]),
  contents: fc.constantFrom([{ parts: [{ text: 'hi' }] }]),
  input: fc.constantFrom('hi', ['a', 'b'], 0, false),
  n: fc.integer({ min: 1, max: 4 }),
  stream: fc.boolean(),
  partial_images: fc.integer({ min: 0, max: 3 }),
  response_format: fc.constantFrom('url', 'b64_json'),
  images: fc.constantFrom([{ image_url: 'https://x/a.png' }], [{ file_id: 'f' }, { file_id: 'g' }]),
};

function bodies(fields: string[]): fc.Arbitrary<Record<string, unknown>> {
  const value = (f: string) => (GOOD[f] ? fc.oneof({ arbitrary: GOOD[f], weight: 4 }, { arbitrary: edgy, weight: 1 }) : edgy);
  return fc.record(Object.fromEntries([...fields, 'other'].map((f) => [f, value(f)])), { requiredKeys: [] });
}

function guardAccepts(guard: (b: Record<string, unknown>) => unknown, body: Record<string, unknown>): boolean {
  try {
    guard(structuredClone(body));
    return true;
  } catch (err) {
    if (err instanceof GatewayError) return false;
    throw err;
  }
}

const doc = buildOpenApi(PUBLIC_ROUTES);
const ajv = openApiAjv(doc);

interface Pair {
  name: string;
  guard: (b: Record<string, unknown>) => unknown;
  schema: z.ZodType;
  fields: string[];
  /** Carries a refinement JSON Schema cannot express: its JSON Schema may accept more than the guard. */
  refined?: boolean;
}

const imageFields = ['model', 'prompt', 'n', 'stream', 'partial_images', 'response_format', 'size'];
const PAIRS: Pair[] = [
  { name: 'chat completions', guard: requireChatFields, schema: request.chatCompletionRequest, fields: ['model', 'messages', 'stream', 'stream_options'] },
  { name: 'messages', guard: requireMessagesFields, schema: request.messagesRequest, fields: ['model', 'messages', 'stream'] },
  { name: 'responses', guard: requireResponsesFields, schema: request.responsesRequest, fields: ['model', 'input', 'stream'] },
  { name: 'embeddings', guard: requireEmbeddingsFields, schema: request.embeddingsRequest, fields: ['model', 'input', 'encoding_format'] },
  { name: 'generateContent', guard: requireContents, schema: request.generateContentRequest, fields: ['contents', 'model', 'generationConfig'] },
  { name: 'images generations v1', guard: (b) => checkGeneration(b, 'chat'), schema: request.imageGenerationRequest, fields: imageFields, refined: true },
  { name: 'images generations v3', guard: (b) => checkGeneration(b, 'compat'), schema: request.imageGenerationRequestV3, fields: imageFields, refined: true },
  { name: 'JSON images edits v1', guard: (b) => checkJsonEdit(b, 'chat'), schema: request.imageEditJsonRequest, fields: [...imageFields, 'images'], refined: true },
  { name: 'JSON images edits v3', guard: (b) => checkJsonEdit(b, 'compat'), schema: request.imageEditJsonRequestV3, fields: [...imageFields, 'images'], refined: true },
];

function componentOf(schema: z.ZodType): string {
  for (const path of Object.values(doc.paths)) {
    for (const op of Object.values(path) as { requestBody?: { content: Record<string, { schema?: { $ref?: string } }> } }[]) {
      const ref = op.requestBody?.content['application/json']?.schema?.$ref;
      const route = PUBLIC_ROUTES.find((r) => r.body === schema);
      if (ref && route && (op as { operationId?: string }).operationId === route.operationId) return ref;
    }
  }
  throw new Error('schema not in the document');
}

describe('request schemas and the route guards agree', () => {
  for (const p of PAIRS) {
    it(p.name, () => {
      const validate = ajv.compile({ $ref: componentOf(p.schema).replace('#/components/schemas/', 'https://tollgate.dev/openapi.json#/$defs/') });
      let accepted = 0;
      fc.assert(
        fc.property(bodies(p.fields), (body) => {
          const guard = guardAccepts(p.guard, body);
          expect(p.schema.safeParse(body).success, JSON.stringify(body)).toBe(guard);
          const json = validate(body);
          if (p.refined) expect(json || !guard, JSON.stringify(body)).toBe(true);
          else expect(json, JSON.stringify(body)).toBe(guard);
          if (guard) accepted++;
        }),
        { numRuns: 3000 },
      );
      // Both sides were exercised, not only refusals.
      expect(accepted).toBeGreaterThan(10);
    });
  }
});
