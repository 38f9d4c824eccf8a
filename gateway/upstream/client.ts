// The one upstream client: a single undici Agent, per-provider timeouts, provider credentials only.
import { Agent, Pool } from 'undici';
import type { Dispatcher } from 'undici';
import { GatewayError } from '../errors.ts';
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
  signal: AbortSignal;
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

  async request(req: UpstreamRequest): Promise<UpstreamResponse> {
    const url = new URL(req.provider.baseUrl + req.path);
    this.connectTimeouts.set(url.origin, req.provider.timeouts.connectMs);
    if (req.provider.missingCredential) throw new GatewayError('upstream_unavailable', `Provider "${req.provider.id}" has no credential configured.`);
    const headers: Record<string, string> = {
      ...req.provider.headers,
      ...req.passHeaders,
      'content-type': req.contentType ?? 'application/json',
      // Usage must be readable: no compressed bodies from upstreams.
      'accept-encoding': 'identity',
      ...credentialHeaders(req.protocol, req.provider.credential),
    };
    try {
      return await new Promise<UpstreamResponse>((resolve, reject) => {
        const handler = new ResponseHandler(req.signal, req.body, resolve, reject);
        try {
          this.agent.dispatch(
            {
              origin: url.origin,
              path: url.pathname + url.search,
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
      throw upstreamError(err, req.provider.id, req.signal);
    }
  }

  close(): Promise<void> {
    return this.agent.close();
  }
}

function credentialHeaders(protocol: Protocol, credential: string | undefined): Record<string, string> {
  if (!credential) return {};
  if (protocol === 'anthropic') return { 'x-api-key': credential };
  if (protocol === 'gemini') return { 'x-goog-api-key': credential };
  return { authorization: `Bearer ${credential}` };
}

const TIMEOUT_CODES = new Set(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);

/** Maps a transport failure to 502 or 504; the message names the provider, never its address or credential. */
export function upstreamError(err: unknown, providerId: string, signal?: AbortSignal): GatewayError {
  if (err instanceof GatewayError) return err;
  const code = (err as { code?: string }).code ?? '';
  if (TIMEOUT_CODES.has(code) || (signal?.aborted && signal.reason instanceof TimeoutError)) {
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
