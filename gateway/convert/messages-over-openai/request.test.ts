// messages request -> chat request: golden fixtures, and every unconvertible input a clear 400 (never a 500).
import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../errors.ts';
import { expectGolden, goldenInputs, readFixture } from '../../../test/support/golden-files.ts';
import { effortForBudget, messagesRequestToChat } from './request.ts';

const DIR = 'convert/messages-request-to-chat';

describe('messages request to chat request', () => {
  it.each(goldenInputs(DIR, 'json'))('%s matches its golden file', (name) => {
    const input = JSON.parse(readFixture(DIR, `${name}.in.json`)) as { drop: string[]; body: Record<string, unknown> };
    expectGolden(DIR, `${name}.out.json`, JSON.stringify(messagesRequestToChat(input.body, { drop: input.drop }), null, 2) + '\n');
  });

  const base = { model: 'm', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] };
  const convert = (over: Record<string, unknown>, drop: string[] = []) => messagesRequestToChat({ ...base, ...over }, { drop });

  it('tool results go before the rest of their turn, in order, and the turn text last', () => {
    const chat = convert({
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'after' }, { type: 'tool_result', tool_use_id: 't1', content: 'one' }, { type: 'tool_result', tool_use_id: 't2', content: 'two' }] },
      ],
    });
    expect(chat.messages).toEqual([
      { role: 'tool', tool_call_id: 't1', content: 'one' },
      { role: 'tool', tool_call_id: 't2', content: 'two' },
      { role: 'user', content: 'after' },
    ]);
  });

  it('an assistant turn of only tool calls has null content; several parallel calls stay in order', () => {
    const chat = convert({
      messages: [
        { role: 'user', content: 'go' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'a', name: 'x', input: { n: 1 } }, { type: 'tool_use', id: 'b', name: 'y', input: {} }, { type: 'tool_use', id: 'c', name: 'x', input: { n: 2 } }] },
      ],
    });
    const msgs = chat.messages as Record<string, unknown>[];
    expect(msgs[1]).toEqual({
      role: 'assistant',
      content: null,
      tool_calls: [
        { id: 'a', type: 'function', function: { name: 'x', arguments: '{"n":1}' } },
        { id: 'b', type: 'function', function: { name: 'y', arguments: '{}' } },
        { id: 'c', type: 'function', function: { name: 'x', arguments: '{"n":2}' } },
      ],
    });
  });

  it('thinking budgets bucket into reasoning_effort; adaptive is medium; disabled sends nothing', () => {
    expect([1024, 2047, 2048, 4095, 4096, 32000].map(effortForBudget)).toEqual(['low', 'low', 'medium', 'medium', 'high', 'high']);
    expect(convert({ thinking: { type: 'adaptive' } }).reasoning_effort).toBe('medium');
    expect(convert({ thinking: { type: 'disabled' } }).reasoning_effort).toBeUndefined();
    expect(convert({ thinking: { type: 'enabled', budget_tokens: 9000 }, output_config: { effort: 'low' } }).reasoning_effort).toBe('low');
  });

  it('a model that drops max_completion_tokens gets max_tokens; dropped fields never reach the chat body', () => {
    expect(convert({}).max_completion_tokens).toBe(10);
    const legacy = convert({ temperature: 0.5, top_p: 0.5, thinking: { type: 'enabled', budget_tokens: 2048 } }, ['max_completion_tokens', 'reasoning_effort', 'top_p']);
    expect(legacy).toEqual({ model: 'm', messages: [{ role: 'user', content: 'hi' }], max_tokens: 10, temperature: 0.5 });
  });

  it('tool_choice maps each kind; disable_parallel_tool_use becomes parallel_tool_calls false', () => {
    const tools = [{ name: 'x', input_schema: { type: 'object' } }];
    expect(convert({ tools, tool_choice: { type: 'auto' } }).tool_choice).toBe('auto');
    expect(convert({ tools, tool_choice: { type: 'any' } }).tool_choice).toBe('required');
    expect(convert({ tools, tool_choice: { type: 'none' } }).tool_choice).toBe('none');
    expect(convert({ tools, tool_choice: { type: 'tool', name: 'x' } }).tool_choice).toEqual({ type: 'function', function: { name: 'x' } });
    expect(convert({ tools, tool_choice: { type: 'auto', disable_parallel_tool_use: true } }).parallel_tool_calls).toBe(false);
    expect(convert({ tools: [{ name: 'x' }] }).tools).toEqual([{ type: 'function', function: { name: 'x', parameters: { type: 'object', properties: {} } } }]);
  });

  it('a non-streamed request asks for no stream options; a streamed one always asks for the usage chunk', () => {
    expect(convert({}).stream_options).toBeUndefined();
    expect(convert({ stream: true }).stream_options).toEqual({ include_usage: true });
  });

  const bad: [string, Record<string, unknown>, RegExp][] = [
    ['no messages', { messages: [] }, /at least one message/],
    ['a message that is not an object', { messages: ['hi'] }, /messages\.0: must be an object/],
    ['an unknown role', { messages: [{ role: 'tool', content: 'x' }] }, /role: must be "user" or "assistant"/],
    ['content of the wrong type', { messages: [{ role: 'user', content: 5 }] }, /content: must be a string or a list/],
    ['an unknown block', { messages: [{ role: 'user', content: [{ type: 'container_upload', file_id: 'f' }] }] }, /"container_upload" cannot be converted/],
    ['a server tool', { tools: [{ type: 'web_search_20250305', name: 'web_search' }] }, /server tool "web_search_20250305"/],
    ['an image from a file id', { messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'file', file_id: 'f' } }] }] }, /only base64 and url sources/],
    ['a text block without text', { messages: [{ role: 'user', content: [{ type: 'text' }] }] }, /text: must be a string/],
    ['a tool_use without id', { messages: [{ role: 'assistant', content: [{ type: 'tool_use', name: 'x', input: {} }] }] }, /id: must be a string/],
    ['a bad max_tokens', { max_tokens: 0 }, /max_tokens: must be a positive integer/],
    ['a string temperature', { temperature: 'hot' }, /temperature: must be a number/],
    ['stop_sequences not a list', { stop_sequences: 'END' }, /stop_sequences: must be a list/],
    ['a system image', { system: [{ type: 'image', source: {} }] }, /system\.0: only text blocks/],
    ['an unknown tool_choice', { tool_choice: { type: 'sometimes' } }, /tool_choice\.type/],
  ];
  it.each(bad)('%s is a 400 invalid_request naming the field', (_name, over, message) => {
    let err: unknown;
    try {
      convert(over);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(GatewayError);
    expect((err as GatewayError).kind).toBe('invalid_request');
    expect((err as GatewayError).status).toBe(400);
    expect((err as GatewayError).message).toMatch(message);
  });
});
