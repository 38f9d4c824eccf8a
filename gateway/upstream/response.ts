// One upstream response as undici's dispatcher delivers it: status and headers, then body chunks handed straight
// to whoever consumes them (collected for JSON, relayed as they come for streams). No Readable, no async iterator,
// no copy of the raw headers: a stream held open for minutes keeps only what it needs.
import { addAbortListener } from 'node:events';
import type { IncomingHttpHeaders } from 'node:http';
import type { Dispatcher } from 'undici';

export interface UpstreamResponse {
  statusCode: number;
  headers: IncomingHttpHeaders;
  body: UpstreamBody;
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
  private queued: Buffer[] | undefined;
  private queuedBytes = 0;
  private sink: BodySink | undefined;
  private ended = false;
  private failure: Error | undefined;
  private paused = false;

  /** Streams the body into `sink`; chunks that arrived before are handed over first, synchronously. */
  pipe(sink: BodySink): void {
    if (this.sink) throw new Error('upstream body already consumed');
    this.sink = sink;
    const q = this.queued;
    this.queued = undefined;
    const waiting = this.paused;
    this.paused = false;
    if (q) for (const chunk of q) if (this.sink === sink) this.deliver(chunk);
    if (this.ended) this.finish();
    else if (waiting && !this.paused) this.controller?.resume();
  }

  /** Resumes an upstream paused by the sink (backpressure from the client). */
  resume(): void {
    if (!this.paused) return;
    this.paused = false;
    this.controller?.resume();
  }

  /** The whole body as one Buffer. */
  bytes(): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      let size = 0;
      this.pipe({
        data(chunk) {
          chunks.push(chunk);
          size += chunk.length;
          return true;
        },
        end(err) {
          if (err) reject(err);
          else resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size));
        },
      });
    });
  }

  /** The whole body in an ArrayBuffer of its own (never a view into a shared pool). */
  async arrayBuffer(): Promise<ArrayBuffer> {
    const b = await this.bytes();
    const out = new Uint8Array(b.length);
    out.set(b);
    return out.buffer;
  }

  async text(): Promise<string> {
    return (await this.bytes()).toString('utf8');
  }

  /** Stops reading and releases the upstream connection; the sink (now or attached later) ends with `err`. */
  destroy(err: Error = new Error('upstream body discarded')): void {
    if (this.sink === END_SINK) return;
    const c = this.controller;
    // Called from a sink means called from inside undici's parser: abort once it has returned.
    if (c && !this.ended) queueMicrotask(() => c.abort(err));
    this.ended = true;
    this.failure = err;
    this.queued = undefined;
    if (this.sink) this.finish();
  }

  // --- fed by the dispatch handler below

  attach(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
  }

  push(chunk: Buffer): boolean {
    if (this.ended) return true;
    if (!this.sink) {
      (this.queued ??= []).push(chunk);
      this.queuedBytes += chunk.length;
      // Nobody reads yet: hold the upstream rather than buffer without bound.
      if (this.queuedBytes < QUEUE_LIMIT) return true;
      this.paused = true;
      return false;
    }
    return this.deliver(chunk);
  }

  complete(): void {
    if (this.ended) return;
    this.ended = true;
    if (this.sink) this.finish();
  }

  fail(err: Error): void {
    if (this.ended) return;
    this.ended = true;
    this.failure = err;
    this.queued = undefined;
    if (this.sink) this.finish();
  }

  private deliver(chunk: Buffer): boolean {
    if (this.sink!.data(chunk) !== false) return true;
    this.paused = true;
    return false;
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
export class ResponseHandler implements Dispatcher.DispatchHandler {
  private readonly resolve: (res: UpstreamResponse) => void;
  private readonly reject: (err: Error) => void;
  private readonly signal: AbortSignal;
  private readonly requestBody: unknown;
  private controller: Dispatcher.DispatchController | undefined;
  private body: UpstreamBody | undefined;
  private settled = false;
  private unlisten: (() => void) | undefined;

  constructor(signal: AbortSignal, requestBody: unknown, resolve: (res: UpstreamResponse) => void, reject: (err: Error) => void) {
    this.signal = signal;
    this.requestBody = requestBody;
    this.resolve = resolve;
    this.reject = reject;
    if (!signal.aborted) {
      const d = addAbortListener(signal, () => this.abort());
      this.unlisten = () => d[Symbol.dispose]();
    }
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
    this.settled = true;
    this.resolve({ statusCode, headers, body });
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
    const rb = this.requestBody as { destroy?: (err: Error) => void; on?: (ev: string, fn: () => void) => void } | undefined;
    if (rb && typeof rb.destroy === 'function') {
      rb.on?.('error', noop);
      rb.destroy(e);
    }
    if (this.body) this.body.fail(e);
    else this.fail(e);
  }

  /** A synchronous dispatch failure (invalid options). */
  fail(err: Error): void {
    this.done();
    if (this.settled) return;
    this.settled = true;
    this.reject(err);
  }

  private abort(): void {
    const reason = reasonOf(this.signal);
    if (this.controller) this.controller.abort(reason);
    else this.fail(reason);
  }

  private done(): void {
    this.unlisten?.();
    this.unlisten = undefined;
  }
}

function reasonOf(signal: AbortSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new Error('request aborted');
}

function noop(): void {}
