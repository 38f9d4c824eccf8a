// How a model id is read from, and written into, a generateContent path.
import { describe, expect, it } from 'vitest';
import { modelPath, upstreamModelPath } from './gemini.ts';

describe('modelPath', () => {
  it.each([
    ['/api/v1/gemini/v1beta/models/gemini-2.5-flash-image:generateContent', 'gemini-2.5-flash-image', 'generateContent'],
    ['/api/v1/gemini/v1beta/models/google/gemini-2.5-flash-image:streamGenerateContent?alt=sse', 'google/gemini-2.5-flash-image', 'streamGenerateContent'],
    ['/api/v1/gemini/v1beta/models/google%2Fgemini-2.5-flash-image:generateContent', 'google/gemini-2.5-flash-image', 'generateContent'],
    ['/api/v1/gemini/v1beta/models/google%2fgemini%3AgenerateContent', 'google/gemini', 'generateContent'],
    ['/api/v1/gemini/v1beta/models/ollama/llama3:8b:generateContent', 'ollama/llama3:8b', 'generateContent'],
  ])('%s', (url, model, action) => {
    expect(modelPath(url, 'v1beta')).toEqual({ model, action });
  });

  it.each([
    '/api/v1/gemini/v1beta/models/m:countTokens',
    '/api/v1/gemini/v1beta/models/m',
    '/api/v1/gemini/v1beta/models/:generateContent',
    '/api/v1/gemini/v1beta/models/m%E0%A4%A:generateContent',
    '/api/v1/gemini/v1/models/m:generateContent',
  ])('refuses %s', (url) => {
    expect(modelPath(url, 'v1beta')).toBeUndefined();
  });
});

describe('upstreamModelPath', () => {
  it.each([
    ['gemini-2.5-flash-image', 'models/gemini-2.5-flash-image'],
    ['models/gemini-2.5-flash', 'models/gemini-2.5-flash'],
    ['tunedModels/my-model', 'tunedModels/my-model'],
    ['odd name?#', 'models/odd%20name%3F%23'],
  ])('%s', (id, path) => {
    expect(upstreamModelPath(id)).toBe(path);
  });
});
