// Gemini generateContent -> chat: responses, streams and errors against golden files, every chunk checked against OpenAI's schema.
import { describe, expect, it } from 'vitest';
import { runStream } from '../../../test/support/convert-stream.ts';
import { expectGolden, goldenInputs, readFixture } from '../../../test/support/golden-files.ts';
import { expectValidChatCompletion, expectValidChatStream } from '../../../test/support/openai-schema.ts';
import { geminiReader } from '../../meter/gemini.ts';
import type { ChatContext } from '../chat-completion.ts';
import { geminiErrorToChat } from './error.ts';
import { geminiResponseToChat } from './response.ts';
import { GeminiStreamToChat } from './stream.ts';
import { splitToolCallId } from './tool-id.ts';
import { openaiErrorToChat } from '../chat-over-openai/error.ts';

const CTX: ChatContext = { id: 'chatcmpl-golden', created: 1750000000, model: 'fallback-model' };

describe('gemini response -> chat completion', () => {
  const DIR = 'convert/gemini-response-to-chat';
  it.each(goldenInputs(DIR, 'json'))('%s', (name) => {
    const out = geminiResponseToChat(JSON.parse(readFixture(DIR, `${name}.in.json`)), CTX);
    expectValidChatCompletion(out);
    expectGolden(DIR, `${name}.out.json`, JSON.stringify(out, null, 2) + '\n');
  });

  it('synthesises stable tool-call ids, keeps Gemini own ones, and carries the thought signature inside the id', () => {
    const out = geminiResponseToChat(JSON.parse(readFixture(DIR, 'function-calls-thought.in.json')), CTX);
    const msg = out.choices[0].message;
    expect(out.choices[0].finish_reason).toBe('tool_calls');
    expect(msg.reasoning_content).toBe('Two lookups.');
    expect(msg.tool_calls!.map((c) => splitToolCallId(c.id))).toEqual([{ id: 'call_resp-fc-1_0', signature: 'c2lnbmF0dXJl' }, { id: 'fc-own-id' }]);
    // Billed and shown alike: prompt includes cached content, completion = candidates + thoughts.
    expect(out.usage).toEqual({ prompt_tokens: 100, completion_tokens: 50, total_tokens: 150, prompt_tokens_details: { cached_tokens: 40 }, completion_tokens_details: { reasoning_tokens: 30 } });
  });

  it('returns generated images in message.images as data URLs', () => {
    const out = geminiResponseToChat(JSON.parse(readFixture(DIR, 'image.in.json')), CTX);
    expect(out.choices[0].message.images?.[0].image_url.url).toMatch(/^data:image\/png;base64,iVBOR/);
  });

  it.each([
    ['STOP', false, 'stop'],
    ['STOP', true, 'tool_calls'],
    ['MAX_TOKENS', false, 'length'],
    ['SAFETY', false, 'content_filter'],
    ['RECITATION', false, 'content_filter'],
    ['MALFORMED_FUNCTION_CALL', false, 'stop'],
  ])('maps finishReason %s (function call: %s) to %s', (reason, call, finish) => {
    const parts = call ? [{ functionCall: { name: 'f', args: {} } }] : [{ text: 'x' }];
    expect(geminiResponseToChat({ candidates: [{ content: { parts }, finishReason: reason }] }, CTX).choices[0].finish_reason).toBe(finish);
  });
});

describe('gemini stream -> chat chunks', () => {
  const DIR = 'convert/gemini-stream-to-chat';
  it.each(goldenInputs(DIR, 'sse'))('%s', (name) => {
    const run = runStream(Buffer.from(readFixture(DIR, `${name}.in.sse`)), geminiReader, new GeminiStreamToChat(CTX));
    const parsed = expectValidChatStream(run.out);
    if (name.startsWith('bad-') || name.startsWith('error-')) {
      expect(parsed.error).toBeDefined();
      expect(parsed.done).toBe(false);
    } else {
      expect(parsed.error).toBeUndefined();
      expect(parsed.done).toBe(true);
    }
    expectGolden(DIR, `${name}.out.sse`, run.out);
  });

  it('gives a streamed function call the same id as the same answer unstreamed', () => {
    const run = runStream(Buffer.from(readFixture(DIR, 'function-calls.in.sse')), geminiReader, new GeminiStreamToChat(CTX));
    const ids = expectValidChatStream(run.out).chunks.flatMap((c) => (c.choices as { delta: { tool_calls?: { id: string }[] } }[])[0]?.delta.tool_calls?.map((t) => t.id) ?? []);
    expect(ids).toEqual(['call_resp-s1_0__thought__c2lnbmF0dXJl', 'call_resp-s1_1']);
    const json = geminiResponseToChat({ responseId: 'resp-s1', candidates: [{ content: { parts: [{ functionCall: { name: 'a', args: {} }, thoughtSignature: 'c2lnbmF0dXJl' }, { functionCall: { name: 'b', args: {} } }] } }] }, CTX);
    expect(json.choices[0].message.tool_calls!.map((c) => c.id)).toEqual(ids);
  });

  it('bills a stream that ended without a finishReason with the last usage reported', () => {
    const run = runStream(Buffer.from(readFixture(DIR, 'bad-no-finish.in.sse')), geminiReader, new GeminiStreamToChat(CTX));
    expect(run.done).toBe(false);
    expect(run.usage).toMatchObject({ input: 8, output: 0 });
    expect(run.out).toContain('ended before a finishReason');
  });
});

describe('gemini and openai-compatible errors -> chat errors', () => {
  it.each([
    ['convert/gemini-error-to-chat', geminiErrorToChat],
    ['convert/openai-error-to-chat', openaiErrorToChat],
  ] as const)('%s', (dir, convert) => {
    const names = goldenInputs(dir, 'json');
    expect(names.length).toBeGreaterThan(1);
    for (const name of names) {
      const status = Number(name.slice(0, 3));
      const out = convert(status, Buffer.from(readFixture(dir, `${name}.in.json`)));
      expect(out.status).toBe(status);
      const body = JSON.parse(out.body);
      expect(Object.keys(body.error).sort()).toEqual(['code', 'message', 'param', 'type']);
      expect(body.error.message).not.toBe('');
      expectGolden(dir, `${name}.out.json`, JSON.stringify(body, null, 2) + '\n');
    }
  });
});
