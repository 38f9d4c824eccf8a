// Feeds raw upstream bytes to a stream meter through a real SSE parser; the bytes themselves pass on untouched.
import { createParser } from 'eventsource-parser';
import type { EventSourceParser } from 'eventsource-parser';
import type { SseEvent, StreamMeter } from './stream-meter.ts';

export class SseTap {
  private readonly decoder = new TextDecoder();
  private readonly parser: EventSourceParser;
  readonly meter: StreamMeter;
  /** Set when the meter threw on a malformed event: metering stops, bytes keep flowing. */
  failed = false;

  /** `also` sees every event after the meter (converting routes translate them for the client). */
  constructor(meter: StreamMeter, also?: (ev: SseEvent) => void) {
    this.meter = meter;
    this.parser = createParser({
      onEvent: (ev) => {
        if (this.failed) return;
        const e: SseEvent = { event: ev.event, data: ev.data };
        meter.push(e);
        also?.(e);
      },
    });
  }

  push(chunk: Uint8Array): void {
    if (this.failed) return;
    try {
      this.parser.feed(this.decoder.decode(chunk, { stream: true }));
    } catch {
      this.failed = true;
    }
  }

  end(): void {
    if (this.failed) return;
    try {
      // A final event without its blank line still counts (some upstreams close right after the last data line).
      this.parser.feed(this.decoder.decode() + '\n\n');
    } catch {
      this.failed = true;
    }
  }
}
