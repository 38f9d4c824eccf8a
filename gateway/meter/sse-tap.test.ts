// The tap's own SSE parser and UTF-8 handling against the reference pair it replaced (a streaming TextDecoder feeding
// eventsource-parser): the same events for the same bytes, however the network cuts them.
import { createParser } from 'eventsource-parser';
import { describe, expect, it } from 'vitest';
import { SseTap } from './sse-tap.ts';
import type { SseEvent, StreamMeter } from './stream-meter.ts';

function recorder(): StreamMeter & { events: SseEvent[] } {
  const events: SseEvent[] = [];
  return { events, done: false, contentBytes: 0, countedBytes: 0, push: (ev) => void events.push(ev), usage: () => { throw new Error('unused'); } };
}

function viaTap(chunks: Uint8Array[]): SseEvent[] {
  const m = recorder();
  const tap = new SseTap(m);
  for (const c of chunks) tap.push(c);
  tap.end();
  return m.events;
}

function viaReference(chunks: Uint8Array[]): SseEvent[] {
  const events: SseEvent[] = [];
  const decoder = new TextDecoder();
  const parser = createParser({ onEvent: (ev) => void events.push({ event: ev.event, data: ev.data }) });
  for (const c of chunks) parser.feed(decoder.decode(c, { stream: true }));
  parser.feed(decoder.decode() + '\n\n');
  return events;
}

/** Deterministic pseudo-random numbers (a failure names its seed). */
function rng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 2 ** 32;
  };
}

const PIECES = ['data: ', 'data:', 'event: ', 'event:', 'id: 7', 'retry: 10', ': note', 'x-field: y', 'data', 'event', '\n', '\r', '\r\n', '\n\n', ' ', '{"a":1}', '[DONE]', 'é', '東京', '😀', '\uFEFF', 'ï»¿', 'text'];
const RAW = [[0xff], [0xc3], [0xe6, 0x9d], [0xf0, 0x9f, 0x98], [0x80], [0xed, 0xa0, 0x80], [0xef, 0xbb, 0xbf], [0xc0, 0xaf], [0xf4, 0x90, 0x80, 0x80]];

function randomStream(r: () => number): Uint8Array {
  const parts: number[] = [];
  if (r() < 0.1) parts.push(0xef, 0xbb, 0xbf);
  const n = 1 + Math.floor(r() * 60);
  for (let i = 0; i < n; i++) {
    if (r() < 0.1) parts.push(...RAW[Math.floor(r() * RAW.length)]);
    else parts.push(...Buffer.from(PIECES[Math.floor(r() * PIECES.length)]));
  }
  return Uint8Array.from(parts);
}

function cuts(r: () => number, bytes: Uint8Array): Uint8Array[] {
  const out: Uint8Array[] = [];
  let i = 0;
  while (i < bytes.length) {
    const len = r() < 0.2 ? 0 : 1 + Math.floor(r() * (r() < 0.5 ? 4 : 40));
    out.push(bytes.subarray(i, i + len));
    i += len;
  }
  return out;
}

describe('SseTap', () => {
  it('gives the events the streaming decoder and reference parser give, for random bytes and random cuts', () => {
    for (let seed = 1; seed <= 3000; seed++) {
      const r = rng(seed);
      const bytes = randomStream(r);
      // Node's streaming decoder also drops a U+FEFF right after a BOM split across chunks: its quirk, not kept.
      if (Buffer.from(bytes.subarray(0, 6)).equals(Buffer.from([0xef, 0xbb, 0xbf, 0xef, 0xbb, 0xbf]))) continue;
      const chunks = cuts(r, bytes);
      expect({ seed, events: viaTap(chunks) }).toEqual({ seed, events: viaReference(chunks) });
    }
  });

  it('reads a chat stream split inside a multi-byte character and a CRLF', () => {
    const bytes = Buffer.from('data: {"x":"東"}\r\n\r\nevent: done\r\ndata: [DONE]\r\n\r\n');
    const at = bytes.indexOf(Buffer.from('東')) + 1;
    const crlf = bytes.indexOf('\r\n') + 1;
    const events = viaTap([bytes.subarray(0, at), bytes.subarray(at, crlf), bytes.subarray(crlf)]);
    expect(events).toEqual([
      { event: undefined, data: '{"x":"東"}' },
      { event: 'done', data: '[DONE]' },
    ]);
  });

  it('strips one leading BOM, also when the chunks split it', () => {
    const bytes = Buffer.from('\uFEFFdata: a\n\n');
    expect(viaTap([bytes.subarray(0, 1), bytes.subarray(1, 2), bytes.subarray(2)])).toEqual([{ event: undefined, data: 'a' }]);
    expect(viaTap([Buffer.from('\uFEFF\uFEFFdata: b\n\n')])).toEqual([{ event: undefined, data: 'b' }]);
    expect(viaTap([Buffer.from('data: \uFEFFc\n\n')])).toEqual([{ event: undefined, data: '\uFEFFc' }]);
  });

  it('stops metering at a meter that throws, and reads nothing after', () => {
    const seen: string[] = [];
    const meter: StreamMeter = { done: false, contentBytes: 0, countedBytes: 0, push: (ev) => { seen.push(ev.data); if (ev.data === 'bad') throw new Error('malformed'); }, usage: () => { throw new Error('unused'); } };
    const tap = new SseTap(meter);
    tap.push(Buffer.from('data: ok\n\ndata: bad\n\ndata: later\n\n'));
    tap.push(Buffer.from('data: more\n\n'));
    tap.end();
    expect(tap.failed).toBe(true);
    expect(seen).toEqual(['ok', 'bad']);
  });
});
