// Drives a stream converter the way the relay does: raw upstream bytes, cut where the test says, through the real SSE
// parser into the upstream protocol's meter and then the converter; returns what the client would read and the usage billed.
import { SseTap } from '../../gateway/meter/sse-tap.ts';
import type { UsageReader } from '../../gateway/meter/stream-meter.ts';
import type { Usage } from '../../gateway/meter/usage.ts';
import type { StreamConverter } from '../../gateway/convert/converter.ts';

export interface StreamRun {
  out: string;
  usage: Usage;
  /** The meter saw the upstream's terminal event. */
  done: boolean;
}

/** `cuts`: byte offsets where the upstream's bytes are split into separate chunks (any order, duplicates allowed). */
export function runStream(bytes: Buffer, reader: UsageReader, converter: StreamConverter, cuts: number[] = []): StreamRun {
  let out = '';
  const tap = new SseTap(reader.stream(), (ev) => (out += converter.push(ev)));
  let at = 0;
  for (const cut of [...new Set(cuts)].filter((c) => c > 0 && c < bytes.length).sort((a, b) => a - b)) {
    tap.push(bytes.subarray(at, cut));
    at = cut;
  }
  tap.push(bytes.subarray(at));
  tap.end();
  out += converter.end();
  return { out, usage: tap.meter.usage(), done: tap.meter.done };
}
