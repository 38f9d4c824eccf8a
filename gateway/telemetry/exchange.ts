// Per-request telemetry: created when a request arrives, told by the relay what happens upstream, and closed when
// the response is done (normal, hijacked stream, or client gone). It records the metrics, ends the spans and writes
// the one access-log line. With tracing off it holds only numbers: no span, no attribute object.
import type { Attributes, Span } from '@opentelemetry/api';
import { defaultTextMapGetter, defaultTextMapSetter, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ServerResponse } from 'node:http';
import type { GatewayError } from '../errors.ts';
import type { LedgerRow } from '../ledger/row.ts';
import type { StreamMeter } from '../meter/stream-meter.ts';
import type { RuntimeKey, RuntimeModel, RuntimeProvider, UpstreamTarget } from '../snapshot/runtime.ts';
import type { Protocol } from '../snapshot/schema.ts';
import { routeUrl } from '../http/route-url.ts';
import { writeAccessLine } from './access-log.ts';
import { A, operationOf, providerNameOf, requestParams, responseFacts, StreamFacts } from './genai.ts';
import { parsedBodyOf } from './request-bodies.ts';
import type { Telemetry } from './telemetry.ts';

/** What the relay knows about the call (a subset of RelayCall, so this module does not import the relay). */
export interface ExchangeCall {
  key: RuntimeKey;
  model: RuntimeModel;
  clientModel: string;
  endpoint: string;
  stream: boolean;
  protocol: Protocol;
}

/** The relay's view; NOOP_EXCHANGE answers when telemetry is off. */
export interface Exchange {
  admitted(key: RuntimeKey): void;
  upstreamStart(call: ExchangeCall, target: UpstreamTarget): void;
  /** The headers to send upstream: with tracing on, traceparent names this attempt's client span. */
  upstreamHeaders(pass: Record<string, string> | undefined): Record<string, string> | undefined;
  upstreamAnswered(status: number): void;
  upstreamFailed(err: GatewayError): void;
  /** Whether upstreamDone wants the whole parsed JSON body (a recording span reads response facts from it). */
  readsResponseBody(): boolean;
  /** The upstream body ended (parsed JSON when there was one); `failure` when a stream broke. */
  upstreamDone(body?: unknown, failure?: GatewayError): void;
  firstByte(): void;
  /** Wraps a stream meter to read response facts beside it when the span records; else returns it as is. */
  meter(m: StreamMeter): StreamMeter;
  /**
   * The row is in the journal (the relay appended it, starting at `appendStart`, a performance.now()): kept for
   * metrics and the access log, and a span for the append when tracing.
   */
  billed(row: LedgerRow, appendStart: number): void;
  setOverheadHeader(reply: FastifyReply): void;
  /** The relay returned: a response closed before it (client gone) is finished now, with the row it recorded. */
  relayEnd(): void;
  /** Runs `fn` inside an internal child span of the request (e.g. the usage report's database query). */
  traced<T>(name: string, fn: () => Promise<T>): Promise<T>;
}

const HEALTH_ROUTES = new Set(['/healthz', '/readyz']);
const TRACEPARENT = /^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$/;
const hosts = new WeakMap<RuntimeProvider, { address: string; port: number }>();

export class LiveExchange implements Exchange {
  private readonly t: Telemetry;
  private readonly req: FastifyRequest;
  private readonly res: ServerResponse;
  private readonly start = performance.now();
  private readonly span: Span | undefined;
  private client: Span | undefined;
  private facts: StreamFacts | undefined;
  private key: RuntimeKey | undefined;
  private call: ExchangeCall | undefined;
  private target: UpstreamTarget | undefined;
  private attempts = 0;
  private attemptStart = 0;
  private upstreamOpen = false;
  private upstreamMs = 0;
  private firstByteAt = 0;
  private row: LedgerRow | undefined;
  private errorType: string | undefined;
  private relaying = false;
  private closedEarly = false;
  private finished = false;
  readonly onClose = (): void => {
    if (this.relaying) this.closedEarly = true;
    else this.safeFinish();
  };

  constructor(t: Telemetry, req: FastifyRequest, res: ServerResponse) {
    this.t = t;
    this.req = req;
    this.res = res;
    if (t.tracer) {
      const route = routeUrl(req);
      const parent = t.propagator.extract(ROOT_CONTEXT, req.headers, defaultTextMapGetter);
      const span = t.tracer.startSpan(route ? `${req.method} ${route}` : req.method, { kind: SpanKind.SERVER }, parent);
      if (span.isRecording()) {
        span.setAttributes({ 'http.request.method': req.method, 'url.path': req.url.split('?')[0], 'http.route': route ?? '', [A.requestId]: req.id });
      }
      this.span = span;
    }
  }

  admitted(key: RuntimeKey): void {
    this.key = key;
  }

  upstreamStart(call: ExchangeCall, target: UpstreamTarget): void {
    this.call = call;
    this.key = call.key;
    this.target = target;
    this.attempts++;
    this.relaying = true;
    this.attemptStart = performance.now();
    this.upstreamOpen = true;
    if (!this.span) return;
    this.client?.end();
    const op = operationOf(call.protocol);
    const client = this.t.tracer!.startSpan(`${op} ${call.clientModel}`, { kind: SpanKind.CLIENT }, trace.setSpan(ROOT_CONTEXT, this.span));
    this.client = client;
    if (!client.isRecording()) return;
    const { address, port } = hostOf(target.provider);
    const a: Attributes = {
      [A.operation]: op,
      [A.provider]: providerNameOf(call.protocol),
      [A.requestModel]: call.clientModel,
      [A.stream]: call.stream,
      [A.providerId]: target.provider.id,
      [A.upstreamModel]: target.model,
      [A.attempt]: this.attempts,
      'server.address': address,
      'server.port': port,
    };
    if (call.protocol === 'images') a[A.outputType] = 'image';
    const body = parsedBodyOf(this.req.body);
    if (body) requestParams(body, a);
    client.setAttributes(a);
  }

  upstreamHeaders(pass: Record<string, string> | undefined): Record<string, string> | undefined {
    if (!this.client) return pass;
    const carrier: Record<string, string> = { ...pass };
    delete carrier.traceparent;
    delete carrier.tracestate;
    this.t.propagator.inject(trace.setSpan(ROOT_CONTEXT, this.client), carrier, defaultTextMapSetter);
    return carrier;
  }

  upstreamAnswered(status: number): void {
    if (status >= 400) this.upstreamError(String(status));
    if (this.client?.isRecording()) this.client.setAttribute(A.statusCode, status);
  }

  upstreamFailed(err: GatewayError): void {
    this.closeAttempt();
    this.upstreamError(err.kind === 'upstream_timeout' ? 'timeout' : 'unavailable');
    this.endClient(err.message);
  }

  readsResponseBody(): boolean {
    return this.client?.isRecording() === true;
  }

  upstreamDone(body?: unknown, failure?: GatewayError): void {
    this.closeAttempt();
    if (failure) this.upstreamError(failure.kind === 'upstream_timeout' ? 'timeout' : 'stream_interrupted');
    const client = this.client;
    if (!client?.isRecording()) return;
    if (body !== undefined) responseFacts(body, client);
    this.facts?.flush();
  }

  firstByte(): void {
    if (this.firstByteAt === 0) this.firstByteAt = performance.now();
  }

  meter(m: StreamMeter): StreamMeter {
    if (!this.client?.isRecording() || this.call?.protocol === 'images') return m;
    return (this.facts = new StreamFacts(m, this.client));
  }

  billed(row: LedgerRow, appendStart: number): void {
    this.row = row;
    // Billed after the response closed (the client left before the upstream was called): still counted.
    if (this.finished && this.call) this.countRow(this.call, row);
    if (!this.span) return;
    const s = this.t.tracer!.startSpan('ledger journal append', { kind: SpanKind.INTERNAL, startTime: appendStart }, trace.setSpan(ROOT_CONTEXT, this.span));
    if (s.isRecording()) s.setAttributes({ [A.requestId]: row.requestId, 'tollgate.ledger.sink': 'journal' });
    s.end();
    const c = this.client;
    if (c?.isRecording()) {
      c.setAttributes({
        [A.inputTokens]: row.input + row.cacheRead + row.cacheWrite,
        [A.outputTokens]: row.output,
        [A.cacheReadTokens]: row.cacheRead,
        [A.cacheCreationTokens]: row.cacheWrite,
        [A.reasoningTokens]: row.reasoning,
        [A.estimated]: row.estimated,
        [A.artifacts]: row.artifacts,
        [A.costPoints]: row.costPoints,
      });
    }
  }

  setOverheadHeader(reply: FastifyReply): void {
    const now = performance.now();
    const upstream = this.upstreamMs + (this.upstreamOpen ? now - this.attemptStart : 0);
    reply.header('x-tollgate-overhead-ms', Math.max(0, now - this.start - upstream).toFixed(3));
  }

  relayEnd(): void {
    this.relaying = false;
    if (this.closedEarly) this.safeFinish();
  }

  // Runs from a socket event: a telemetry bug must cost a metric, never the process.
  private safeFinish(): void {
    try {
      this.finish();
    } catch (err) {
      this.t.log?.error({ err: (err as Error).message, reqId: this.req.id }, 'telemetry failed to finish a request');
    }
  }

  async traced<T>(name: string, fn: () => Promise<T>): Promise<T> {
    if (!this.span) return fn();
    const s = this.t.tracer!.startSpan(name, { kind: SpanKind.INTERNAL }, trace.setSpan(ROOT_CONTEXT, this.span));
    try {
      return await fn();
    } catch (err) {
      s.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).message });
      throw err;
    } finally {
      s.end();
    }
  }

  private closeAttempt(): void {
    if (!this.upstreamOpen) return;
    this.upstreamOpen = false;
    this.upstreamMs += performance.now() - this.attemptStart;
  }

  private upstreamError(kind: string): void {
    this.errorType = kind;
    if (this.t.enabled && this.target) this.t.instruments.upstreamErrors.add(1, { [A.providerId]: this.target.provider.id, [A.errorType]: kind });
  }

  private endClient(message?: string): void {
    const c = this.client;
    if (!c) return;
    this.client = undefined;
    if (message !== undefined) {
      c.setStatus({ code: SpanStatusCode.ERROR, message });
      if (this.errorType && c.isRecording()) c.setAttribute(A.errorType, this.errorType);
    }
    c.end();
  }

  /** The response is done: metrics, spans, access log. Runs once. */
  finish(): void {
    if (this.finished) return;
    this.finished = true;
    this.closeAttempt();
    const end = performance.now();
    const res = this.res;
    // 499: the client closed the connection before any response was sent.
    const status = res.headersSent ? res.statusCode : 499;
    const aborted = !res.writableFinished;
    const totalMs = end - this.start;
    const overheadMs = Math.max(0, totalMs - this.upstreamMs);
    const call = this.call;
    const row = this.row;
    const endpoint = call?.endpoint ?? routeUrl(this.req) ?? 'unmatched';
    const m = this.t.instruments;
    const r = requestSeries(endpoint, status);
    m.requests.add(1, r.key, r.attrs);
    let ttftMs: number | undefined;
    if (call) {
      const errorType = status >= 400 ? this.errorType : undefined;
      const { key, attrs } = durationSeries(modelSeries(call), status, errorType);
      m.requestDuration.record(totalMs / 1000, key, attrs);
      m.overhead.record(overheadMs / 1000, endpoint, r.endpointAttrs);
      if (call.stream && this.firstByteAt > 0) {
        ttftMs = this.firstByteAt - this.start;
        m.timeToFirstToken.record(ttftMs / 1000, key, attrs);
        if (row && row.output > 1) m.timePerOutputToken.record((end - this.firstByteAt) / 1000 / (row.output - 1), key, attrs);
      }
      if (row) this.countRow(call, row);
    }
    this.endSpans(status, endpoint, row);
    const log = this.t.log;
    const route = routeUrl(this.req);
    const level = route !== undefined && HEALTH_ROUTES.has(route) ? 'debug' : status >= 500 ? 'error' : 'info';
    if (log?.isLevelEnabled(level)) {
      writeAccessLine(log, level, {
        requestId: this.req.id,
        traceId: this.traceId(),
        method: this.req.method,
        endpoint,
        key: this.key,
        call,
        target: this.target,
        status,
        aborted,
        totalMs,
        upstreamMs: this.upstreamMs,
        overheadMs,
        ttftMs,
        attempts: this.attempts,
        errorType: this.errorType,
        row,
      });
    }
  }

  private countRow(call: ExchangeCall, row: LedgerRow): void {
    const m = this.t.instruments;
    const s = modelSeries(call);
    m.tokenUsage.record(row.input + row.cacheRead + row.cacheWrite, s.input.key, s.input.attrs);
    m.tokenUsage.record(row.output, s.output.key, s.output.attrs);
    // A float sum for dashboards; the exact decimal stays in the ledger.
    const c = costSeries(s, row.organization);
    m.costPoints.add(Number(row.costPoints), c.key, c.attrs);
  }

  private endSpans(status: number, endpoint: string, row: LedgerRow | undefined): void {
    const span = this.span;
    if (!span) return;
    this.endClient(this.call && this.errorType && status >= 400 ? this.errorType : undefined);
    if (span.isRecording()) {
      const a: Attributes = { [A.statusCode]: status, [A.endpoint]: endpoint };
      const key = this.key;
      if (key) {
        a[A.organization] = key.organization.id;
        a[A.project] = key.project;
        a[A.keyPrefix] = key.prefix;
      }
      if (this.call) {
        a[A.model] = this.call.model.id;
        a[A.requestModel] = this.call.clientModel;
      }
      if (row) a[A.costPoints] = row.costPoints;
      if (this.errorType && status >= 400) a[A.errorType] = this.errorType;
      span.setAttributes(a);
    }
    if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
    span.end();
  }

  private traceId(): string | undefined {
    if (this.span) return this.span.spanContext().traceId;
    const tp = this.req.headers.traceparent;
    if (typeof tp !== 'string') return undefined;
    return TRACEPARENT.exec(tp)?.[1];
  }
}

// Metric series keys and attribute builders repeat on every request of a route or model: each is built once (per
// model object, so a new snapshot starts afresh), not as strings and closures on every request.
interface Series {
  key: string;
  attrs: () => Attributes;
}

interface RequestSeries extends Series {
  endpointAttrs: () => Attributes;
}

interface ModelSeries {
  protocol: Protocol;
  modelId: string;
  input: Series;
  output: Series;
  /** Duration series by status, of answers without an error type... */
  durations: Map<number, Series>;
  /** ...and of those with one (`status\u0000errorType`). */
  failures: Map<string, Series>;
  costs: Map<string, Series>;
}

const requestSeriesOf = new Map<string, Map<number, RequestSeries>>();
const modelSeriesOf = new WeakMap<RuntimeModel, Partial<Record<Protocol, ModelSeries>>>();

function requestSeries(endpoint: string, status: number): RequestSeries {
  let byStatus = requestSeriesOf.get(endpoint);
  if (!byStatus) requestSeriesOf.set(endpoint, (byStatus = new Map()));
  let s = byStatus.get(status);
  if (!s) {
    const endpointAttrs = (): Attributes => ({ [A.endpoint]: endpoint });
    byStatus.set(status, (s = { key: `${endpoint}\u0000${status}`, attrs: () => ({ [A.endpoint]: endpoint, [A.statusCode]: status }), endpointAttrs }));
  }
  return s;
}

function modelSeries(call: ExchangeCall): ModelSeries {
  let byProtocol = modelSeriesOf.get(call.model);
  if (!byProtocol) modelSeriesOf.set(call.model, (byProtocol = {}));
  const protocol = call.protocol;
  let s = byProtocol[protocol];
  if (!s) {
    const modelId = call.model.id;
    const tokens = (type: 'input' | 'output'): Series => ({
      key: `${protocol}\u0000${modelId}\u0000${type}`,
      attrs: () => ({ [A.operation]: operationOf(protocol), [A.provider]: providerNameOf(protocol), [A.requestModel]: modelId, [A.tokenType]: type }),
    });
    byProtocol[protocol] = s = { protocol, modelId, input: tokens('input'), output: tokens('output'), durations: new Map(), failures: new Map(), costs: new Map() };
  }
  return s;
}

function durationSeries(m: ModelSeries, status: number, errorType: string | undefined): Series {
  const k = errorType ? `${status}\u0000${errorType}` : undefined;
  let s = k === undefined ? m.durations.get(status) : m.failures.get(k);
  if (!s) {
    const { protocol, modelId } = m;
    const attrs = (): Attributes => {
      const a: Attributes = { [A.operation]: operationOf(protocol), [A.provider]: providerNameOf(protocol), [A.requestModel]: modelId, [A.statusCode]: status };
      if (errorType) a[A.errorType] = errorType;
      return a;
    };
    s = { key: `d\u0000${protocol}\u0000${modelId}\u0000${status}\u0000${errorType ?? ''}`, attrs };
    if (k === undefined) m.durations.set(status, s);
    else m.failures.set(k, s);
  }
  return s;
}

function costSeries(m: ModelSeries, organization: string): Series {
  let s = m.costs.get(organization);
  if (!s) {
    const modelId = m.modelId;
    m.costs.set(organization, (s = { key: `${organization}\u0000${modelId}`, attrs: () => ({ [A.organization]: organization, [A.requestModel]: modelId }) }));
  }
  return s;
}

function hostOf(p: RuntimeProvider): { address: string; port: number } {
  let h = hosts.get(p);
  if (!h) {
    const u = new URL(p.baseUrl);
    h = { address: u.hostname, port: Number(u.port) || (u.protocol === 'https:' ? 443 : 80) };
    hosts.set(p, h);
  }
  return h;
}

/** What the relay calls when telemetry is off: nothing, at no cost. */
export const NOOP_EXCHANGE: Exchange = {
  admitted() {},
  upstreamStart() {},
  upstreamHeaders: (pass) => pass,
  upstreamAnswered() {},
  upstreamFailed() {},
  readsResponseBody: () => false,
  upstreamDone() {},
  firstByte() {},
  meter: (m) => m,
  billed() {},
  setOverheadHeader() {},
  relayEnd() {},
  traced: (_name, fn) => fn(),
};
