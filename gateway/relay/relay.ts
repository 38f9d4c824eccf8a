// One upstream exchange: pick an upstream, send, meter, journal the ledger row, and only then let the last bytes go (docs/contract.md: pass-through, durability).
import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';
import type { FastifyReply } from 'fastify';
import type { ChargeContext } from '../billing/charge.ts';
import type { ResponseConverter } from '../convert/converter.ts';
import { charge } from '../billing/charge.ts';
import type { ErrorFamily } from '../errors.ts';
import { GatewayError } from '../errors.ts';
import type { LedgerRow } from '../ledger/row.ts';
import type { LedgerSink } from '../ledger/sink.ts';
import { unrecorded } from '../ledger/sink.ts';
import { topLevelValueFromEnd } from '../http/json-scan.ts';
import { replyError } from '../http/reply-error.ts';
import { parseJson } from '../json-guards.ts';
import { estimateUsage, streamUsage } from '../meter/estimate.ts';
import { SseTap } from '../meter/sse-tap.ts';
import type { UsageReader } from '../meter/stream-meter.ts';
import type { Usage } from '../meter/usage.ts';
import type { UpstreamTarget } from '../snapshot/runtime.ts';
import type { Protocol } from '../snapshot/schema.ts';
import type { BodySink, UpstreamBody, UpstreamClient, UpstreamResponse } from '../upstream/client.ts';
import { isTimeout, TimeoutError, upstreamError } from '../upstream/client.ts';
import { redactBody } from '../upstream/redact.ts';
import { AbortSwitch } from '../upstream/abort-switch.ts';
import { DeadlinesByDuration } from '../http/deadlines.ts';
import type { Exchange } from '../telemetry/exchange.ts';
import { telemetryOf } from '../telemetry/request-hook.ts';
import type { Governor, Ticket } from '../governance/governor.ts';
import { ExhaustedError, retryableStatus, sendWithRetries } from '../resilience/attempts.ts';
import type { OnAttempt } from '../resilience/attempts.ts';
import type { HealthRegistry, TargetHealth } from '../resilience/health.ts';
import { defaultRegistry } from '../resilience/registry.ts';
import { DrainCutError } from './in-flight.ts';
import type { InFlight } from './in-flight.ts';


export interface RelayDeps {
  upstream: UpstreamClient;
  ledger: LedgerSink;
  /** Every configured provider credential, blanked from upstream error bodies (absent: the call's targets' only). */
  credentials?: () => Iterable<string | undefined>;
  /** Rate limits and budgets (gateway/governance); absent in tests that build deps by hand. */
  governor?: Governor;
  /** Upstream target health (outlier ejection); the process-wide registry when left out. */
  health?: HealthRegistry;
  /** The gateway's open relays, so a shutdown past its drain budget can cut and still bill them. */
  inflight?: InFlight;
}

export interface RelayCall extends ChargeContext {
  family: ErrorFamily;
  protocol: Protocol;
  targets: UpstreamTarget[];
  /**
   * Builds the upstream path and body for one target (the upstream model id differs per target). A Readable body
   * (a streamed upload) can be sent once: such calls list a single target, so there is no failover.
   */
  build(target: UpstreamTarget): { path: string; body: string | Buffer | Readable; contentType?: string };
  passHeaders?: Record<string, string>;
  reader: UsageReader;
  requestBytes: number;
  /** How a mid-stream failure is told to the client in its protocol. */
  streamError(err: GatewayError): string;
  /** Present on converting routes: the client speaks another protocol than the upstream. */
  convert?: ResponseConverter;
  /** Pass-through streams: a clean end without the protocol's terminal event is told to the client with `streamError`. */
  requireTerminalEvent?: boolean;
  /** Pass-through routes that still answer upstream errors in their own shape (the unified chat entry). */
  convertError?: ResponseConverter['error'];
  /**
   * The call to make instead once this one's upstreams are exhausted or ejected (the model's next fallback, possibly
   * over another protocol); called only then, so the happy path builds nothing.
   */
  fallback?: () => RelayCall | undefined;
}

// Upstream headers worth returning; everything else (rate limits, org ids, cookies) describes the provider's account.
const PASS_RESPONSE_HEADERS = ['content-type', 'openai-processing-ms'];

export async function relay(deps: RelayDeps, first: RelayCall, reply: FastifyReply): Promise<void> {
  let call = first;
  // Governance: admitted (or refused with a 429, never sent upstream) before any upstream is contacted; settled in `finally`.
  const admission = deps.governor?.admit(call, reply);
  // In-process counters answer synchronously: no await (and no microtask) then.
  const ticket = admission instanceof Promise ? await admission : admission;
  const controller = new AbortSwitch();
  deps.inflight?.add(controller);
  const totalMs = call.targets[0].provider.timeouts.totalMs;
  const total = TOTAL_DEADLINES.add(totalMs, controller);
  const raw = reply.raw;
  const tel = telemetryOf(reply);
  let clientGone = false;
  // A cut at the drain budget counts as the client leaving: the relay bills what it relayed and writes nothing more.
  const gone = () => clientGone || (controller.aborted && controller.reason instanceof DrainCutError);
  const onClose = () => {
    if (raw.writableFinished) return;
    clientGone = true;
    controller.noMoreAttempts = true;
    if (current?.provider.abortOnDisconnect) controller.abort(new Error('client disconnected'));
  };
  raw.on('close', onClose);
  let current: UpstreamTarget | undefined;
  let health: TargetHealth | undefined;
  let attempts = 0;
  let detached = false;
  const onAttempt: OnAttempt = (t, h) => {
    current = t;
    health = h;
    attempts++;
  };
  try {
    // Retries, ejection and fallbacks happen here, all before a byte reaches the client (gateway/resilience/).
    const deadline = Date.now() + totalMs;
    let res: UpstreamResponse;
    for (;;) {
      try {
        res = await sendWithRetries(deps.upstream, deps.health ?? defaultRegistry, call.model.policy, call, controller, deadline, tel, onAttempt);
      } catch (err) {
        // Every attempt that threw has already given back its concurrency slot.
        health = undefined;
        const next = err instanceof ExhaustedError && !controller.aborted && !clientGone ? call.fallback?.() : undefined;
        if (!next) throw err;
        call = next;
        continue;
      }
      if (!retryableStatus(res.statusCode) || controller.aborted || clientGone) break;
      const next = call.fallback?.();
      if (!next) break;
      tel.upstreamDone();
      res.body.destroy();
      health?.release();
      health = undefined;
      call = next;
    }
    const target = current!;
    if (res.statusCode >= 400) return await upstreamErrorReply(deps, res, reply, call, target);
    const contentType = String(res.headers['content-type'] ?? '');
    if (!contentType.includes('text/event-stream')) await relayJson(deps, ticket, call, target, res, reply, gone, attempts);
    else if (res.streamedUpload) await new Promise<void>((resolve, reject) => relayStream(deps, ticket, call, target, res, reply, gone, controller, attempts, (ok, err) => (ok ? resolve() : reject(err as Error))));
    else {
      // A held stream does not keep this call's and its route's suspended frames (and their pending awaits) alive
      // for its whole life: the route returns now (the reply is hijacked) and the stream's end finishes the relay.
      // A streamed upload is still awaited: its route discards the upload only once the exchange is over.
      relayStream(deps, ticket, call, target, res, reply, gone, controller, attempts, (ok, err) => {
        if (!ok) fail(err);
        finish();
      });
      detached = true;
    }
  } catch (err) {
    fail(err);
  } finally {
    if (!detached) finish();
  }
  function fail(err: unknown): void {
    const gerr = err instanceof GatewayError ? err : upstreamError(err, current?.provider.id ?? 'unknown', controller);
    if (!reply.sent && !raw.headersSent) replyError(reply, call.family, gerr, call.requestId);
  }
  function finish(): void {
    total.cancel();
    deps.inflight?.delete(controller);
    health?.release();
    raw.off('close', onClose);
    tel.relayEnd();
    ticket?.finish();
  }
}

/**
 * The total timeout: one shared deadline list per duration (gateway/http/deadlines.ts), not a Node timer per request;
 * it fires at most 1/20 of `totalMs` (and at most 0.5 s) late.
 */
const TOTAL_DEADLINES = new DeadlinesByDuration<AbortSwitch>(timeUp);

function timeUp(controller: AbortSwitch): void {
  controller.abort(new TimeoutError());
}

async function relayJson(deps: RelayDeps, ticket: Ticket | undefined, call: RelayCall, target: UpstreamTarget, res: UpstreamResponse, reply: FastifyReply, gone: () => boolean, attempts: number): Promise<void> {
  const tel = telemetryOf(reply);
  let buf: Buffer;
  try {
    buf = await res.body.bytes(maxJsonBytes(call, target));
  } catch (err) {
    if (err instanceof GatewayError) throw err;
    // A deadline while the body is read is a timeout (504); a cut after the headers, a broken answer.
    if (!gone()) throw isTimeout(err) ? upstreamError(err, target.provider.id) : new GatewayError('upstream_unavailable', `The upstream provider "${target.provider.id}" broke off its answer.`);
    // The client left and the provider cut us off too: bill the request side we know.
    await bill(deps, ticket, tel, charge(call, target, estimateUsage(call.requestBytes, 0), undefined, attempts, res.statusCode, reply.elapsedTime));
    return;
  }
  // Pass-through answers go out as the upstream sent them: unless something needs the whole parsed body (a
  // converter, a recording span), only the usage member is located and parsed.
  const member = call.convert || tel.readsResponseBody() ? undefined : call.reader.usageMember;
  const parsed = (member !== undefined && startsAsObject(buf) && memberOnly(buf, member)) || parseJson(buf);
  if (parsed === undefined || parsed === null || typeof parsed !== 'object') {
    // A 200 that is not the protocol's JSON (a proxy's HTML page, a truncated body) is no answer: nothing is billed.
    const failure = new GatewayError('upstream_invalid_response', `The upstream provider "${target.provider.id}" answered ${res.statusCode} with a body that is not valid JSON.`);
    tel.upstreamDone(undefined, failure);
    // ...but when the broken body still states the provider's usage, the provider billed it: that spend is recorded.
    const spent = reportedUsage(call, buf);
    if (spent) await bill(deps, ticket, tel, unbilledAttempt(charge(call, target, spent, undefined, attempts), failure.kind));
    throw failure;
  }
  tel.upstreamDone(parsed);
  // Converted before anything is billed: a 200 the converter cannot read is no answer either, billed (at nothing)
  // only for the usage the provider reports it spent, like a body that is not JSON.
  let out = buf;
  if (call.convert) {
    try {
      out = Buffer.from(JSON.stringify(call.convert.json(parsed)));
    } catch (err) {
      const failure = err instanceof GatewayError ? err : new GatewayError('upstream_invalid_response', `The upstream provider "${target.provider.id}" answered ${res.statusCode} with a body this route cannot convert.`);
      const reported = call.reader.fromJson(parsed);
      if (reported && !reported.estimated) await bill(deps, ticket, tel, unbilledAttempt(charge(call, target, reported, undefined, attempts), failure.kind));
      throw failure;
    }
  }
  const usage: Usage = call.reader.fromJson(parsed) ?? estimateUsage(call.requestBytes, buf.length);
  const row = charge(call, target, usage, undefined, attempts, res.statusCode, reply.elapsedTime);
  await bill(deps, ticket, tel, row);
  if (gone()) return;
  reply
    .code(res.statusCode)
    .header('content-type', call.convert ? 'application/json' : (res.headers['content-type'] ?? 'application/json'))
    .header('x-tollgate-request-id', call.requestId)
    .header('x-tollgate-cost-points', row.costPoints);
  copyHeaders(res, reply);
  tel.setOverheadHeader(reply);
  // Not awaited: a reply is a thenable, and awaiting one that already ended costs two microtask turns for nothing
  // (no onSend hook delays a Buffer on these routes, so the answer is written by the time `send` returns).
  reply.send(out);
}

/** The usage a body that failed to parse whole still states in its top-level usage member (read from its tail). */
function reportedUsage(call: RelayCall, buf: Buffer): Usage | undefined {
  const member = call.reader.usageMember;
  if (member === undefined || !startsAsObject(buf)) return undefined;
  const partial = memberOnly(buf, member);
  const usage = partial ? call.reader.fromJson(partial) : null;
  // Only what the provider reported: an estimate of a failed answer would be a guess at money nobody saw.
  return usage && !usage.estimated ? usage : undefined;
}

/**
 * The row for an attempt the provider reported usage for but whose answer never reached the client: the tokens
 * as reported, cost 0 (the client is not charged for an answer it did not get; budgets do not move), and in
 * `detail` why and what it would have cost, so the spend upstream is visible in the ledger.
 */
export function unbilledAttempt(row: LedgerRow, reason: string): LedgerRow {
  return { ...row, costPoints: '0', originalCost: '0', detail: { failedAttempt: reason, unbilledCostPoints: row.costPoints, usage: row.detail ?? null } };
}

/**
 * Journals the row (rejects with `ledger_unavailable` when it is not recorded), then tells a governed request's ticket
 * the exact charge (an unrecorded answer is withheld, not billed) and telemetry.
 */
async function bill(deps: RelayDeps, ticket: Ticket | undefined, tel: Exchange, row: LedgerRow): Promise<void> {
  const at = performance.now();
  await deps.ledger.append(row);
  ticket?.charged(row);
  tel.billed(row, at);
}

/** Upstream JSON answers are read whole: past this size they are refused (502) and the connection dropped. */
export const DEFAULT_MAX_JSON_BYTES = 16 * 1024 * 1024;
export const DEFAULT_MAX_IMAGE_JSON_BYTES = 64 * 1024 * 1024;

function maxJsonBytes(call: RelayCall, target: UpstreamTarget): number {
  return target.provider.maxResponseBytes ?? (call.protocol === 'images' || call.billing !== 'text' ? DEFAULT_MAX_IMAGE_JSON_BYTES : DEFAULT_MAX_JSON_BYTES);
}

/** First non-blank byte is `{`: the tail-only usage read is trusted only for bodies that start as an object. */
function startsAsObject(buf: Buffer): boolean {
  for (let i = 0; i < buf.length; i++) {
    const c = buf[i];
    if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) continue;
    return c === 0x7b;
  }
  return false;
}

/** `{ [member]: value }` read from the body's tail, or undefined when the member is not found there. */
function memberOnly(buf: Buffer, member: string): Record<string, unknown> | undefined {
  const span = topLevelValueFromEnd(buf, member);
  if (!span) return undefined;
  try {
    return { [member]: JSON.parse(buf.toString('utf8', span.start, span.end)) as unknown };
  } catch {
    return undefined;
  }
}

/** How a streamed exchange ended for `relay`: `ok` false with what it failed on (told to the client in its shape). */
type StreamDone = (ok: boolean, err?: unknown) => void;

/**
 * Sends the upstream's event stream to the client as it comes, metering it on the way. Calls `done` once the stream
 * is over and its row journaled (or refused). While the stream is held, all it keeps is one StreamRelay: no closures,
 * no pending promises, and nothing of the route's parse of the request.
 */
function relayStream(deps: RelayDeps, ticket: Ticket | undefined, call: RelayCall, target: UpstreamTarget, res: UpstreamResponse, reply: FastifyReply, gone: () => boolean, controller: AbortSwitch, attempts: number, done: StreamDone): void {
  const raw: ServerResponse = reply.raw;
  reply.hijack();
  // Headers set on the reply before (the governor's rate limits) go out first, as fastify would have sent them.
  raw.writeHead(res.statusCode, {
    ...(reply.getHeaders() as OutgoingHttpHeaders),
    'content-type': call.convert ? 'text/event-stream; charset=utf-8' : String(res.headers['content-type']),
    'cache-control': 'no-cache',
    'x-accel-buffering': 'no',
    'x-tollgate-request-id': call.requestId,
  });
  // Read above and never again: a stream held open for minutes need not keep the upstream's headers alive.
  res.headers = {};
  // Nothing builds another upstream request once an answer streams: the route's closures (and through them its parse
  // of the client's body, as large as the prompt) need not live as long as the stream.
  call.build = spent;
  call.fallback = undefined;
  // The same for the client's body as fastify read it (telemetry reads it when an attempt starts, never after).
  (reply.request as { body?: unknown }).body = undefined;
  const s = new StreamRelay(deps, ticket, call, target, res, reply, gone, controller, attempts, done);
  res.body.pipe(s);
  // The head leaves with the first chunk. When none came with the upstream's head, it goes alone one turn of the event
  // loop later, so the client sees the stream open: a first chunk read meanwhile still takes it along in one write.
  if (!s.wrote) setImmediate(flushHead, s);
}

function flushHead(s: StreamRelay): void {
  s.flushHead();
}

function spent(): never {
  throw new Error('the call already streams its answer');
}

/**
 * One streamed answer: the body's sink. Chunks are relayed from undici's callback as they arrive (no stream object or
 * iterator per response); a full client socket pauses the upstream until it drains; the chunk with the terminal
 * event waits until its row is durable.
 */
class StreamRelay implements BodySink {
  /** Something went to the client: the response head went with it. */
  wrote = false;
  private readonly raw: ServerResponse;
  private readonly tel: Exchange;
  private readonly tap: SseTap;
  private readonly converter: ReturnType<ResponseConverter['stream']> | undefined;
  private readonly status: number;
  private readonly body: UpstreamBody;
  /** Converted text not yet written to the client. */
  private out = '';
  private bytes = 0;
  private billing: Promise<void> | undefined;
  private failure: GatewayError | undefined;

  private readonly deps: RelayDeps;
  private readonly ticket: Ticket | undefined;
  private readonly call: RelayCall;
  private readonly target: UpstreamTarget;
  private readonly reply: FastifyReply;
  private readonly gone: () => boolean;
  private readonly controller: AbortSwitch;
  private readonly attempts: number;
  private readonly done: StreamDone;

  constructor(deps: RelayDeps, ticket: Ticket | undefined, call: RelayCall, target: UpstreamTarget, res: UpstreamResponse, reply: FastifyReply, gone: () => boolean, controller: AbortSwitch, attempts: number, done: StreamDone) {
    this.deps = deps;
    this.ticket = ticket;
    this.call = call;
    this.target = target;
    this.reply = reply;
    this.gone = gone;
    this.controller = controller;
    this.attempts = attempts;
    this.done = done;
    this.raw = reply.raw;
    this.tel = telemetryOf(reply);
    this.status = res.statusCode;
    this.body = res.body;
    const converter = (this.converter = call.convert?.stream());
    this.tap = new SseTap(this.tel.meter(call.reader.stream()), converter ? (ev) => (this.out += converter.push(ev)) : undefined);
  }

  data(chunk: Buffer): boolean {
    if (this.bytes === 0) this.tel.firstByte();
    this.bytes += chunk.length;
    this.tap.push(chunk);
    if (!this.tap.meter.done || this.billing !== undefined) return this.pass(chunk);
    // The terminal event is in this chunk: the upstream waits, and its bytes leave once the row is durable.
    this.billing = this.record();
    this.billing.then(
      () => {
        if (this.pass(chunk)) this.body.resume();
      },
      (err: unknown) => {
        this.failure = unrecorded(err);
        this.body.destroy(this.failure);
      },
    );
    return false;
  }

  end(err?: Error): void {
    // Never inside the caller's frame (pipe() hands over a body that already ended synchronously).
    queueMicrotask(() =>
      this.finish(err).then(
        () => this.done(true),
        (e: unknown) => this.done(false, e),
      ),
    );
  }

  /** The head alone, when no chunk has taken it along yet and the response is still open. */
  flushHead(): void {
    if (this.wrote || this.raw.writableEnded || this.gone()) return;
    this.raw.flushHeaders();
    this.wrote = true;
    releaseSentHead(this.raw);
  }

  /** Sends what this chunk gave the client; false when the client socket is full (the upstream then waits). */
  private pass(chunk: Buffer): boolean {
    if (this.gone()) {
      // Read on to the end for the usage, but keep nothing of what nobody will receive.
      this.out = '';
      return true;
    }
    let ok: boolean;
    if (this.converter) {
      if (this.out === '') return true;
      const text = this.out;
      this.out = '';
      ok = this.raw.write(text);
    } else ok = this.raw.write(chunk);
    if (!this.wrote) {
      this.wrote = true;
      releaseSentHead(this.raw);
    }
    if (ok) return true;
    drained(this.raw, () => this.body.resume());
    return false;
  }

  /** Cut, aborted or ended without the final usage: what was reported so far, output at least the content relayed. */
  private record(): Promise<void> {
    const meter = this.tap.meter;
    const usage = streamUsage(meter.usage(), meter.done, meter, this.call.requestBytes);
    return bill(this.deps, this.ticket, this.tel, charge(this.call, this.target, usage, undefined, this.attempts, this.status, this.reply.elapsedTime));
  }

  private async finish(ended: Error | undefined): Promise<void> {
    const { call, target, raw, converter } = this;
    let failure = this.failure;
    if (failure === undefined) {
      if (ended) {
        // After the stream started, a cut is a broken stream, not an unreachable upstream; a deadline is a timeout.
        if (!(this.gone() && this.controller.aborted)) failure = isTimeout(ended) || this.controller.aborted ? upstreamError(ended, target.provider.id, this.controller) : new GatewayError('upstream_unavailable', `The upstream stream broke (provider "${target.provider.id}").`);
      } else {
        this.tap.end();
        if (call.requireTerminalEvent && !converter && !this.tap.meter.done) failure = new GatewayError('upstream_unavailable', `The upstream provider "${target.provider.id}" ended the stream before its final event.`);
      }
    }
    this.tel.upstreamDone(undefined, failure);
    try {
      // Already under way when the terminal event came (its chunk is sent first); else billed now.
      await (this.billing ??= this.record());
    } catch (err) {
      failure = unrecorded(err);
    }
    if (!this.gone()) {
      if (converter) {
        // What the converter still holds (e.g. closing events) goes out after the row is durable.
        const rest = this.out + converter.end();
        this.out = '';
        if (!failure && rest !== '') raw.write(rest);
      }
      if (failure) raw.write(call.streamError(failure));
      raw.end();
    }
  }
}

/**
 * Node keeps the response head it built as `_header` for the response's whole life (~0.3 KB here, in some thirty
 * concatenated pieces), but once the head has been sent only whether there is one is ever read again: it is then
 * swapped for a one-character string. A head still unsent (the client left first) is at least flattened into one piece.
 */
function releaseSentHead(raw: ServerResponse): void {
  const r = raw as unknown as { _header?: unknown; _headerSent?: unknown };
  if (typeof r._header !== 'string') return;
  if (r._headerSent === true) r._header = SENT_HEAD;
  else r._header.charCodeAt(0);
}

const SENT_HEAD = ' ';

/** Calls `then` once the client socket drained, or closed (the relay then reads on without writing). */
function drained(raw: ServerResponse, then: () => void): void {
  const done = () => {
    raw.off('drain', done);
    raw.off('close', done);
    then();
  };
  raw.on('drain', done);
  raw.on('close', done);
}

async function upstreamErrorReply(deps: RelayDeps, res: UpstreamResponse, reply: FastifyReply, call: RelayCall, target: UpstreamTarget): Promise<void> {
  // Pass-through routes return the upstream's error as it is, converting routes in the client's shape; neither is
  // billed. Whatever the route, a provider credential quoted in the body never leaves.
  const body = redactBody(await res.body.bytes(MAX_ERROR_BYTES), credentialsOf(deps, call));
  if (res.statusCode === 401) {
    // The upstream refused the gateway's own provider credential: not the client's problem, and not its business.
    reply.log.warn({ provider: target.provider.id, status: 401, body: body.toString('utf8', 0, Math.min(body.length, 2048)) }, 'upstream refused the provider credential');
    replyError(reply, call.family, new GatewayError('upstream_auth', `The upstream provider "${target.provider.id}" refused the gateway's provider credentials; the gateway's operator has to fix them.`), call.requestId);
    return;
  }
  if (isBlank(body)) {
    // Nothing to pass on: say so in the client's shape, with the upstream's status.
    replyError(reply, call.family, new GatewayError('upstream_unavailable', `The upstream provider "${target.provider.id}" answered ${res.statusCode} with no body.`, { status: res.statusCode }), call.requestId);
    return;
  }
  const c = call.convert ? call.convert.error(res.statusCode, body) : call.convertError?.(res.statusCode, body);
  if (c) {
    reply.code(c.status).header('content-type', c.contentType ?? 'application/json').header('x-tollgate-request-id', call.requestId);
    await reply.send(c.body);
    return;
  }
  reply.code(res.statusCode).header('content-type', res.headers['content-type'] ?? 'application/json').header('x-tollgate-request-id', call.requestId);
  await reply.send(body);
}

function* credentialsOf(deps: RelayDeps, call: RelayCall): Iterable<string | undefined> {
  for (const t of call.targets) yield t.provider.credential;
  if (deps.credentials) yield* deps.credentials();
}

/** Error bodies are small; one past this is not worth holding. */
const MAX_ERROR_BYTES = 1024 * 1024;

function isBlank(buf: Buffer): boolean {
  for (let i = 0; i < buf.length; i++) {
    const c = buf[i];
    if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) return false;
  }
  return true;
}

function copyHeaders(res: UpstreamResponse, reply: FastifyReply): void {
  for (const h of PASS_RESPONSE_HEADERS) {
    if (h === 'content-type') continue;
    const v = res.headers[h];
    if (v !== undefined) reply.header(h, v);
  }
  const upstreamId = res.headers['x-request-id'] ?? res.headers['request-id'];
  if (upstreamId !== undefined) reply.header('x-upstream-request-id', upstreamId);
}
