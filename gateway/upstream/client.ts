// The one upstream client: a single undici Agent, per-provider timeouts, provider credentials only.
import { Agent, Pool } from 'undici';
import type { Dispatcher } from 'undici';
import { GatewayError } from '../errors.ts';
import { ADAPTERS } from '../protocols/index.ts';
import type { Abortable } from './abort-switch.ts';
import type { RuntimeProvider } from '../snapshot/runtime.ts';
import type { Protocol } from '../snapshot/schema.ts';
import { ResponseHandler } from './response.ts';
import type { UpstreamResponse } from './response.ts';

export type { BodySink, UpstreamBody, UpstreamResponse } from './response.ts';

export interface UpstreamRequest {
  provider: RuntimeProvider;
  protocol: Protocol;
  /** Path appended to the provider's base URL, with its query string. */
  path: string;
  method?: 'POST' | 'GET';
  body: string | Buffer | NodeJS.ReadableStream;
  contentType?: string;
  /** Client headers the protocol allows through (anthropic-version, anthropic-beta, traceparent). */
  passHeaders?: Record<string, string>;
  signal: Abortable;
}

export class UpstreamClient {
  private readonly agent: Agent;
  private readonly connectTimeouts = new Map<string, number>();

  constructor() {
    this.agent = new Agent({
      // Each streaming completion holds a socket for its whole life, so this caps concurrent streams per
      // provider origin (more wait in undici's queue); HTTP/2 stays off until measured.
      connections: Number(process.env.TOLLGATE_UPSTREAM_CONNECTIONS) || 1024,
      pipelining: 1,
      keepAliveTimeout: 30_000,
      allowH2: false,
      factory: (origin, opts) => new Pool(origin, { ...(opts as Pool.Options), connect: { timeout: this.connectTimeouts.get(String(origin)) ?? 10_000 } }),
    });
  }

  /** Never throws: every failure is the promise's rejection. Not an async function: one promise per request, not two. */
  request(req: UpstreamRequest): Promise<UpstreamResponse> {
    try {
      const p = prepared(req.provider);
      const url = p.target(req.path);
      this.connectTimeouts.set(url.origin, req.provider.timeouts.connectMs);
      // The variable's name helps whoever runs the gateway; its value is never known here, let alone sent.
      if (req.provider.missingCredential) throw new GatewayError('upstream_unavailable', `Provider "${req.provider.id}" has no credential configured: the gateway's operator has to set the environment variable ${req.provider.missingCredential} and restart.`);
      const contentType = req.contentType ?? 'application/json';
      const headers = req.passHeaders ? upstreamHeaders(req, contentType) : p.headers(req.protocol, contentType, () => upstreamHeaders(req, contentType));
      return new Promise<UpstreamResponse>((resolve, reject) => {
        const handler = new ResponseHandler(req.signal, req.body, resolve, (err) => reject(upstreamError(err, req.provider.id, req.signal)));
        try {
          this.agent.dispatch(
            {
              origin: url.origin,
              path: url.path,
              method: req.method ?? 'POST',
              headers,
              body: req.body as Dispatcher.DispatchOptions['body'],
              headersTimeout: req.provider.timeouts.firstByteMs,
              bodyTimeout: req.provider.timeouts.idleMs,
            },
            handler,
          );
        } catch (err) {
          handler.fail(err as Error);
        }
      });
    } catch (err) {
      return Promise.reject(err as Error);
    }
  }

  /** Aborts every request in flight (shutdown past its drain budget); close() waits for them instead. */
  destroy(): Promise<void> {
    return this.agent.destroy();
  }

  close(): Promise<void> {
    return this.agent.close();
  }
}

function upstreamHeaders(req: UpstreamRequest, contentType: string): Record<string, string> {
  return {
    ...req.provider.headers,
    ...req.passHeaders,
    'content-type': contentType,
    // Usage must be readable: no compressed bodies from upstreams.
    'accept-encoding': 'identity',
    ...(req.provider.credential ? ADAPTERS[req.protocol].credentialHeaders(req.provider.credential) : undefined),
  };
}

/** What a provider's requests share, worked out once per provider object (a new snapshot brings new ones). */
interface Prepared {
  /** Origin and path of base URL + path (URL-normalised as `new URL` does). */
  target(path: string): { origin: string; path: string };
  /** The header set without pass-through headers, per protocol and content type (never mutated by undici). */
  headers(protocol: Protocol, contentType: string, make: () => Record<string, string>): Record<string, string>;
}

// Paths vary only with model names (Gemini): a small bound keeps a misbehaving client from growing it.
const MAX_CACHED_PATHS = 256;
const preparedFor = new WeakMap<RuntimeProvider, Prepared>();

function prepared(provider: RuntimeProvider): Prepared {
  let p = preparedFor.get(provider);
  if (p) return p;
  const targets = new Map<string, { origin: string; path: string }>();
  // Protocol, then content type: two lookups on constant strings, no key string built per request.
  const headerSets = new Map<Protocol, Map<string, Record<string, string>>>();
  p = {
    target(path) {
      let t = targets.get(path);
      if (!t) {
        const url = new URL(provider.baseUrl + path);
        t = { origin: url.origin, path: url.pathname + url.search };
        if (targets.size < MAX_CACHED_PATHS) targets.set(path, t);
      }
      return t;
    },
    headers(protocol, contentType, make) {
      let byType = headerSets.get(protocol);
      if (!byType) headerSets.set(protocol, (byType = new Map()));
      let h = byType.get(contentType);
      if (!h) byType.set(contentType, (h = Object.freeze(make()) as Record<string, string>));
      return h;
    },
  };
  preparedFor.set(provider, p);
  return p;
}

const TIMEOUT_CODES = new Set(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);

/** Maps a transport failure to 502 or 504; the message names the provider, never its address or credential. */
export function upstreamError(err: unknown, providerId: string, signal?: Abortable): GatewayError {
  if (err instanceof GatewayError) return err;
  const code = (err as { code?: string }).code ?? '';
  if (TIMEOUT_CODES.has(code) || err instanceof TimeoutError || (signal?.aborted && signal.reason instanceof TimeoutError)) {
    return new GatewayError('upstream_timeout', `The upstream provider "${providerId}" timed out.`);
  }
  return new GatewayError('upstream_unavailable', `The upstream provider "${providerId}" could not be reached.`);
}

export class TimeoutError extends Error {
  constructor() {
    super('total upstream timeout');
  }
}

export function isTimeout(err: unknown): boolean {
  return TIMEOUT_CODES.has((err as { code?: string })?.code ?? '') || err instanceof TimeoutError;
}
