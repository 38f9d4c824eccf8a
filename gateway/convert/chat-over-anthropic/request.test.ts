// Chat request -> Anthropic Messages request: golden files, then the rules one by one.
import { describe, expect, it } from 'vitest';
import { expectGolden, goldenInputs, readFixture } from '../../../test/support/golden-files.ts';
import { GatewayError } from '../../errors.ts';
import { chatRequestToMessages, DEFAULT_MAX_TOKENS } from './request.ts';

const DIR = 'convert/chat-request-to-messages';
const convert = (body: Record<string, unknown>) => chatRequestToMessages(body, { model: 'claude-upstream' });
const user = (content: unknown) => ({ role: 'user', content });

describe('chat request -> messages: golden files', () => {
  it.each(goldenInputs(DIR, 'json'))('%s', (name) => {
    const out = convert(JSON.parse(readFixture(DIR, `${name}.in.json`)));
    expectGolden(DIR, `${name}.out.json`, JSON.stringify(out, null, 2) + '\n');
  });
});

function rejects(body: Record<string, unknown>, param: string): void {
  let err: unknown;
  try {
    convert(body);
  } catch (e) {
    err = e;
  }
  expect(err).toBeInstanceOf(GatewayError);
  expect((err as GatewayError).status).toBe(400);
  expect((err as GatewayError).param).toBe(param);
}

describe('chat request -> messages', () => {
  it('moves system and developer messages to the top-level system and names the upstream model', () => {
    const out = convert({ model: 'client/name', messages: [{ role: 'system', content: 'A' }, user('hi'), { role: 'developer', content: 'B' }] });
    expect(out.model).toBe('claude-upstream');
    expect(out.system).toEqual([{ type: 'text', text: 'A' }, { type: 'text', text: 'B' }]);
    expect(out.messages).toEqual([{ role: 'user', content: [{ type: 'text', text: 'hi' }] }]);
  });

  it(`fills max_tokens with ${DEFAULT_MAX_TOKENS} when the client gave none, else takes max_completion_tokens over max_tokens`, () => {
    expect(convert({ messages: [user('x')] }).max_tokens).toBe(DEFAULT_MAX_TOKENS);
    expect(chatRequestToMessages({ messages: [user('x')] }, { model: 'm', defaultMaxTokens: 1000 }).max_tokens).toBe(1000);
    expect(convert({ messages: [user('x')], max_tokens: 50, max_completion_tokens: 70 }).max_tokens).toBe(70);
  });

  it('puts all tool results of a turn into one user turn, before the text that follows', () => {
    const out = convert(JSON.parse(readFixture(DIR, 'tools-round-trip.in.json')));
    const turns = out.messages as { role: string; content: { type: string }[] }[];
    expect(turns.map((t) => t.role)).toEqual(['user', 'assistant', 'user']);
    expect(turns[2].content.map((b) => b.type)).toEqual(['tool_result', 'tool_result', 'text']);
    expect(turns[1].content.map((b) => b.type)).toEqual(['text', 'tool_use', 'tool_use']);
    expect(out.tool_choice).toEqual({ type: 'any', disable_parallel_tool_use: true });
  });

  it('maps reasoning_effort to extended thinking, which drops sampling knobs and keeps the budget under max_tokens', () => {
    const out = convert({ messages: [user('x')], reasoning_effort: 'high', max_tokens: 2000, temperature: 0.2 });
    expect(out.thinking).toEqual({ type: 'enabled', budget_tokens: 1999 });
    expect(out.temperature).toBeUndefined();
    // Too small a max_tokens for the minimum budget: no thinking rather than a 400 from upstream.
    expect(convert({ messages: [user('x')], reasoning_effort: 'low', max_tokens: 500 }).thinking).toBeUndefined();
    expect(convert({ messages: [user('x')], reasoning_effort: 'none' }).thinking).toBeUndefined();
    expect(convert({ messages: [user('x')], thinking: { type: 'enabled', budget_tokens: 3000 } }).thinking).toEqual({ type: 'enabled', budget_tokens: 3000 });
  });

  it('sends images as base64 or url sources and PDFs as documents', () => {
    const out = convert(JSON.parse(readFixture(DIR, 'images-files-cache.in.json')));
    const blocks = (out.messages as { content: Record<string, unknown>[] }[])[0].content;
    expect(blocks.map((b) => (b.source as { type: string } | undefined)?.type ?? b.type)).toEqual(['text', 'base64', 'url', 'base64']);
    expect(blocks[3].type).toBe('document');
  });

  it.each([
    ['n > 1', { messages: [user('x')], n: 2 }, 'n'],
    ['an unknown role', { messages: [{ role: 'critic', content: 'x' }] }, 'messages[0].role'],
    ['only a system message', { messages: [{ role: 'system', content: 'x' }] }, 'messages'],
    ['an audio part', { messages: [user([{ type: 'input_audio', input_audio: { data: 'x', format: 'wav' } }])] }, 'messages[0].content[0]'],
    ['an unsupported image type', { messages: [user([{ type: 'image_url', image_url: { url: 'data:image/tiff;base64,AAAA' } }])] }, 'messages[0].content[0]'],
    ['a tool message without its call id', { messages: [user('x'), { role: 'tool', content: 'r' }] }, 'messages[1].tool_call_id'],
    ['tool arguments that are not JSON', { messages: [user('x'), { role: 'assistant', tool_calls: [{ id: 'a', type: 'function', function: { name: 'f', arguments: '{' } }] }] }, 'messages[1].tool_calls[0].function.arguments'],
    ['a custom tool', { messages: [user('x')], tools: [{ type: 'custom', custom: { name: 'c' } }] }, 'tools[0]'],
    ['a strange tool_choice', { messages: [user('x')], tools: [{ type: 'function', function: { name: 'f' } }], tool_choice: 'sometimes' }, 'tool_choice'],
    ['a non-integer max_tokens', { messages: [user('x')], max_tokens: 1.5 }, 'max_tokens'],
    ['an unknown reasoning_effort', { messages: [user('x')], reasoning_effort: 'extreme' }, 'reasoning_effort'],
  ])('answers 400 for %s, naming the parameter', (_name, body, param) => rejects(body as Record<string, unknown>, param));
});
