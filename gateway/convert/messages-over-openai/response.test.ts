// chat completion -> messages response: golden fixtures, each one a valid Anthropic message (reference §2.3).
import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../errors.ts';
import { openaiChatReader } from '../../meter/openai-chat.ts';
import { checkMessage } from '../../../test/support/anthropic-shapes.ts';
import { expectGolden, goldenInputs, readFixture } from '../../../test/support/golden-files.ts';
import { chatResponseToMessages, messagesUsageFromChat, stopReasonFromChat } from './response.ts';

const DIR = 'convert/chat-response-to-messages';
const CTX = { stopSequences: ['\n\nHuman:', 'END'], fallbackId: 'req0001', fallbackModel: 'client-model' };

describe('chat response to messages response', () => {
  it.each(goldenInputs(DIR, 'json'))('%s matches its golden file and the Anthropic message shape', (name) => {
    const chat = JSON.parse(readFixture(DIR, `${name}.in.json`)) as Record<string, unknown>;
    const message = chatResponseToMessages(chat, CTX);
    expect(checkMessage(message)).toEqual([]);
    expectGolden(DIR, `${name}.out.json`, JSON.stringify(message, null, 2) + '\n');
    // What the client sees adds up to what the meter bills.
    const billed = openaiChatReader.fromJson(chat);
    const u = message.usage as Record<string, number>;
    expect([u.input_tokens, u.cache_read_input_tokens, u.output_tokens]).toEqual(billed ? [billed.input, billed.cacheRead, billed.output] : [0, 0, 0]);
  });

  it('stop reasons: tool_use whenever a tool was called, except a cut at the limit', () => {
    expect(stopReasonFromChat('stop', false, null)).toBe('end_turn');
    expect(stopReasonFromChat('stop', true, null)).toBe('tool_use');
    expect(stopReasonFromChat('tool_calls', false, null)).toBe('tool_use');
    expect(stopReasonFromChat('length', true, null)).toBe('max_tokens');
    expect(stopReasonFromChat('content_filter', false, null)).toBe('refusal');
    expect(stopReasonFromChat('stop', false, 'END')).toBe('stop_sequence');
    expect(stopReasonFromChat(null, false, null)).toBe('end_turn');
  });

  it('usage: input is prompt minus cached, cached is the cache read, never negative', () => {
    expect(messagesUsageFromChat({ prompt_tokens: 100, completion_tokens: 7, prompt_tokens_details: { cached_tokens: 64 } })).toEqual({ input_tokens: 36, cache_creation_input_tokens: 0, cache_read_input_tokens: 64, output_tokens: 7 });
    expect(messagesUsageFromChat({ prompt_tokens: 10, completion_tokens: 1, prompt_tokens_details: { cached_tokens: 99 } }).input_tokens).toBe(0);
    expect(messagesUsageFromChat(undefined)).toEqual({ input_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 0 });
  });

  it('a body that is not a chat completion is an upstream error, not a crash', () => {
    for (const body of [null, 'text', { object: 'list' }, { choices: 'x' }]) {
      expect(() => chatResponseToMessages(body, CTX)).toThrow(GatewayError);
    }
  });
});
