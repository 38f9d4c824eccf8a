// Fake upstream provider for tests, the demo and benchmarks: plain node:http, deterministic answers,
// byte-faithful SSE for OpenAI chat/responses/images, Anthropic messages, Gemini and Ark images.
//
// Scenarios are chosen per request, either by `metadata: {fake: "<scenario>", delay_ms?: N}` in the JSON
// body (OpenAI chat/responses, Anthropic) or by a `[fake:<scenario>]` / `[fake:<scenario>:<ms>]` marker
// anywhere in the body (works for every protocol, including Gemini, and survives protocol translation).
// `nextResponse()` scripts the raw answer to the next request instead.
import { createServer } from 'node:http';
import type { IncomingHttpHeaders, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { TINY_PNG, detectScenario, idBody } from './common.ts';
import type { FakeState, HandlerCtx, HeaderList, Plan, ScenarioInfo } from './common.ts';
import { CT_JSON, chatPlan, openaiHeaders } from './openai-chat.ts';
import { anthropicCountTokensPlan, anthropicPlan } from './anthropic.ts';
import { geminiPlan } from './gemini.ts';
import { responsesPlan } from './responses.ts';
import { arkImagesPlan, imageEditsPlan, imageGenerationsPlan } from './images.ts';
import { embeddingsPlan } from './embeddings.ts';

export type { Scenario } from './common.ts';
export { SCENARIOS, IMAGE_TOKENS, TINY_PNG, TINY_PNG_B64, tokensOf } from './common.ts';
export { chatPromptTokens } from './openai-chat.ts';
export { anthropicPromptTokens } from './anthropic.ts';
export { geminiPromptTokens } from './gemini.ts';
export { responsesPromptTokens } from './responses.ts';

export interface RecordedRequest {
  method: string;
  /** Path without the query string, e.g. /v1/chat/completions */
  path: string;
  /** Raw query string without `?` ('' when none), e.g. alt=sse */
  query: string;
  headers: IncomingHttpHeaders;
  /** Raw request body. */
  body: Buffer;
  /** Parsed JSON body, or undefined when the body is not JSON (multipart, empty, malformed). */
  json: unknown;
}

export interface ScriptedChunk {
  data: string | Buffer;
  /** Wait this long before writing this chunk. */
  delayMs?: number;
}

/** A scripted answer for the next (matching) request; it replaces the fake's own answer entirely. */
export interface ScriptedResponse {
  /** Only consume this script for requests whose path contains this string / matches this regexp. */
  path?: string | RegExp;
  /** Default 200. */
  status?: number;
  /** Extra or replacement headers. content-type defaults to application/json, or text/event-stream for chunks. */
  headers?: Record<string, string>;
  /** Delay before the status line and headers are sent. */
  delayMs?: number;
  /** Whole body: string/Buffer written as is, anything else JSON-encoded. */
  body?: unknown;
  /** Raw body chunks (e.g. SSE frames), written one by one with their delays. */
  chunks?: (string | Buffer | ScriptedChunk)[];
  /** Destroy the connection after the last chunk/body instead of ending the response cleanly. */
  abort?: boolean;
  /** Send the headers and then never anything else (until the client or close() ends it). */
  stall?: boolean;
  /** The body made from the request's headers (e.g. an error quoting the credential it was sent, as OpenAI's 401 does). */
  bodyFromHeaders?: (headers: IncomingHttpHeaders) => unknown;
  /** Take this turn in the queue but answer as the fake normally would (interleaves failures with successes). */
  pass?: boolean;
}

export interface FakeUpstreamOptions {
  /** 0 (default) picks a free port. */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  /** Unix-seconds clock for `created` fields; fix it for byte-exact fixtures. */
  now?: () => number;
  /** Record requests into `requests` (default true; turn off for long benchmarks). */
  record?: boolean;
  /** Delay added before every response's headers (benchmarks: simulated time to first byte). */
  firstByteDelayMs?: number;
  /** Delay between SSE frames of every stream (benchmarks: simulated token pace). */
  chunkDelayMs?: number;
}

export interface FakeUpstream {
  /** e.g. http://127.0.0.1:41234 (no trailing slash). Configure providers with `${url}/v1` etc. */
  url: string;
  port: number;
  /** Every request received, in arrival order. */
  requests: RecordedRequest[];
  /** Queue a scripted response for the next request (FIFO; `path` restricts which request takes it). */
  nextResponse(override: ScriptedResponse): void;
  /** Forget recorded requests, queued scripts and the Anthropic prompt cache. */
  reset(): void;
  close(): Promise<void>;
}

type PlanFn = (ctx: HandlerCtx) => Plan | Promise<Plan>;

const GEMINI_RE = /\/models\/([^/:]+):(generateContent|streamGenerateContent|countTokens)$/;

function route(method: string, path: string): PlanFn | undefined {
  if (method !== 'POST') return undefined;
  if (path.endsWith('/chat/completions')) return chatPlan;
  if (path.endsWith('/messages/count_tokens')) return anthropicCountTokensPlan;
  if (path.endsWith('/messages')) return anthropicPlan;
  if (GEMINI_RE.test(path)) return geminiPlan;
  if (path.endsWith('/responses')) return responsesPlan;
  if (path === '/api/v3/images/generations') return arkImagesPlan;
  if (path.endsWith('/images/generations')) return imageGenerationsPlan;
  if (path.endsWith('/images/edits')) return imageEditsPlan;
  if (path.endsWith('/embeddings')) return embeddingsPlan;
  return undefined;
}

const MODELS_BODY = JSON.stringify({
  object: 'list',
  data: ['gpt-4o-mini', 'gpt-5-nano', 'gpt-image-1', 'claude-sonnet-4-5', 'gemini-2.5-flash'].map((id) => ({
    id,
    object: 'model',
    created: 1700000000,
    owned_by: 'fake',
  })),
});

function notFound(path: string, seq: number): Plan {
  return {
    status: 404,
    headers: openaiHeaders(CT_JSON, seq),
    body: JSON.stringify({
      error: { message: `Invalid URL (${path})`, type: 'invalid_request_error', param: null, code: null },
    }),
  };
}

export async function startFakeUpstream(opts: FakeUpstreamOptions = {}): Promise<FakeUpstream> {
  const host = opts.host ?? '127.0.0.1';
  const record = opts.record !== false;
  const clock = opts.now ?? ((): number => Math.floor(Date.now() / 1000));
  const firstByteDelay = opts.firstByteDelayMs ?? 0;
  const chunkDelay = opts.chunkDelayMs ?? 0;
  const requests: RecordedRequest[] = [];
  let scripts: ScriptedResponse[] = [];
  const state: FakeState = { anthropicCache: new Set() };
  const timers = new Set<NodeJS.Timeout>();
  const sockets = new Set<Socket>();
  let seq = 0;
  let baseUrl = '';

  const sleep = (ms: number): Promise<void> =>
    new Promise((resolve) => {
      const t = setTimeout(() => {
        timers.delete(t);
        resolve();
      }, ms);
      timers.add(t);
    });

  function takeScript(path: string): ScriptedResponse | undefined {
    if (scripts.length === 0) return undefined;
    const i = scripts.findIndex(
      (s) => s.path === undefined || (typeof s.path === 'string' ? path.includes(s.path) : s.path.test(path)),
    );
    if (i < 0) return undefined;
    return scripts.splice(i, 1)[0];
  }

  async function sendScripted(res: ServerResponse, s: ScriptedResponse, n: number, reqHeaders: IncomingHttpHeaders): Promise<void> {
    if (s.bodyFromHeaders) s = { ...s, body: s.bodyFromHeaders(reqHeaders) };
    if (s.delayMs) await sleep(s.delayMs);
    if (res.destroyed) return;
    const headers: Record<string, string> = {
      'content-type': s.chunks ? 'text/event-stream; charset=utf-8' : 'application/json',
      'x-request-id': idBody('req_', n),
    };
    for (const [k, v] of Object.entries(s.headers ?? {})) headers[k.toLowerCase()] = v;
    res.writeHead(s.status ?? 200, headers);
    if (s.stall) {
      res.flushHeaders();
      return;
    }
    if (s.chunks) {
      res.flushHeaders();
      for (const c of s.chunks) {
        const chunk: ScriptedChunk = typeof c === 'string' || Buffer.isBuffer(c) ? { data: c } : c;
        if (chunk.delayMs) await sleep(chunk.delayMs);
        if (res.destroyed) return;
        res.write(chunk.data);
      }
    } else if (s.body !== undefined) {
      const b = typeof s.body === 'string' || Buffer.isBuffer(s.body) ? s.body : JSON.stringify(s.body);
      res.write(b);
    }
    if (s.abort) abortAfterFlush(res);
    else res.end();
  }

  function abortAfterFlush(res: ServerResponse): void {
    // an empty write's callback runs once everything queued before it has been flushed to the socket
    res.write('', () => res.destroy());
  }

  async function sendPlan(res: ServerResponse, plan: Plan, sc: ScenarioInfo): Promise<void> {
    let delay = firstByteDelay;
    if (sc.name === 'slow-first-byte') delay += sc.delayMs ?? 1000;
    if (delay > 0) await sleep(delay);
    if (res.destroyed) return;
    const headers: HeaderList = plan.headers;
    if (plan.body !== undefined) {
      const body = plan.body;
      if (sc.name === 'stall') {
        res.writeHead(plan.status, headers);
        res.flushHeaders();
        return;
      }
      if (sc.name === 'cut-stream' && plan.status === 200) {
        res.writeHead(plan.status, headers);
        res.write(body.slice(0, Math.floor(body.length / 2)));
        abortAfterFlush(res);
        return;
      }
      headers.push(['content-length', String(Buffer.byteLength(body))]);
      res.writeHead(plan.status, headers);
      res.end(body);
      return;
    }
    const events = plan.events ?? [];
    res.writeHead(plan.status, headers);
    if (sc.name === 'stall') {
      res.flushHeaders();
      return;
    }
    if (sc.name === 'cut-stream' || sc.name === 'mid-stream-error') {
      const n = plan.cutAfter ?? Math.min(3, events.length);
      const out = events.slice(0, n);
      if (sc.name === 'mid-stream-error' && plan.errorFrame) out.push(plan.errorFrame);
      const pace = chunkDelay;
      if (pace > 0) {
        for (const e of out) {
          await sleep(pace);
          if (res.destroyed) return;
          res.write(e);
        }
      } else {
        res.write(out.join(''));
      }
      if (sc.name === 'cut-stream') abortAfterFlush(res);
      else res.end();
      return;
    }
    const pace = sc.name === 'slow-stream' ? (sc.delayMs ?? 50) : chunkDelay;
    if (pace <= 0) {
      res.write(events.join(''));
      res.end();
      return;
    }
    res.flushHeaders();
    for (let i = 0; i < events.length; i++) {
      if (i > 0) await sleep(pace);
      if (res.destroyed) return;
      res.write(events[i]);
    }
    res.end();
  }

  async function handle(req: IncomingMessage, res: ServerResponse, raw: Buffer): Promise<void> {
    const n = ++seq;
    const fullUrl = req.url ?? '/';
    const q = fullUrl.indexOf('?');
    const path = q < 0 ? fullUrl : fullUrl.slice(0, q);
    const query = q < 0 ? '' : fullUrl.slice(q + 1);
    const method = req.method ?? 'GET';
    const contentType = req.headers['content-type'] ?? '';
    let json: unknown = undefined;
    if (raw.length > 0 && (contentType.includes('json') || raw[0] === 0x7b /* { */)) {
      try {
        json = JSON.parse(raw.toString('utf8'));
      } catch {
        json = undefined;
      }
    }
    if (record) requests.push({ method, path, query, headers: req.headers, body: raw, json });

    const script = takeScript(path);
    if (script && !script.pass) return sendScripted(res, script, n, req.headers);

    if (method === 'GET') {
      if (path === '/__fake/health') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{"status":"ok"}');
        return;
      }
      if (path.startsWith('/files/') && path.endsWith('.png')) {
        res.writeHead(200, { 'content-type': 'image/png', 'content-length': String(TINY_PNG.length) });
        res.end(TINY_PNG);
        return;
      }
      if (path.endsWith('/models')) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(MODELS_BODY);
        return;
      }
    }
    const fn = route(method, path);
    const scenario = detectScenario(raw, json);
    if (!fn) return sendPlan(res, notFound(path, n), scenario);
    const ctx: HandlerCtx = {
      path,
      query: new URLSearchParams(query),
      raw,
      json,
      contentType,
      scenario,
      seq: n,
      now: clock(),
      baseUrl,
      state,
    };
    let plan: Plan;
    try {
      plan = await fn(ctx);
    } catch (err) {
      plan = {
        status: 500,
        headers: openaiHeaders(CT_JSON, n),
        body: JSON.stringify({
          error: { message: 'fake upstream bug: ' + String(err), type: 'server_error', param: null, code: null },
        }),
      };
    }
    return sendPlan(res, plan, scenario);
  }

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
      handle(req, res, raw).catch((err: unknown) => {
        if (!res.headersSent) {
          res.writeHead(500, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ error: { message: String(err), type: 'server_error', param: null, code: null } }));
        } else res.destroy();
      });
    });
  });
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 70_000;
  server.requestTimeout = 0;
  server.on('connection', (s: Socket) => {
    s.setNoDelay(true);
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    // A benchmark opens thousands of streams at once: Node's default backlog (511) would drop some of them here.
    server.listen({ port: opts.port ?? 0, host, backlog: 4096 }, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const urlHost = host.includes(':') ? `[${host}]` : host === '0.0.0.0' ? '127.0.0.1' : host;
  baseUrl = `http://${urlHost}:${port}`;

  return {
    url: baseUrl,
    port,
    requests,
    nextResponse(override: ScriptedResponse): void {
      scripts.push(override);
    },
    reset(): void {
      requests.length = 0;
      scripts = [];
      state.anthropicCache.clear();
    },
    close(): Promise<void> {
      for (const t of timers) clearTimeout(t);
      timers.clear();
      return new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
        server.closeAllConnections();
      });
    },
  };
}
