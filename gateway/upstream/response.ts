// One upstream response as undici's dispatcher delivers it: status and headers, then body chunks handed straight
// to whoever consumes them (collected for JSON, relayed as they come for streams). No Readable, no async iterator,
// no copy of the raw headers: a stream held open for minutes keeps only what it needs.
import type { IncomingHttpHeaders } from 'node:http';
import type { Dispatcher } from 'undici';
import { GatewayError } from '../errors.ts';
import type { Abortable, AbortWatcher } from './abort-switch.ts';
import { AbortSwitch, watchAbort } from './abort-switch.ts';

export interface UpstreamResponse {
  statusCode: number;
  headers: IncomingHttpHeaders;
  body: UpstreamBody;
  /** The request body was a stream (an upload), which its route cleans up only once the exchange is over. */
  streamedUpload?: boolean;
}

/** Where a streamed body goes. */
export interface BodySink {
  /** One chunk; returning false pauses the upstream until `UpstreamBody.resume()`. */
  data(chunk: Buffer): boolean;
  /** Called once: the body ended cleanly (no argument) or failed. */
  end(err?: Error): void;
}

export class UpstreamBody {
  private controller: Dispatcher.DispatchController | undefined;
  /** Chunks nobody took yet: before `pipe()`, or while the sink is paused. */
  private queued: Buffer[] = [];
  private queuedBytes = 0;
  private sink: BodySink | undefined;
  /** The sink asked to wait (returned false) and `resume()` has not come yet. */
  private paused = false;
  private ended = false;
  private failure: Error | undefined;

  /** Streams the body into `sink`; chunks that arrived before are handed over first, synchronously. */
  pipe(sink: BodySink): void {
    if (this.sink) throw new Error('upstream body already consumed');
    this.sink = sink;
    this.flush();
  }

  /** Resumes a body paused by its sink (backpressure from the client). */
  resume(): void {
    if (!this.paused) return;
    this.paused = false;
    this.flush();
  }

  /**
   * The whole body as one Buffer. Past `limit` bytes the upstream connection is dropped and the promise rejects with
   * a 502 (`upstream_invalid_response`): an endless or huge answer must not take the process's memory.
   */
  bytes(limit = Infinity): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      let size = 0;
      this.pipe({
        data: (chunk) => {
          size += chunk.length;
          if (size > limit) {
            chunks.length = 0;
            this.destroy(new GatewayError('upstream_invalid_response', `The upstream answer exceeded ${limit} bytes and was dropped.`));
            return true;
          }
          chunks.push(chunk);
          return true;
        },
        end(err) {
          if (err) reject(err);
          else resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size));
        },
      });
    });
  }

  /** Stops reading and releases the upstream connection; the sink (now or attached later) ends with `err`. */
  destroy(err: Error = new Error('upstream body discarded')): void {
    if (this.sink === END_SINK) return;
    const c = this.controller;
    // Called from a sink means called from inside undici's parser: abort once it has returned.
    if (c && !this.ended) queueMicrotask(() => c.abort(err));
    this.end(err);
  }

  // --- fed by the dispatch handler below

  attach(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
  }

  /** One chunk from undici; false asks it to pause the upstream. */
  push(chunk: Buffer): boolean {
    if (this.ended) return true;
    if (this.sink && !this.paused && this.queued.length === 0) return this.deliver(chunk);
    this.queued.push(chunk);
    this.queuedBytes += chunk.length;
    // Nobody reads yet, or the reader waits: hold the upstream rather than buffer without bound.
    return !this.paused && this.queuedBytes < QUEUE_LIMIT;
  }

  complete(): void {
    if (this.ended) return;
    this.ended = true;
    if (this.sink && this.queued.length === 0) this.finish();
  }

  fail(err: Error): void {
    if (!this.ended) this.end(err);
  }

  /** A failure ends the body at once: chunks still queued are dropped, as a destroyed stream drops them. */
  private end(err: Error): void {
    this.ended = true;
    this.failure = err;
    this.queued = [];
    this.queuedBytes = 0;
    if (this.sink) this.finish();
  }

  private deliver(chunk: Buffer): boolean {
    if (this.sink!.data(chunk) !== false) return true;
    this.paused = true;
    return false;
  }

  /** Hands queued chunks to the sink until it pauses; then tells undici whether to read on. */
  private flush(): void {
    const sink = this.sink;
    while (this.queued.length > 0 && !this.paused && this.sink === sink) {
      const chunk = this.queued.shift()!;
      this.queuedBytes -= chunk.length;
      this.deliver(chunk);
    }
    if (this.sink !== sink) return;
    if (this.ended) {
      if (this.queued.length === 0) this.finish();
      return;
    }
    // Outside undici's callbacks its controller has to be told.
    if (this.paused) this.controller?.pause();
    else this.controller?.resume();
  }

  private finish(): void {
    const sink = this.sink!;
    if (sink === END_SINK) return;
    // Nothing of the consumer stays reachable from undici's request once it is done.
    this.sink = END_SINK;
    this.controller = undefined;
    sink.end(this.failure);
  }
}

const QUEUE_LIMIT = 64 * 1024;
const END_SINK: BodySink = { data: () => true, end() {} };

/**
 * undici handler for one request: resolves with the response at its headers, feeds the body after. The signal
 * aborts the request at any stage; its reason is what the caller (or the body's sink) sees.
 */
export class ResponseHandler implements Dispatcher.DispatchHandler, AbortWatcher {
  // Held for the life of a stream (one per open stream): settled promise callbacks are dropped once used.
  private resolve: ((res: UpstreamResponse) => void) | undefined;
  private reject: ((err: Error) => void) | undefined;
  private readonly signal: Abortable;
  /** A streamed upload, destroyed when the exchange fails; a string or Buffer body needs nothing. */
  private readonly upload: { destroy(err: Error): void; on?: (ev: string, fn: () => void) => void } | undefined;
  private controller: Dispatcher.DispatchController | undefined;
  private body: UpstreamBody | undefined;
  /** The relay's switch this handler watches (no closure then), or how to stop listening to another signal. */
  private watching: AbortSwitch | undefined;
  private unlisten: (() => void) | undefined;

  constructor(signal: Abortable, requestBody: unknown, resolve: (res: UpstreamResponse) => void, reject: (err: Error) => void) {
    this.signal = signal;
    const rb = requestBody as { destroy?: unknown } | null | undefined;
    this.upload = rb && typeof rb.destroy === 'function' ? (rb as ResponseHandler['upload']) : undefined;
    this.resolve = resolve;
    this.reject = reject;
    if (signal.aborted) return;
    if (signal instanceof AbortSwitch) {
      signal.watch(this);
      this.watching = signal;
    } else this.unlisten = watchAbort(signal, this);
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.signal.aborted) controller.abort(reasonOf(this.signal));
  }

  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders): void {
    // Informational answers (100 Continue) come before the real one.
    if (statusCode < 200) return;
    // The parsed headers are all anyone reads; undici's raw copy would otherwise live as long as the stream.
    controller.rawHeaders = null;
    const body = new UpstreamBody();
    body.attach(controller);
    this.body = body;
    const resolve = this.resolve;
    this.resolve = this.reject = undefined;
    resolve?.(this.upload ? { statusCode, headers, body, streamedUpload: true } : { statusCode, headers, body });
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.body && !this.body.push(chunk)) controller.pause();
  }

  onResponseEnd(): void {
    this.done();
    this.body?.complete();
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    this.done();
    // An abort we asked for surfaces as its reason, whatever undici wrapped it in.
    const e = this.signal.aborted ? reasonOf(this.signal) : err;
    const rb = this.upload;
    if (rb) {
      rb.on?.('error', noop);
      rb.destroy(e);
    }
    if (this.body) this.body.fail(e);
    else this.fail(e);
  }

  /** A synchronous dispatch failure (invalid options). */
  fail(err: Error): void {
    this.done();
    const reject = this.reject;
    this.resolve = this.reject = undefined;
    reject?.(err);
  }

  /** The signal aborted: the request stops at whatever stage it is. */
  onAbort(): void {
    this.watching = undefined;
    this.unlisten = undefined;
    const reason = reasonOf(this.signal);
    if (this.controller) this.controller.abort(reason);
    else this.fail(reason);
  }

  private done(): void {
    this.watching?.unwatch(this);
    this.watching = undefined;
    this.unlisten?.();
    this.unlisten = undefined;
  }
}

function reasonOf(signal: Abortable): Error {
  return signal.reason instanceof Error ? signal.reason : new Error('request aborted');
}

function noop(): void {}
