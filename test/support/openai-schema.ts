// Validates chat completions and chunks against OpenAI's own OpenAPI document (openai-openapi.yaml),
// with $refs resolved by ajv. The spec is read from the shared reference folder beside the repository.
import { existsSync, readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { ValidateFunction } from 'ajv';
import { parse } from 'yaml';
import { expect } from 'vitest';

const SPEC_PATHS = [new URL('../../../shared/reference/openai-openapi.yaml', import.meta.url).pathname, '/work/shared/reference/openai-openapi.yaml'];

/** OpenAPI 3.0's `nullable: true` (the spec still uses it in places) as JSON Schema: the schema or null. */
function nullableToAnyOf(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(nullableToAnyOf);
  if (node === null || typeof node !== 'object') return node;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(node)) out[k] = nullableToAnyOf(v);
  if (out.nullable === true) {
    delete out.nullable;
    const { description, ...rest } = out;
    return { ...(description === undefined ? {} : { description }), anyOf: [rest, { type: 'null' }] };
  }
  return out;
}

let validators: { response: ValidateFunction; chunk: ValidateFunction } | undefined;

function load(): { response: ValidateFunction; chunk: ValidateFunction } {
  if (validators) return validators;
  const path = SPEC_PATHS.find((p) => existsSync(p));
  if (!path) throw new Error('openai-openapi.yaml not found in ../shared/reference');
  const spec = parse(readFileSync(path, 'utf8')) as { components: { schemas: Record<string, unknown> } };
  // The components alone, as one schema document: "#/components/schemas/X" refs resolve against it.
  const doc = { $id: 'https://openai.test/openapi.json', components: nullableToAnyOf(spec.components) };
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
  ajv.addSchema(doc);
  const ref = (name: string) => ajv.compile({ $ref: `https://openai.test/openapi.json#/components/schemas/${name}` });
  validators = { response: ref('CreateChatCompletionResponse'), chunk: ref('CreateChatCompletionStreamResponse') };
  return validators;
}

function check(v: ValidateFunction, value: unknown): void {
  const ok = v(value);
  expect(ok ? [] : v.errors, JSON.stringify(value).slice(0, 400)).toEqual([]);
}

export function expectValidChatCompletion(body: unknown): void {
  check(load().response, body);
}

export function expectValidChatChunk(chunk: unknown): void {
  check(load().chunk, chunk);
}

/** Splits chat SSE text into its data payloads; every JSON one is checked to be a schema-valid chunk unless it is an error. */
export function chatSseData(text: string): string[] {
  const out: string[] = [];
  for (const block of text.split('\n\n')) {
    if (block === '') continue;
    expect(block.startsWith('data: ')).toBe(true);
    out.push(block.slice(6));
  }
  return out;
}

export function expectValidChatStream(text: string): { chunks: Record<string, unknown>[]; error?: Record<string, unknown>; done: boolean } {
  const chunks: Record<string, unknown>[] = [];
  let error: Record<string, unknown> | undefined;
  let done = false;
  for (const d of chatSseData(text)) {
    expect(done, 'nothing after [DONE]').toBe(false);
    expect(error, 'nothing after an error').toBeUndefined();
    if (d === '[DONE]') {
      done = true;
      continue;
    }
    const v = JSON.parse(d) as Record<string, unknown>;
    if ('error' in v) {
      error = v.error as Record<string, unknown>;
      expect(Object.keys(error).sort()).toEqual(['code', 'message', 'param', 'type']);
      continue;
    }
    expectValidChatChunk(v);
    chunks.push(v);
  }
  return { chunks, error, done };
}
