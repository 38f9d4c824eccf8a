// Feeds raw upstream bytes to a stream meter through an SSE parser (the WHATWG event-stream grammar, reduced to what
// meters read: `event` and `data`); the bytes themselves pass on untouched. One small object per stream and no
// closures or per-stream decoder: a held stream costs the gateway its fields only.
import type { SseEvent, StreamMeter } from './stream-meter.ts';

const LF = 10;
const CR = 13;
const SPACE = 32;
const COLON = 58;

// Stateless: every call decodes whole sequences (the tap holds back a split one), and the BOM is the tap's to strip.
const utf8 = new TextDecoder('utf-8', { ignoreBOM: true });

export class SseTap {
  readonly meter: StreamMeter;
  /** Set when the meter threw on a malformed event: metering stops, bytes keep flowing. */
  failed = false;
  private readonly also: ((ev: SseEvent) => void) | undefined;
  /** Bytes of a UTF-8 sequence split by the chunk boundary, decoded with the next chunk. */
  private held: Uint8Array | undefined;
  /** Nothing decoded yet: a leading BOM is still to be stripped as bytes. */
  private bomBytes = true;
  /** No text parsed yet: the grammar's own leading BOM (decoded, or its bytes read as Latin-1) is still to be stripped. */
  private bomText = true;
  /** A line not yet ended by its terminator. */
  private partial = '';
  /** The previous chunk ended in CR: a LF opening the next one is the same terminator. */
  private skipLf = false;
  private data = '';
  private dataLines = 0;
  private event: string | undefined;

  /** `also` sees every event after the meter (converting routes translate them for the client). */
  constructor(meter: StreamMeter, also?: (ev: SseEvent) => void) {
    this.meter = meter;
    this.also = also;
  }

  push(chunk: Uint8Array): void {
    if (this.failed) return;
    try {
      this.feed(this.decode(chunk));
    } catch {
      this.failed = true;
    }
  }

  end(): void {
    if (this.failed) return;
    try {
      // What is held is an incomplete sequence (a replacement character, as a decoder's flush gives it). A final
      // event without its blank line still counts (some upstreams close right after the last data line).
      const rest = this.held ? this.text(this.held) : '';
      this.held = undefined;
      this.feed(rest + '\n\n');
    } catch {
      this.failed = true;
    }
  }

  /** The chunk's text up to its last whole UTF-8 sequence; a sequence the chunk cuts short waits for the next. */
  private decode(chunk: Uint8Array): string {
    let bytes = chunk;
    if (this.held) {
      const joined = new Uint8Array(this.held.length + chunk.length);
      joined.set(this.held);
      joined.set(chunk, this.held.length);
      bytes = joined;
      this.held = undefined;
    }
    const cut = splitAt(bytes);
    if (cut < bytes.length) {
      this.held = bytes.slice(cut);
      bytes = bytes.subarray(0, cut);
    }
    return bytes.length === 0 ? '' : this.text(bytes);
  }

  private text(bytes: Uint8Array): string {
    if (!this.bomBytes) return utf8.decode(bytes);
    // A decoder strips one BOM at the start of the stream (and the event-stream grammar one more, in feed).
    this.bomBytes = false;
    const bom = bytes.length >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf;
    return utf8.decode(bom ? bytes.subarray(3) : bytes);
  }

  /** Splits decoded text into lines (LF, CR or CRLF ends one) and applies each. */
  private feed(text: string): void {
    if (this.bomText) {
      // Held in `partial` (no line has started yet) while the text so far could still be the BOM's bytes as Latin-1.
      text = this.partial + text;
      this.partial = '';
      if (text === '' || text === '\xEF' || text === '\xEF\xBB') {
        this.partial = text;
        return;
      }
      this.bomText = false;
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
      else if (text.startsWith('\xEF\xBB\xBF')) text = text.slice(3);
    }
    let i = 0;
    const n = text.length;
    if (this.skipLf && n > 0) {
      this.skipLf = false;
      if (text.charCodeAt(0) === LF) i = 1;
    }
    while (i < n) {
      let end = i;
      while (end < n) {
        const c = text.charCodeAt(end);
        if (c === LF || c === CR) break;
        end++;
      }
      if (end === n) {
        this.partial += text.slice(i);
        return;
      }
      if (this.partial === '') this.line(text, i, end);
      else {
        const line = this.partial + text.slice(i, end);
        this.partial = '';
        this.line(line, 0, line.length);
      }
      if (this.failed) return;
      i = end + 1;
      if (text.charCodeAt(end) === CR) {
        if (i === n) this.skipLf = true;
        else if (text.charCodeAt(i) === LF) i++;
      }
    }
  }

  /** One line, `s[start, end)`: a blank one dispatches the event; `data` and `event` fields fill it; the rest is ignored. */
  private line(s: string, start: number, end: number): void {
    if (start === end) return this.dispatch();
    if (s.charCodeAt(start) === COLON) return; // a comment
    let colon = s.indexOf(':', start);
    if (colon === -1 || colon > end) colon = end;
    let from = colon + 1;
    if (from < end && s.charCodeAt(from) === SPACE) from++;
    if (from > end) from = end;
    const len = colon - start;
    if (len === 4 && s.startsWith('data', start)) {
      const value = s.slice(from, end);
      this.data = this.dataLines === 0 ? value : `${this.data}\n${value}`;
      this.dataLines++;
    } else if (len === 5 && s.startsWith('event', start)) {
      // An empty value resets the type to the default.
      this.event = s.slice(from, end) || undefined;
    }
  }

  private dispatch(): void {
    if (this.dataLines > 0) {
      const e: SseEvent = { event: this.event, data: this.data };
      try {
        this.meter.push(e);
        this.also?.(e);
      } catch {
        this.failed = true;
      }
    }
    this.data = '';
    this.dataLines = 0;
    this.event = undefined;
  }
}

/**
 * Where the chunk's trailing incomplete UTF-8 sequence starts (the length when there is none). Only a lead byte
 * (0xC0 and up) is looked for: none is ever a continuation, so the decoder is between sequences right before it and
 * decoding the two parts apart gives the same text as decoding them together.
 */
function splitAt(b: Uint8Array): number {
  const n = b.length;
  for (let k = 1; k <= 3 && k <= n; k++) {
    const c = b[n - k];
    if (c < 0x80) return n;
    if (c < 0xc0) continue;
    const need = c < 0xe0 ? 2 : c < 0xf0 ? 3 : c < 0xf8 ? 4 : 1;
    return k < need ? n - k : n;
  }
  return n;
}
