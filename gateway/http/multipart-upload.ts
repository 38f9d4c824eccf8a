// A multipart upload on its way upstream: read with backpressure, bytes counted as they arrive, `model` rewritten.
// Parts before the model wait in a spool (the upstream is not known yet); from the model on, bytes stream through.
import type { Readable } from 'node:stream';
import { Readable as ReadableStream } from 'node:stream';
import { GatewayError } from '../errors.ts';
import type { RewriteOptions } from './multipart-rewrite.ts';
import { MultipartRewriter } from './multipart-rewrite.ts';
import { Spool } from './spool.ts';

export interface UploadLimits {
  /** Largest body accepted, in bytes (checked against Content-Length first, then the running count). */
  maxBytes: number;
  /** Parts before the model are held in memory up to this many bytes, then in a temp file. */
  spoolThreshold: number;
  spoolDir: string;
}

export interface UploadOptions extends RewriteOptions {
  /** Runs once the whole body was read; may throw a GatewayError (checks on fields that can come last). */
  finish?(rewriter: MultipartRewriter): void;
}

const UPSTREAM_CHUNK = 64 * 1024;

export class MultipartUpload {
  readonly rewriter: MultipartRewriter;
  private readonly source: Readable;
  private readonly limits: UploadLimits;
  private readonly opts: UploadOptions;
  private readonly spool: Spool;
  private out: Buffer[] = [];
  private received = 0;
  private discarded = false;

  constructor(source: Readable, boundary: string, limits: UploadLimits, opts: UploadOptions) {
    this.source = source;
    this.limits = limits;
    this.opts = opts;
    this.spool = new Spool(limits.spoolThreshold, limits.spoolDir);
    this.rewriter = new MultipartRewriter(boundary, opts, (b) => this.out.push(b));
  }

  /** Bytes received from the client so far. */
  get bytesReceived(): number {
    return this.received;
  }

  /** Whether the bytes before the model went to disk (for tests and logs). */
  get spooledToDisk(): boolean {
    return this.spool.onDisk;
  }

  /** Reads until the model part ended (its hook has chosen the upstream); what came before waits in the spool. */
  async readUntilModel(): Promise<void> {
    while (this.rewriter.clientModel === undefined) {
      const chunk = await this.next();
      if (chunk === null) {
        this.rewriter.end();
        throw new GatewayError('invalid_request', 'you must provide a model parameter', { param: 'model' });
      }
      this.rewriter.write(chunk);
      await this.spool.write(this.take());
    }
  }

  /** The upstream body: the spooled bytes, then the rest of the upload as it arrives (pulled, so backpressure holds). */
  body(): Readable {
    return ReadableStream.from(this.rest(), { objectMode: false, highWaterMark: UPSTREAM_CHUNK });
  }

  // The last piece is held back until the whole body passed every check: the upstream never sees a complete
  // body that the gateway then refuses (it would answer, and bill, a request the client was told failed).
  private async *rest(): AsyncGenerator<Buffer> {
    let tail: Buffer | undefined;
    for await (const piece of this.pieces()) {
      if (tail) yield tail;
      tail = piece;
    }
    this.opts.finish?.(this.rewriter);
    if (tail) yield tail;
  }

  private async *pieces(): AsyncGenerator<Buffer> {
    yield* this.spool.replay();
    await this.spool.close();
    for (;;) {
      const chunk = await this.next();
      if (chunk === null) break;
      this.rewriter.write(chunk);
      yield* this.take();
    }
    this.rewriter.end();
  }

  private take(): Buffer[] {
    const out = this.out;
    this.out = [];
    return out;
  }

  /** Stops reading for the upstream: the rest of the client's body is read and dropped (so it can read our answer). */
  async discard(): Promise<void> {
    if (this.discarded) return;
    this.discarded = true;
    await this.spool.close();
    drain(this.source, this.limits.maxBytes * 2);
  }

  private async next(): Promise<Buffer | null> {
    for (;;) {
      if (this.discarded) throw new GatewayError('invalid_request', 'The upload was abandoned.');
      const c = this.source.read() as Buffer | null;
      if (c !== null) {
        this.received += c.length;
        if (this.received > this.limits.maxBytes) throw tooLarge(this.limits.maxBytes);
        return c;
      }
      if (this.source.readableEnded) return null;
      await readable(this.source);
    }
  }
}

/** Reads and drops the rest of a request body, so the client can finish sending and read the answer; past `cap` bytes it is cut. */
export function drain(src: Readable, cap: number): void {
  if (src.readableEnded || src.destroyed) return;
  let left = cap;
  src.on('data', (c: Buffer) => {
    left -= c.length;
    if (left < 0) src.destroy();
  });
  src.on('error', () => {});
  src.resume();
}

export function tooLarge(maxBytes: number): GatewayError {
  return new GatewayError('request_too_large', `The request body is too large (limit ${maxBytes} bytes).`);
}

/** Resolves when the stream has data or ended; rejects when it failed or closed early (the client went away). */
function readable(src: Readable): Promise<void> {
  return new Promise((resolve, reject) => {
    const done = (err?: Error) => {
      src.off('readable', onReadable);
      src.off('end', onEnd);
      src.off('error', onError);
      src.off('close', onClose);
      if (err) reject(err);
      else resolve();
    };
    const onReadable = () => done();
    const onEnd = () => done();
    const onError = (err: Error) => done(new GatewayError('invalid_request', `The upload failed: ${err.message}`));
    const onClose = () => done(src.readableEnded ? undefined : new GatewayError('invalid_request', 'The client closed the upload before it ended.'));
    src.on('readable', onReadable);
    src.on('end', onEnd);
    src.on('error', onError);
    src.on('close', onClose);
  });
}
