// Anthropic Messages -> chat: responses, streams and errors against golden files, every chunk checked against OpenAI's schema.
import { describe, expect, it } from 'vitest';
import { runStream } from '../../../test/support/convert-stream.ts';
import { expectGolden, goldenInputs, readFixture } from '../../../test/support/golden-files.ts';
import { expectValidChatCompletion, expectValidChatStream } from '../../../test/support/openai-schema.ts';
import { anthropicReader } from '../../meter/anthropic.ts';
import type { ChatContext } from '../chat-completion.ts';
import { messagesErrorToChat } from './error.ts';
import { messagesResponseToChat } from './response.ts';
import { MessagesStreamToChat } from './stream.ts';

const CTX: ChatContext = { id: 'chatcmpl-golden', created: 1750000000, model: 'fallback-model' };

describe('messages response -> chat completion', () => {
  const DIR = 'convert/messages-response-to-chat';
  it.each(goldenInputs(DIR, 'json'))('%s', (name) => {
    const out = messagesResponseToChat(JSON.parse(readFixture(DIR, `${name}.in.json`)), CTX);
    expectValidChatCompletion(out);
    expectGolden(DIR, `${name}.out.json`, JSON.stringify(out, null, 2) + '\n');
  });

  it('counts cache reads and writes into prompt_tokens and keeps their split', () => {
    const out = messagesResponseToChat(JSON.parse(readFixture(DIR, 'thinking-parallel-tools.in.json')), CTX);
    expect(out.usage).toEqual({ prompt_tokens: 377 + 1000 + 120, completion_tokens: 65, total_tokens: 1562, prompt_tokens_details: { cached_tokens: 1000, cache_write_tokens: 120 } });
    expect(out.choices[0].finish_reason).toBe('tool_calls');
    expect(out.choices[0].message.reasoning_content).toBe('Two lookups needed.');
    expect(out.choices[0].message.tool_calls!.map((c) => [c.id, c.function.arguments])).toEqual([
      ['toolu_01A', '{"city":"Paris"}'],
      ['toolu_01B', '{}'],
    ]);
  });

  it.each([
    ['end_turn', 'stop'],
    ['stop_sequence', 'stop'],
    ['pause_turn', 'stop'],
    ['max_tokens', 'length'],
    ['model_context_window_exceeded', 'length'],
    ['tool_use', 'tool_calls'],
    ['refusal', 'content_filter'],
    ['something_new', 'stop'],
  ])('maps stop_reason %s to finish_reason %s', (stop, finish) => {
    const out = messagesResponseToChat({ id: 'm', type: 'message', content: [{ type: 'text', text: 'x' }], stop_reason: stop }, CTX);
    expect(out.choices[0].finish_reason).toBe(finish);
  });

  it('refuses an answer that is not a message (502 in the chat shape)', () => {
    expect(() => messagesResponseToChat({ hello: 'world' }, CTX)).toThrow(/could not be converted/);
  });
});

describe('messages stream -> chat chunks', () => {
  const DIR = 'convert/messages-stream-to-chat';
  it.each(goldenInputs(DIR, 'sse'))('%s', (name) => {
    const run = runStream(Buffer.from(readFixture(DIR, `${name}.in.sse`)), anthropicReader, new MessagesStreamToChat(CTX));
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

  it('gives tool calls dense indices, their ids and names first, then argument fragments that join to the input', () => {
    const run = runStream(Buffer.from(readFixture(DIR, 'parallel-tools-server-tool.in.sse')), anthropicReader, new MessagesStreamToChat(CTX));
    const { chunks } = expectValidChatStream(run.out);
    const calls = new Map<number, { id?: string; name?: string; args: string }>();
    for (const c of chunks) {
      const choices = c.choices as { delta: { tool_calls?: { index: number; id?: string; function: { name?: string; arguments: string } }[] } }[];
      for (const tc of choices[0]?.delta.tool_calls ?? []) {
        const seen = calls.get(tc.index);
        if (!seen) {
          expect(tc.id).toBeDefined();
          expect(tc.function.arguments).toBe('');
          calls.set(tc.index, { id: tc.id, name: tc.function.name, args: '' });
        } else {
          expect(tc.id).toBeUndefined();
          seen.args += tc.function.arguments;
        }
      }
    }
    // The server tool's block (index 1) and its input are not a chat tool call.
    expect([...calls.entries()]).toEqual([
      [0, { id: 'toolu_A', name: 'get_weather', args: '{"city":"Paris"}' }],
      [1, { id: 'toolu_B', name: 'get_time', args: '{}' }],
    ]);
    const usage = chunks.at(-1)!.usage;
    // message_delta restated the cumulative figures: the last ones win.
    expect(usage).toEqual({ prompt_tokens: 1250, completion_tokens: 88, total_tokens: 1338, prompt_tokens_details: { cached_tokens: 1000, cache_write_tokens: 200 } });
  });

  it('bills a malformed stream with what the upstream had reported', () => {
    const run = runStream(Buffer.from(readFixture(DIR, 'bad-missing-message-stop.in.sse')), anthropicReader, new MessagesStreamToChat(CTX));
    expect(run.done).toBe(false);
    expect(run.usage).toMatchObject({ input: 12, cacheRead: 3, output: 3 });
    expect(run.out.endsWith('"code":"upstream_unavailable"}}\n\n')).toBe(true);
  });

  it('says nothing more once it has failed', () => {
    const c = new MessagesStreamToChat(CTX);
    expect(c.push({ data: '{oops' })).toContain('"error"');
    expect(c.push({ event: 'message_stop', data: '{"type":"message_stop"}' })).toBe('');
    expect(c.end()).toBe('');
  });
});

describe('messages errors -> chat errors', () => {
  const DIR = 'convert/messages-error-to-chat';
  it.each(goldenInputs(DIR, 'json'))('%s', (name) => {
    const status = Number(name.slice(0, 3));
    const out = messagesErrorToChat(status, Buffer.from(readFixture(DIR, `${name}.in.json`)));
    expect(out.status).toBe(status);
    const body = JSON.parse(out.body);
    expect(Object.keys(body.error).sort()).toEqual(['code', 'message', 'param', 'type']);
    expect(body.error.message).not.toBe('');
    expectGolden(DIR, `${name}.out.json`, JSON.stringify(body, null, 2) + '\n');
  });

  it('answers a body that is not JSON with the status kept', () => {
    const out = messagesErrorToChat(502, Buffer.from('<html>Bad gateway</html>'));
    expect(out.status).toBe(502);
    expect(JSON.parse(out.body).error).toMatchObject({ type: 'upstream_error', code: 'upstream_error' });
  });
});
