// chat SSE -> messages SSE, fed exactly as the relay feeds it (raw bytes -> SseTap -> meter, then the converter).
// Golden fixtures, the Anthropic event grammar and shapes, and a property test over random splits of the bytes.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { openaiChatReader } from '../../meter/openai-chat.ts';
import { checkMessagesStream, parseSse } from '../../../test/support/anthropic-shapes.ts';
import { runStream } from '../../../test/support/convert-stream.ts';
import { expectGolden, goldenInputs, readFixture } from '../../../test/support/golden-files.ts';
import { ChatToMessagesStream } from './stream.ts';

const DIR = 'convert/chat-stream-to-messages';
const CTX = { stopSequences: ['\n\nHuman:', 'END'], fallbackId: 'req0001', fallbackModel: 'client-model' };

/** The relay's loop without sockets (raw bytes, cut at `cuts`, through the SseTap and meter, then the converter). */
function run(bytes: Buffer, cuts: number[] = []) {
  const r = runStream(bytes, openaiChatReader, new ChatToMessagesStream(CTX), cuts);
  return { text: r.out, usage: r.usage, done: r.done };
}

function input(name: string): Buffer {
  return Buffer.from(readFixture(DIR, `${name}.in.sse`), 'utf8');
}

const NAMES = goldenInputs(DIR, 'sse');
const GOOD = NAMES.filter((n) => !n.startsWith('bad-'));
const BAD = NAMES.filter((n) => n.startsWith('bad-'));

describe('chat stream to messages stream', () => {
  it.each(NAMES)('%s matches its golden file', (name) => {
    expectGolden(DIR, `${name}.out.sse`, run(input(name)).text);
  });

  it.each(GOOD)('%s is a complete, valid Anthropic event sequence', (name) => {
    expect(checkMessagesStream(parseSse(run(input(name)).text))).toEqual([]);
  });

  it.each(BAD)('%s ends with an Anthropic error event, after valid events only', (name) => {
    const events = parseSse(run(input(name)).text);
    expect(checkMessagesStream(events, { allowError: true })).toEqual([]);
    expect(events.at(-1)?.event).toBe('error');
    expect(events.filter((e) => e.event === 'error')).toHaveLength(1);
    expect(events.some((e) => e.event === 'message_stop')).toBe(false);
  });

  it('a tool call makes stop_reason tool_use even when the upstream finished with "stop"', () => {
    const delta = parseSse(run(input('tool-finish-stop')).text).find((e) => e.event === 'message_delta')!;
    expect(JSON.parse(delta.data).delta.stop_reason).toBe('tool_use');
  });

  it('parallel tool calls become consecutive tool_use blocks after the text block', () => {
    const starts = parseSse(run(input('parallel-tools')).text)
      .filter((e) => e.event === 'content_block_start')
      .map((e) => JSON.parse(e.data) as { index: number; content_block: { type: string; id?: string } });
    expect(starts.map((s) => [s.index, s.content_block.type, s.content_block.id])).toEqual([
      [0, 'text', undefined],
      [1, 'tool_use', 'call_A'],
      [2, 'tool_use', 'call_B'],
    ]);
  });

  it('message_delta usage equals what the meter bills', () => {
    for (const name of GOOD) {
      const r = run(input(name));
      const delta = parseSse(r.text).find((e) => e.event === 'message_delta')!;
      const u = JSON.parse(delta.data).usage as Record<string, number>;
      expect([u.input_tokens, u.cache_read_input_tokens, u.output_tokens], name).toEqual([r.usage.input, r.usage.cacheRead, r.usage.output]);
    }
  });

  it.each(NAMES)('%s: any split of the upstream bytes gives the same client events and the same usage', (name) => {
    const bytes = input(name);
    const whole = run(bytes);
    // Byte by byte (through every UTF-8 sequence and "\n\n"), every single split point, then random multi-way splits.
    expect(run(bytes, Array.from({ length: bytes.length }, (_, i) => i))).toEqual(whole);
    for (let i = 1; i < bytes.length; i++) expect(run(bytes, [i])).toEqual(whole);
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: bytes.length }), { maxLength: 60 }), (cuts) => {
        expect(run(bytes, cuts)).toEqual(whole);
      }),
      { numRuns: 150 },
    );
  });

  it('nothing is emitted after the stream closed (trailing chunks after [DONE] are ignored)', () => {
    const bytes = Buffer.concat([input('text-include-usage'), Buffer.from('data: {"choices":[{"index":0,"delta":{"content":"late"}}]}\n\n')]);
    expect(run(bytes).text).toBe(run(input('text-include-usage')).text);
  });

  it('[DONE] with nothing before it still gives a well-formed, empty message', () => {
    const events = parseSse(run(Buffer.from('data: [DONE]\n\n')).text);
    expect(checkMessagesStream(events)).toEqual([]);
    expect(JSON.parse(events[0].data).message).toMatchObject({ id: 'msg_req0001', model: 'client-model' });
  });
});
