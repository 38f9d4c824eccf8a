// An incremental multipart/form-data scanner that passes every byte through except the `model` field's value.
// It holds at most one part's headers and a few bytes of a possibly split boundary: file bodies are never buffered,
// so an upload of any size streams through in the chunks it arrived in (RFC 7578, RFC 2046 §5.1.1).
import { GatewayError } from '../errors.ts';

export interface RewriteOptions {
  /** Called once with the client's model name; returns the value to send upstream (may throw a GatewayError). */
  model(name: string): string;
  /** Image parts (`image`, `image[]`, `image[N]`) allowed. */
  maxImages: number;
  /** Small text fields whose values are also kept (still forwarded as they are), e.g. `stream`, `n`. */
  capture?: readonly string[];
}

const CRLF_CRLF = Buffer.from('\r\n\r\n');
const MAX_HEADER_BYTES = 16 * 1024;
const MAX_PREAMBLE_BYTES = 16 * 1024;
const MAX_MODEL_BYTES = 1024;
const MAX_CAPTURE_BYTES = 64;
const IMAGE_FIELD = /^image(\[\d*\])?$/;

type State = 'preamble' | 'headers' | 'body' | 'epilogue';

export class MultipartRewriter {
  private readonly opts: RewriteOptions;
  /** `\r\n--boundary`: what ends every part body. */
  private readonly delimiter: Buffer;
  private state: State = 'preamble';
  /** Bytes held across chunks: the preamble, a part's header section, or a possible delimiter prefix in a body. */
  private held: Buffer = Buffer.alloc(0);
  private part: 'model' | 'capture' | 'plain' = 'plain';
  private partName = '';
  private value: Buffer[] = [];
  private valueBytes = 0;
  private readonly emit: (b: Buffer) => void;
  images = 0;
  /** The client's model, once its part ended. */
  clientModel: string | undefined;
  /** Values of the `capture` fields seen so far. */
  readonly fields = new Map<string, string>();
  /** Length change of the body: upstream model bytes minus the client's. */
  delta = 0;

  constructor(boundary: string, opts: RewriteOptions, emit: (b: Buffer) => void) {
    this.opts = opts;
    this.delimiter = Buffer.from(`\r\n--${boundary}`, 'latin1');
    this.emit = emit;
  }

  get complete(): boolean {
    return this.state === 'epilogue';
  }

  write(chunk: Buffer): void {
    let buf = chunk;
    while (buf.length > 0) {
      switch (this.state) {
        case 'preamble':
          buf = this.preamble(buf);
          break;
        case 'headers':
          buf = this.headers(buf);
          break;
        case 'body':
          buf = this.body(buf);
          break;
        case 'epilogue':
          this.emit(buf);
          return;
      }
    }
  }

  /** The body ended: it must have reached its closing boundary. */
  end(): void {
    if (this.state !== 'epilogue') throw invalid('The multipart body ended before its closing boundary.');
  }

  // The first boundary may start the body (no CRLF before it): search as if a CRLF preceded the body.
  private preamble(chunk: Buffer): Buffer {
    const seen = Buffer.concat([this.held, chunk]);
    const virtual = Buffer.concat([Buffer.from('\r\n'), seen]);
    const at = virtual.indexOf(this.delimiter);
    if (at < 0) {
      if (seen.length > MAX_PREAMBLE_BYTES) throw invalid('The multipart body does not start with its boundary.');
      this.held = seen;
      return Buffer.alloc(0);
    }
    const end = at + this.delimiter.length - 2;
    this.emit(seen.subarray(0, end));
    this.held = Buffer.alloc(0);
    this.state = 'headers';
    return seen.subarray(end);
  }

  // After a delimiter: `--` closes the body; otherwise the rest of the boundary line, the headers and a blank line.
  private headers(chunk: Buffer): Buffer {
    const seen = this.held.length === 0 ? chunk : Buffer.concat([this.held, chunk]);
    if (seen.length < 2) {
      this.held = Buffer.from(seen);
      return Buffer.alloc(0);
    }
    if (seen[0] === 0x2d && seen[1] === 0x2d) {
      this.held = Buffer.alloc(0);
      this.state = 'epilogue';
      return seen;
    }
    const lineEnd = seen.indexOf('\r\n');
    const blank = lineEnd < 0 ? -1 : seen.indexOf(CRLF_CRLF, lineEnd);
    if (blank < 0) {
      if (seen.length > MAX_HEADER_BYTES) throw invalid('A multipart part has headers longer than 16 KiB.');
      // A copy: what is held must not pin a large chunk.
      this.held = Buffer.from(seen);
      return Buffer.alloc(0);
    }
    // Transport padding after the boundary is allowed (RFC 2046); anything else is not a delimiter line.
    if (!/^[ \t]*$/.test(seen.toString('latin1', 0, lineEnd))) throw invalid('A multipart boundary line has trailing characters.');
    const end = blank + 4;
    this.startPart(seen.toString('utf8', lineEnd + 2, blank));
    this.emit(seen.subarray(0, end));
    this.held = Buffer.alloc(0);
    this.state = 'body';
    return seen.subarray(end);
  }

  private startPart(headerText: string): void {
    const name = dispositionName(headerText);
    if (name === undefined) throw invalid('A multipart part has no Content-Disposition name.');
    this.partName = name;
    this.value = [];
    this.valueBytes = 0;
    if (IMAGE_FIELD.test(name) && ++this.images > this.opts.maxImages) {
      throw new GatewayError('invalid_request', `At most ${this.opts.maxImages} images may be edited in one request.`, { param: 'image' });
    }
    if (name === 'model') {
      // Two models would let a client be billed for one and served another (docs/contract.md, pass-through).
      if (this.clientModel !== undefined) throw new GatewayError('invalid_request', 'The request names "model" more than once.', { param: 'model' });
      this.part = 'model';
    } else this.part = this.opts.capture?.includes(name) ? 'capture' : 'plain';
  }

  // Part body: everything up to the next delimiter. Only bytes that could begin a split delimiter are held back.
  private body(chunk: Buffer): Buffer {
    const d = this.delimiter;
    if (this.held.length > 0) {
      const held = this.held;
      this.held = Buffer.alloc(0);
      // A tiny chunk: scan held + chunk together (both are shorter than a delimiter).
      if (chunk.length < d.length) return this.scan(Buffer.concat([held, chunk]));
      // A delimiter starting in the held bytes ends within the chunk's first d.length - 1 bytes.
      const head = Buffer.concat([held, chunk.subarray(0, d.length - 1)]);
      const at = head.indexOf(d);
      if (at >= 0 && at < held.length) {
        this.partBytes(head.subarray(0, at));
        this.endPart();
        return chunk.subarray(at + d.length - held.length);
      }
      this.partBytes(held);
    }
    return this.scan(chunk);
  }

  private scan(chunk: Buffer): Buffer {
    const d = this.delimiter;
    const at = chunk.indexOf(d);
    if (at >= 0) {
      this.partBytes(chunk.subarray(0, at));
      this.endPart();
      return chunk.subarray(at + d.length);
    }
    // No delimiter here: a tail that is a prefix of one is held. The delimiter has a single CR, its first byte.
    const cr = chunk.lastIndexOf(0x0d);
    const prefix = cr >= 0 && chunk.length - cr < d.length && d.subarray(0, chunk.length - cr).equals(chunk.subarray(cr));
    const keep = prefix ? cr : chunk.length;
    this.partBytes(chunk.subarray(0, keep));
    if (keep < chunk.length) this.held = Buffer.from(chunk.subarray(keep));
    return Buffer.alloc(0);
  }

  private partBytes(b: Buffer): void {
    if (b.length === 0) return;
    if (this.part === 'plain') return this.emit(b);
    this.valueBytes += b.length;
    if (this.part === 'model') {
      if (this.valueBytes > MAX_MODEL_BYTES) throw new GatewayError('invalid_request', 'The model field is too long.', { param: 'model' });
      this.value.push(Buffer.from(b));
      return;
    }
    if (this.valueBytes <= MAX_CAPTURE_BYTES) this.value.push(Buffer.from(b));
    this.emit(b);
  }

  private endPart(): void {
    if (this.part === 'model') {
      const raw = Buffer.concat(this.value);
      const name = raw.toString('utf8');
      if (name.trim() === '') throw new GatewayError('invalid_request', 'you must provide a model parameter', { param: 'model' });
      this.clientModel = name;
      const upstream = Buffer.from(this.opts.model(name));
      this.delta = upstream.length - raw.length;
      this.emit(upstream);
    } else if (this.part === 'capture' && this.valueBytes <= MAX_CAPTURE_BYTES) {
      this.fields.set(this.partName, Buffer.concat(this.value).toString('utf8'));
    }
    this.part = 'plain';
    this.value = [];
    this.emit(this.delimiter);
    this.state = 'headers';
  }
}

/** The `name` parameter of a part's Content-Disposition header (quoted or token form). */
export function dispositionName(headerText: string): string | undefined {
  for (const line of headerText.split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon < 0 || line.slice(0, colon).trim().toLowerCase() !== 'content-disposition') continue;
    const m = /;\s*name\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;\s]+))/i.exec(line.slice(colon + 1));
    if (!m) return undefined;
    return m[1] !== undefined ? m[1].replace(/\\(.)/g, '$1') : m[2];
  }
  return undefined;
}

/** The boundary of a multipart/form-data content type, or undefined when it is missing or malformed. */
export function multipartBoundary(contentType: string): string | undefined {
  if (!/^multipart\/form-data\s*(;|$)/i.test(contentType)) return undefined;
  const m = /;\s*boundary\s*=\s*(?:"([^"\r\n]{1,70})"|([^;\s"]{1,70}))\s*(;|$)/i.exec(contentType);
  return m ? (m[1] ?? m[2]) : undefined;
}

function invalid(message: string): GatewayError {
  return new GatewayError('invalid_request', message);
}
