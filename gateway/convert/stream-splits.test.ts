// Property: however the upstream's bytes are split into chunks (inside an event, a UTF-8 character or a CR LF), the
// client sees the same chat events and the ledger the same usage as when they arrive in one piece.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { runStream } from '../../test/support/convert-stream.ts';
import { goldenInputs, readFixture } from '../../test/support/golden-files.ts';
import { anthropicReader } from '../meter/anthropic.ts';
import { geminiReader } from '../meter/gemini.ts';
import type { UsageReader } from '../meter/stream-meter.ts';
import type { StreamConverter } from './converter.ts';
import type { ChatContext } from './chat-completion.ts';
import { GeminiStreamToChat } from './chat-over-gemini/stream.ts';
import { MessagesStreamToChat } from './chat-over-anthropic/stream.ts';

const CTX: ChatContext = { id: 'chatcmpl-split', created: 1750000000, model: 'fallback-model' };

const SUITES: [string, UsageReader, () => StreamConverter][] = [
  ['convert/messages-stream-to-chat', anthropicReader, () => new MessagesStreamToChat(CTX)],
  ['convert/gemini-stream-to-chat', geminiReader, () => new GeminiStreamToChat(CTX)],
];

describe.each(SUITES)('%s under random splits', (dir, reader, converter) => {
  it.each(goldenInputs(dir, 'sse'))('%s', (name) => {
    const bytes = Buffer.from(readFixture(dir, `${name}.in.sse`));
    const whole = runStream(bytes, reader, converter());
    // Every single-byte split point, then random multi-way splits.
    for (let i = 1; i < bytes.length; i++) expect(runStream(bytes, reader, converter(), [i])).toEqual(whole);
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: bytes.length }), { maxLength: 40 }), (cuts) => {
        expect(runStream(bytes, reader, converter(), cuts)).toEqual(whole);
      }),
      { numRuns: 150 },
    );
  });
});
