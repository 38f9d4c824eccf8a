// A stream cut before the provider's final usage is billed from the content the client received: for every
// streaming family, a cut after N known words lands within 30 % of the words' true token count, never at
// Anthropic's placeholder 1 and never at the framing's bytes / 4. The truth here is o200k (GPT-4o/4.1/5): the
// densest of the common tokenizers, so UTF-8 bytes / 4 reads high against it (+20 to +28 % on this prose, which
// mixes in accents, CJK and numbers) and closer for Claude's and Gemini's, which need more tokens for the same text.
import { beforeAll, describe, expect, it } from 'vitest';
import { loadBpeCounter } from '../convert/bpe-count.ts';
import type { BpeCounter } from '../convert/bpe-count.ts';
import { anthropicReader } from './anthropic.ts';
import * as scan from './content-count.ts';
import { stringFieldBytes, utf8Bytes } from './content-count.ts';
import { streamUsage } from './estimate.ts';
import { geminiReader } from './gemini.ts';
import { openaiChatReader } from './openai-chat.ts';
import { responsesReader } from './responses.ts';
import { SseTap } from './sse-tap.ts';
import type { UsageReader } from './stream-meter.ts';

const PROSE =
  'The gateway relays each answer as the provider streams it, and bills the request once the final usage arrives. ' +
  'When a client leaves early, or the upstream connection breaks, the ledger still needs a fair figure: "what did the ' +
  'client actually receive?" Résumé writers, naïve café owners and 東京 travellers all count. Tokens are not words; ' +
  'numbers like 3.14159 and identifiers such as max_tokens split differently.\nA second paragraph follows here.';
const WORDS = PROSE.split(/(?<= )/);

let o200k: BpeCounter;
beforeAll(async () => {
  o200k = await loadBpeCounter('o200k_base');
}, 60_000);

/** The words the client received when the stream was cut after `n` of them. */
function firstWords(n: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < n; i++) out.push(WORDS[i % WORDS.length]);
  return out;
}

const sse = (data: unknown, event?: string) => `${event ? `event: ${event}\n` : ''}data: ${JSON.stringify(data)}\n\n`;

/** Upstream bytes of each family for the given content pieces, cut before the final usage. */
const FAMILIES: Record<string, { reader: UsageReader; cut: (words: string[]) => string; reported?: { input: number }; content?: (words: string[]) => string }> = {
  chat: {
    reader: openaiChatReader,
    cut: (words) =>
      sse({ id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o-mini', choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }] }) +
      words.map((w) => sse({ id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o-mini', system_fingerprint: 'fp_1', choices: [{ index: 0, delta: { content: w }, finish_reason: null }], usage: null })).join(''),
  },
  'chat tool call': {
    reader: openaiChatReader,
    content: (words) => JSON.stringify({ note: words.join('') }),
    cut: (words) => {
      const args = JSON.stringify({ note: words.join('') });
      const pieces = args.match(/[\s\S]{1,7}/g) ?? [];
      return (
        sse({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: { role: 'assistant', tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'save', arguments: '' } }] } }] }) +
        pieces.map((p) => sse({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: p } }] } }] })).join('')
      );
    },
  },
  messages: {
    reader: anthropicReader,
    reported: { input: 21 },
    cut: (words) =>
      sse({ type: 'message_start', message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-x', content: [], stop_reason: null, usage: { input_tokens: 21, output_tokens: 1 } } }, 'message_start') +
      sse({ type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '' } }, 'content_block_start') +
      sse({ type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: words[0] } }, 'content_block_delta') +
      sse({ type: 'content_block_delta', index: 0, delta: { type: 'signature_delta', signature: 'EqQBCkYIARgCIkB'.repeat(20) } }, 'content_block_delta') +
      sse({ type: 'content_block_stop', index: 0 }, 'content_block_stop') +
      sse({ type: 'content_block_start', index: 1, content_block: { type: 'text', text: '' } }, 'content_block_start') +
      words
        .slice(1)
        .map((w) => sse({ type: 'content_block_delta', index: 1, delta: { type: 'text_delta', text: w } }, 'content_block_delta'))
        .join(''),
  },
  responses: {
    reader: responsesReader,
    cut: (words) =>
      sse({ type: 'response.created', sequence_number: 0, response: { id: 'resp_1', object: 'response', status: 'in_progress', model: 'gpt-4o-mini', output: [], usage: null } }, 'response.created') +
      words.map((w, i) => sse({ type: 'response.output_text.delta', sequence_number: i + 1, item_id: 'msg_1', output_index: 0, content_index: 0, delta: w, logprobs: [] }, 'response.output_text.delta')).join('') +
      // The .done events repeat the text whole: not counted again.
      sse({ type: 'response.output_text.done', sequence_number: 999, item_id: 'msg_1', output_index: 0, content_index: 0, text: words.join(''), logprobs: [] }, 'response.output_text.done'),
  },
  gemini: {
    reader: geminiReader,
    cut: (words) =>
      words
        .map((w, i) => sse({ candidates: [{ content: { parts: i === 0 ? [{ text: w, thought: true }] : [{ text: w }], role: 'model' }, index: 0 }], modelVersion: 'gemini-2.5-flash', responseId: 'r1' }))
        .join(''),
  },
};

function cutUsage(reader: UsageReader, bytes: string, requestBytes: number) {
  const tap = new SseTap(reader.stream());
  const buf = Buffer.from(bytes);
  // Delivered in uneven pieces, as a network would.
  for (let i = 0; i < buf.length; i += 61) tap.push(buf.subarray(i, i + 61));
  return streamUsage(tap.meter.usage(), tap.meter.done, tap.meter, requestBytes);
}

describe.each(Object.entries(FAMILIES))('a %s stream cut mid-way', (_name, f) => {
  it.each([20, 80, 400])('after %i words is billed within 30 %% of their true token count, flagged estimated', (n) => {
    const words = firstWords(n);
    const truth = o200k.count(f.content ? f.content(words) : words.join(''));
    const bytes = f.cut(words);
    const u = cutUsage(f.reader, bytes, 400);
    expect(u.estimated).toBe(true);
    expect(u.output).toBeGreaterThan(1);
    expect(Math.abs(u.output - truth) / truth).toBeLessThan(0.3);
    // The framing is several times the content: its bytes / 4 would bill far more.
    expect(u.output).toBeLessThan(Buffer.byteLength(bytes) / 4 / 2);
    // Input as reported when the provider said it (message_start), else the prompt estimate (request bytes / 4).
    expect(u.input).toBe(f.reported?.input ?? 100);
  });
});

describe('streamUsage', () => {
  const bytes = (contentBytes: number, countedBytes = 0) => ({ contentBytes, countedBytes });
  const reported = { input: 10, output: 500, cacheRead: 2, cacheWrite: 0, reasoning: 0, artifacts: 0, explicitCache: true, estimated: false, detail: {} };
  it('a stream whose final usage came is billed as reported', () => {
    expect(streamUsage(reported, true, bytes(99_999), 400)).toBe(reported);
  });
  it('a cut keeps a larger reported output (the provider counted more than the relayed text shows)', () => {
    expect(streamUsage({ ...reported, estimated: true }, false, bytes(40), 400)).toMatchObject({ input: 10, cacheRead: 2, output: 500, estimated: true });
    expect(streamUsage(reported, false, bytes(4000), 400)).toMatchObject({ input: 10, output: 1000, estimated: true });
  });
  it('a cumulative count covers the content before it: only the content after it is estimated on top', () => {
    expect(streamUsage(reported, false, bytes(4000, 3600), 400)).toMatchObject({ output: 600, estimated: true });
    expect(streamUsage(reported, false, bytes(3600, 3600), 400)).toMatchObject({ output: 500, estimated: true });
  });
  it('a Gemini stream whose chunks each carry the cumulative count is billed that count when cut, not bytes / 4', () => {
    const words = firstWords(50);
    let count = 0;
    const bytes = words
      .map((w) => {
        count += o200k.count(w);
        return sse({ candidates: [{ content: { parts: [{ text: w }], role: 'model' }, index: 0 }], usageMetadata: { promptTokenCount: 9, candidatesTokenCount: count, totalTokenCount: 9 + count } });
      })
      .join('');
    expect(cutUsage(geminiReader, bytes, 400)).toMatchObject({ input: 9, output: count, estimated: true });
  });
  it('nothing reported and nothing relayed: the prompt estimate only', () => {
    expect(streamUsage({ ...reported, input: 0, output: 0, cacheRead: 0, detail: null, estimated: true }, false, bytes(0), 401)).toMatchObject({ input: 101, output: 0, estimated: true });
  });
  it('images counted without usage stay unguessed', () => {
    expect(streamUsage({ ...reported, input: 0, output: 0, cacheRead: 0, artifacts: 2, detail: null, estimated: true }, true, bytes(0), 401)).toMatchObject({ input: 0, output: 0, artifacts: 2, estimated: true });
  });
});

describe('stringFieldBytes', () => {
  it('counts decoded UTF-8 bytes of every value of the key, escapes as the character they stand for', () => {
    const v = 'a"b\\c\nd é 東 😀';
    expect(stringFieldBytes(JSON.stringify({ x: 1, text: v, y: { text: v } }), ['text'])).toBe(2 * utf8Bytes(v));
    expect(utf8Bytes(v)).toBe(Buffer.byteLength(v));
    // \u escapes (ASCII-only encoders) count as the characters they encode.
    const ascii = JSON.stringify({ text: v }).replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
    expect(stringFieldBytes(ascii, ['text'])).toBe(Buffer.byteLength(v));
  });
  it('ignores non-string values and keys quoted inside strings', () => {
    expect(stringFieldBytes('{"text":null,"other":"\\"text\\":\\"zzz\\""}', ['text'])).toBe(0);
    expect(stringFieldBytes('{"text":null,"other":"\\"text\\":\\"zzz\\"","context":"x","text":"ab"}', ['text'])).toBe(2);
    // A value the text quotes whole ("text":"…" inside a string) is escaped there and not counted twice.
    const quoted = JSON.stringify({ text: '{"text":"hello"}' });
    expect(stringFieldBytes(quoted, ['text'])).toBe(Buffer.byteLength('{"text":"hello"}'));
  });
});

describe('chunkFieldBytes (the chat chunk scan)', () => {
  const keys = ['content'];
  it('counts the content and tells whether usage holds an object, with or without spaces after colons', () => {
    expect(scan.chunkFieldBytes('{"choices":[{"delta":{"content":"héllo"}}],"usage":null}', keys, ['usage'])).toBe(6);
    expect(scan.memberWasObject).toBe(false);
    expect(scan.chunkFieldBytes('{"choices": [], "usage": {"prompt_tokens": 1}}', keys, ['usage'])).toBe(0);
    expect(scan.memberWasObject).toBe(true);
    expect(scan.chunkFieldBytes('{"choices": [{"delta": {"content": "ab"}}]}', keys, ['usage'])).toBe(2);
    expect(scan.memberWasObject).toBe(false);
  });
  it('text that quotes a usage key is neither a usage object nor counted twice', () => {
    const d = JSON.stringify({ choices: [{ delta: { content: '{"usage":{"x":1},"content":"y"}' } }], usage: null });
    expect(scan.chunkFieldBytes(d, keys, ['usage'])).toBe('{"usage":{"x":1},"content":"y"}'.length);
    expect(scan.memberWasObject).toBe(false);
  });
});
