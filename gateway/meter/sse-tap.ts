// Feeds raw upstream bytes to a stream meter through a real SSE parser; the bytes themselves pass on untouched.
import { createParser } from 'eventsource-parser';
import type { EventSourceParser } from 'eventsource-parser';
import type { StreamMeter } from './stream-meter.ts';

export class SseTap {
  private readonly decoder = new TextDecoder();
  private readonly parser: EventSourceParser;
  readonly meter: StreamMeter;
  /** Set when the meter threw on a malformed event: metering stops, bytes keep flowing. */
  failed = false;

  constructor(meter: StreamMeter) {
    this.meter = meter;
    this.parser = createParser({
      onEvent: (ev) => {
        if (!this.failed) meter.push({ event: ev.event, data: ev.data });
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
