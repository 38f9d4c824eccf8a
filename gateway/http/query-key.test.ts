// The `?key=` of google-genai clients leaves the URL before routing, and only on the gemini path.
import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { queryKeyOf, stripQueryKey } from './query-key.ts';

const req = (url: string) => ({ url }) as IncomingMessage;

describe('stripQueryKey', () => {
  it.each([
    ['/api/v1/gemini/v1beta/models/m:streamGenerateContent?alt=sse&key=sk_live_abc', '/api/v1/gemini/v1beta/models/m:streamGenerateContent?alt=sse', 'sk_live_abc'],
    ['/api/v1/gemini/v1/models/m:generateContent?key=sk_live_a%2Bb', '/api/v1/gemini/v1/models/m:generateContent', 'sk_live_a+b'],
    ['/api/v1/gemini/v1/models/m:generateContent?key=first&monkey=1&key=second', '/api/v1/gemini/v1/models/m:generateContent?monkey=1', 'first'],
    ['/api/v1/gemini/v1/models/m:generateContent?alt=sse', '/api/v1/gemini/v1/models/m:generateContent?alt=sse', undefined],
    ['/api/v1/gemini/v1/models/m:generateContent', '/api/v1/gemini/v1/models/m:generateContent', undefined],
  ])('%s', (url, stripped, key) => {
    const r = req(url);
    expect(stripQueryKey(r)).toBe(stripped);
    expect(queryKeyOf(r)).toBe(key);
    expect((r as IncomingMessage & { originalUrl?: string }).originalUrl ?? stripped).not.toContain('key=sk');
  });

  it('leaves other paths alone', () => {
    const r = req('/api/v1/chat/completions?key=sk_live_abc');
    expect(stripQueryKey(r)).toBe('/api/v1/chat/completions?key=sk_live_abc');
    expect(queryKeyOf(r)).toBeUndefined();
  });

  it('drops a key with a malformed escape without throwing', () => {
    const r = req('/api/v1/gemini/v1/models/m:generateContent?key=%E0%A4%A');
    expect(stripQueryKey(r)).toBe('/api/v1/gemini/v1/models/m:generateContent');
    expect(queryKeyOf(r)).toBeUndefined();
  });
});
