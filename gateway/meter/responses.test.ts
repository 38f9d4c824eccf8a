// Responses usage (docs/contract.md, usage), read from the fake upstream's recorded wire bytes.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FIXTURE_DIR } from '../../test/upstream/fixtures.ts';
import { responsesReader, responsesUsage } from './responses.ts';
import { SseTap } from './sse-tap.ts';

const file = (name: string) => readFileSync(join(FIXTURE_DIR, 'responses', name));

function meter(bytes: Buffer, chunk = 97) {
  const tap = new SseTap(responsesReader.stream());
  for (let i = 0; i < bytes.length; i += chunk) tap.push(bytes.subarray(i, i + chunk));
  tap.end();
  return tap.meter;
}

describe('responses usage', () => {
  it('input_tokens minus cached_tokens is input; cached is a cache read; reasoning is informational', () => {
    expect(responsesUsage({ input_tokens: 100, input_tokens_details: { cached_tokens: 64, cache_write_tokens: 0 }, output_tokens: 30, output_tokens_details: { reasoning_tokens: 12 }, total_tokens: 130 })).toMatchObject({
      input: 36,
      cacheRead: 64,
      cacheWrite: 0,
      output: 30,
      reasoning: 12,
      explicitCache: false,
      estimated: false,
    });
  });

  it('reads the JSON body', () => {
    expect(responsesReader.fromJson(JSON.parse(file('text.json').toString()))).toMatchObject({ input: 10, output: 9, cacheRead: 0 });
    expect(responsesReader.fromJson({ usage: null })).toBeNull();
  });

  it.each(['text-stream.sse', 'function-call-stream.sse'])('reads %s from response.completed, whatever the chunking', (name) => {
    const bytes = file(name);
    const completed = JSON.parse(
      bytes
        .toString()
        .split('\n')
        .find((l) => l.startsWith('data: {"type":"response.completed"'))!
        .slice(6),
    ).response.usage;
    for (const chunk of [1, 7, 97, bytes.length]) {
      const m = meter(bytes, chunk);
      expect(m.done).toBe(true);
      expect(m.usage()).toMatchObject({ input: completed.input_tokens, output: completed.output_tokens, estimated: false });
    }
  });

  it('finds the terminal event even when a relay dropped the event: lines', () => {
    const bytes = Buffer.from(file('text-stream.sse').toString().replace(/^event: .*\n/gm, ''));
    const m = meter(bytes);
    expect(m.done).toBe(true);
    expect(m.usage().estimated).toBe(false);
  });

  it('response.incomplete is terminal and carries usage', () => {
    const ev = { type: 'response.incomplete', response: { status: 'incomplete', usage: { input_tokens: 5, input_tokens_details: { cached_tokens: 0 }, output_tokens: 16, output_tokens_details: { reasoning_tokens: 0 } } } };
    const m = meter(Buffer.from(`event: response.incomplete\ndata: ${JSON.stringify(ev)}\n\n`));
    expect(m.done).toBe(true);
    expect(m.usage()).toMatchObject({ input: 5, output: 16 });
  });

  it('a stream cut before its terminal event has no usage', () => {
    const bytes = file('text-stream.sse');
    const m = meter(bytes.subarray(0, bytes.indexOf('event: response.completed')));
    expect(m.done).toBe(false);
    expect(m.usage().estimated).toBe(true);
  });
});
