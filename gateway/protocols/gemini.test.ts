// How an upstream model id is written into a generateContent path: one builder for the native and the unified route.
import { describe, expect, it } from 'vitest';
import { gemini, upstreamModelPath } from './gemini.ts';

describe('upstreamModelPath', () => {
  it.each([
    ['gemini-2.5-flash-image', 'models/gemini-2.5-flash-image'],
    ['models/gemini-2.5-flash', 'models/gemini-2.5-flash'],
    // A tuned model lives in its own collection upstream (v1beta/tunedModels/{id}:generateContent), never under models/.
    ['tunedModels/my-model', 'tunedModels/my-model'],
    // The slash of a provider-prefixed id stays a slash, as @google/genai itself sends it.
    ['google/gemini-2.5-pro', 'models/google/gemini-2.5-pro'],
    ['odd name?#', 'models/odd%20name%3F%23'],
  ])('%s', (id, path) => {
    expect(upstreamModelPath(id)).toBe(path);
  });
});

describe('gemini.modelPath', () => {
  it('adds the action, and alt=sse only for an SSE stream', () => {
    expect(gemini.modelPath('gemini-2.5-pro', 'generateContent', false)).toBe('/models/gemini-2.5-pro:generateContent');
    expect(gemini.modelPath('tunedModels/t1', 'streamGenerateContent', true)).toBe('/tunedModels/t1:streamGenerateContent?alt=sse');
    expect(gemini.modelPath('models/x', 'streamGenerateContent', false)).toBe('/models/x:streamGenerateContent');
  });
});
