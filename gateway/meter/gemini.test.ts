// The two Gemini rules, read from the fake upstream's recorded wire bytes: the §5 text mapping and the generateContent endpoint's output-only rule.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FIXTURE_DIR } from '../../test/upstream/fixtures.ts';
import { generateContentReader, generateContentUsage, geminiReader, geminiUsage } from './gemini.ts';
import { SseTap } from './sse-tap.ts';
import type { UsageReader } from './stream-meter.ts';

const json = (name: string) => JSON.parse(readFileSync(join(FIXTURE_DIR, 'gemini', name), 'utf8')) as Record<string, unknown>;
const sse = (name: string) => readFileSync(join(FIXTURE_DIR, 'gemini', name));

function meterStream(reader: UsageReader, bytes: Buffer, cuts: number[]) {
  const tap = new SseTap(reader.stream());
  let at = 0;
  for (const c of [...cuts, bytes.length]) {
    tap.push(bytes.subarray(at, c));
    at = c;
  }
  tap.end();
  return tap.meter;
}

describe('generateContent endpoint rule (output only)', () => {
  it('bills candidatesTokenCount only, keeps the prompt and total counts in the detail, counts the image', () => {
    const u = generateContentUsage(json('image.json'))!;
    expect(u).toMatchObject({ input: 0, cacheRead: 0, cacheWrite: 0, output: 1295, reasoning: 0, artifacts: 1, estimated: false });
    expect(u.detail).toMatchObject({ promptTokenCount: 3, totalTokenCount: 1298 });
  });

  it('reads a stream to its last usageMetadata, and is done at the chunk with finishReason', () => {
    const m = meterStream(generateContentReader, sse('text-stream-thinking.sse'), [10, 400, 401, 1000]);
    expect(m.done).toBe(true);
    expect(m.usage()).toMatchObject({ input: 0, output: 7, reasoning: 0, artifacts: 0, estimated: false });
    expect(m.usage().detail).toMatchObject({ thoughtsTokenCount: 9, totalTokenCount: 21 });
  });

  it('adds up images across chunks but never thought images', () => {
    const img = (thought: boolean) => ({ inlineData: { mimeType: 'image/png', data: 'AAAA' }, ...(thought ? { thought: true } : {}) });
    const chunk = (parts: unknown[], last: boolean) =>
      `data: ${JSON.stringify({ candidates: [{ content: { parts }, ...(last ? { finishReason: 'STOP' } : {}) }], usageMetadata: { promptTokenCount: 2, ...(last ? { candidatesTokenCount: 2600 } : {}) } })}\r\n\r\n`;
    const bytes = Buffer.from(chunk([img(true)], false) + chunk([img(false)], false) + chunk([{ text: 'two' }, img(false)], true));
    const m = meterStream(generateContentReader, bytes, [50]);
    expect(m.usage()).toMatchObject({ output: 2600, artifacts: 2 });
  });

  it('meters the JSON array that streamGenerateContent answers without alt=sse', () => {
    const chunks = sse('text-stream-thinking.sse')
      .toString()
      .split('\r\n\r\n')
      .filter((s) => s.startsWith('data: '))
      .map((s) => JSON.parse(s.slice(6)) as unknown);
    expect(generateContentReader.fromJson(chunks)).toMatchObject({ output: 7, estimated: false });
    expect(generateContentReader.fromJson([{ candidates: [] }])).toBeNull();
  });

  it('gives nothing when the upstream gave no usage (the relay estimates and flags it)', () => {
    expect(generateContentUsage({ candidates: [] })).toBeNull();
    expect(generateContentReader.stream().usage().estimated).toBe(true);
  });
});

describe('the §5 text mapping (gemini behind the chat entry)', () => {
  it('prompt minus cached is input, thoughts are part of output', () => {
    expect(geminiUsage(json('text.json'))).toMatchObject({ input: 8, cacheRead: 0, output: 9, reasoning: 0 });
    const m = meterStream(geminiReader, sse('text-stream-thinking.sse'), []);
    expect(m.usage()).toMatchObject({ input: 5, output: 16, reasoning: 9, estimated: false });
  });

  it('cached content is an explicit cache read', () => {
    const u = geminiUsage({ usageMetadata: { promptTokenCount: 100, cachedContentTokenCount: 60, candidatesTokenCount: 5 } })!;
    expect(u).toMatchObject({ input: 40, cacheRead: 60, output: 5, explicitCache: true });
  });
});
