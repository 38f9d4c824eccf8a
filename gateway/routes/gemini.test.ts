// How a model id is read from a generateContent path (written into one: protocols/gemini.test.ts).
import { describe, expect, it } from 'vitest';
import { modelPath } from './gemini.ts';

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
