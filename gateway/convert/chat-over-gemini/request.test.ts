// Chat request -> Gemini generateContent request: golden files, then the rules one by one.
import { describe, expect, it } from 'vitest';
import { expectGolden, goldenInputs, readFixture } from '../../../test/support/golden-files.ts';
import { GatewayError } from '../../errors.ts';
import { chatRequestToGemini } from './request.ts';

const DIR = 'convert/chat-request-to-gemini';
const user = (content: unknown) => ({ role: 'user', content });

describe('chat request -> gemini: golden files', () => {
  it.each(goldenInputs(DIR, 'json'))('%s', (name) => {
    const out = chatRequestToGemini(JSON.parse(readFixture(DIR, `${name}.in.json`)));
    expectGolden(DIR, `${name}.out.json`, JSON.stringify(out, null, 2) + '\n');
  });
});

describe('chat request -> gemini', () => {
  it('alternates user and model turns, names each function response after its call, and echoes thought signatures', () => {
    const out = chatRequestToGemini(JSON.parse(readFixture(DIR, 'tools-round-trip.in.json')));
    const contents = out.contents as { role: string; parts: Record<string, unknown>[] }[];
    expect(contents.map((c) => c.role)).toEqual(['user', 'model', 'user']);
    expect(contents[1].parts[0]).toEqual({ functionCall: { name: 'get_weather', args: { city: 'Paris' } }, thoughtSignature: 'c2lnbmF0dXJl' });
    expect(contents[2].parts).toEqual([
      { functionResponse: { name: 'get_weather', response: { temperature: 21 } } },
      { functionResponse: { name: 'get_time', response: { output: '14:05' } } },
      { text: 'Thanks!' },
    ]);
    expect(out.toolConfig).toEqual({ functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['get_weather'] } });
  });

  it('puts system and developer text in systemInstruction and options in generationConfig', () => {
    const out = chatRequestToGemini({ messages: [{ role: 'system', content: 'S' }, user('hi')], max_completion_tokens: 10, stop: 'X', reasoning_effort: 'medium' });
    expect(out.systemInstruction).toEqual({ parts: [{ text: 'S' }] });
    expect(out.generationConfig).toEqual({ maxOutputTokens: 10, stopSequences: ['X'], thinkingConfig: { thinkingBudget: 8192, includeThoughts: true } });
    expect(chatRequestToGemini({ messages: [user('hi')] }).generationConfig).toBeUndefined();
  });

  it.each([
    ['a tool result for no known call', { messages: [user('x'), { role: 'tool', tool_call_id: 'nope', content: 'r' }] }, 'messages[1].tool_call_id'],
    ['an image URL that is neither http nor data', { messages: [user([{ type: 'image_url', image_url: { url: 'ftp://x/y.png' } }])] }, 'messages[0].content[0]'],
    ['a file by id', { messages: [user([{ type: 'file', file: { file_id: 'file-1' } }])] }, 'messages[0].content[0]'],
    ['an unknown role', { messages: [{ role: 'function', name: 'f', content: 'x' }] }, 'messages[0].role'],
    ['a negative max_tokens', { messages: [user('x')], max_tokens: -1 }, 'max_completion_tokens'],
  ])('answers 400 for %s, naming the parameter', (_name, body, param) => {
    let err: unknown;
    try {
      chatRequestToGemini(body as Record<string, unknown>);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(GatewayError);
    expect((err as GatewayError).param).toBe(param);
  });
});
