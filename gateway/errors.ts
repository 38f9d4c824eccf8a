// Every error the gateway itself raises, declared once, rendered in each protocol family's shape (docs/contract.md, errors).
import type { ChatErrorBody, CompatErrorBody, GeminiErrorBody, MessagesErrorBody, ProblemBody } from './openapi/error-bodies.ts';

export type ErrorKind =
  | 'invalid_api_key'
  | 'model_not_found'
  | 'model_not_permitted'
  | 'unsupported_protocol'
  | 'invalid_request'
  | 'request_too_large'
  | 'rate_limited'
  | 'quota_exceeded'
  | 'upstream_unavailable'
  | 'upstream_timeout'
  | 'upstream_auth'
  | 'request_timeout'
  | 'method_not_allowed'
  | 'headers_too_large'
  | 'shutting_down'
  | 'upstream_invalid_response'
  | 'ledger_unavailable'
  | 'not_ready'
  | 'not_found'
  | 'internal';

export type ErrorFamily = 'chat' | 'compat' | 'messages' | 'gemini' | 'problem';

interface KindSpec {
  status: number;
  chatType: string;
  code: string;
  messagesType: string;
  googleStatus: string;
  compatType: string;
}

const KINDS: Record<ErrorKind, KindSpec> = {
  invalid_api_key: { status: 401, chatType: 'invalid_request_error', code: 'invalid_api_key', messagesType: 'authentication_error', googleStatus: 'UNAUTHENTICATED', compatType: 'Unauthorized' },
  model_not_found: { status: 404, chatType: 'invalid_request_error', code: 'model_not_found', messagesType: 'not_found_error', googleStatus: 'NOT_FOUND', compatType: 'NotFound' },
  model_not_permitted: { status: 403, chatType: 'permission_error', code: 'model_not_permitted', messagesType: 'permission_error', googleStatus: 'PERMISSION_DENIED', compatType: 'Forbidden' },
  unsupported_protocol: { status: 400, chatType: 'invalid_request_error', code: 'unsupported_protocol', messagesType: 'invalid_request_error', googleStatus: 'INVALID_ARGUMENT', compatType: 'BadRequest' },
  invalid_request: { status: 400, chatType: 'invalid_request_error', code: 'invalid_request', messagesType: 'invalid_request_error', googleStatus: 'INVALID_ARGUMENT', compatType: 'BadRequest' },
  request_too_large: { status: 413, chatType: 'invalid_request_error', code: 'REQUEST_TOO_LARGE', messagesType: 'request_too_large', googleStatus: 'INVALID_ARGUMENT', compatType: 'BadRequest' },
  rate_limited: { status: 429, chatType: 'rate_limit_error', code: 'rate_limited', messagesType: 'rate_limit_error', googleStatus: 'RESOURCE_EXHAUSTED', compatType: 'TooManyRequests' },
  // A spent budget: OpenAI's insufficient_quota; the SDKs are told not to retry (x-should-retry: false).
  quota_exceeded: { status: 429, chatType: 'insufficient_quota', code: 'insufficient_quota', messagesType: 'rate_limit_error', googleStatus: 'RESOURCE_EXHAUSTED', compatType: 'QuotaExceeded' },
  upstream_unavailable: { status: 502, chatType: 'upstream_error', code: 'upstream_unavailable', messagesType: 'api_error', googleStatus: 'UNAVAILABLE', compatType: 'BadGateway' },
  upstream_invalid_response: { status: 502, chatType: 'upstream_error', code: 'upstream_invalid_response', messagesType: 'api_error', googleStatus: 'UNAVAILABLE', compatType: 'BadGateway' },
  upstream_timeout: { status: 504, chatType: 'upstream_error', code: 'upstream_timeout', messagesType: 'api_error', googleStatus: 'DEADLINE_EXCEEDED', compatType: 'GatewayTimeout' },
  upstream_auth: { status: 502, chatType: 'upstream_error', code: 'upstream_auth', messagesType: 'api_error', googleStatus: 'UNAVAILABLE', compatType: 'BadGateway' },
  request_timeout: { status: 408, chatType: 'invalid_request_error', code: 'request_timeout', messagesType: 'invalid_request_error', googleStatus: 'DEADLINE_EXCEEDED', compatType: 'RequestTimeout' },
  method_not_allowed: { status: 405, chatType: 'invalid_request_error', code: 'method_not_allowed', messagesType: 'invalid_request_error', googleStatus: 'INVALID_ARGUMENT', compatType: 'MethodNotAllowed' },
  headers_too_large: { status: 431, chatType: 'invalid_request_error', code: 'request_headers_too_large', messagesType: 'invalid_request_error', googleStatus: 'INVALID_ARGUMENT', compatType: 'BadRequest' },
  shutting_down: { status: 503, chatType: 'server_error', code: 'shutting_down', messagesType: 'overloaded_error', googleStatus: 'UNAVAILABLE', compatType: 'ServiceUnavailable' },
  ledger_unavailable: { status: 503, chatType: 'server_error', code: 'ledger_unavailable', messagesType: 'overloaded_error', googleStatus: 'UNAVAILABLE', compatType: 'ServiceUnavailable' },
  not_ready: { status: 503, chatType: 'server_error', code: 'not_ready', messagesType: 'overloaded_error', googleStatus: 'UNAVAILABLE', compatType: 'ServiceUnavailable' },
  not_found: { status: 404, chatType: 'invalid_request_error', code: 'not_found', messagesType: 'not_found_error', googleStatus: 'NOT_FOUND', compatType: 'NotFound' },
  internal: { status: 500, chatType: 'server_error', code: 'internal_error', messagesType: 'api_error', googleStatus: 'INTERNAL', compatType: 'InternalServerError' },
};

/** One wrong parameter in a problem-details answer: where it was, what is wrong, what was sent. */
export interface ParamError {
  location: string;
  message: string;
  value?: unknown;
}

export class GatewayError extends Error {
  readonly kind: ErrorKind;
  readonly param: string | null;
  /** For problem details: which parameters were wrong. */
  readonly errors: ParamError[] | undefined;
  readonly statusOverride: number | undefined;
  constructor(kind: ErrorKind, message: string, opts: { param?: string; errors?: ParamError[]; status?: number } = {}) {
    super(message);
    this.kind = kind;
    this.param = opts.param ?? null;
    this.errors = opts.errors;
    this.statusOverride = opts.status;
  }
  get status(): number {
    return this.statusOverride ?? KINDS[this.kind].status;
  }
}

export interface RenderedError {
  status: number;
  contentType: string;
  body: string;
}

export function renderError(family: ErrorFamily, err: GatewayError, requestId?: string): RenderedError {
  const spec = KINDS[err.kind];
  const status = err.status;
  switch (family) {
    case 'chat':
      return json(status, { error: { message: err.message, type: spec.chatType, param: err.param, code: spec.code } } satisfies ChatErrorBody);
    case 'compat':
      return json(status, { error: { code: spec.code, message: err.message, param: err.param ?? '', type: spec.compatType } } satisfies CompatErrorBody);
    case 'messages':
      return json(status, { type: 'error', error: { type: spec.messagesType, message: err.message }, ...(requestId ? { request_id: requestId } : {}) } satisfies MessagesErrorBody);
    case 'gemini':
      return json(status, { error: { code: status, message: err.message, status: spec.googleStatus } } satisfies GeminiErrorBody);
    case 'problem':
      return {
        status,
        contentType: 'application/problem+json',
        body: JSON.stringify({
          type: `https://tollgate.dev/problems/${spec.code.toLowerCase().replaceAll('_', '-')}`,
          title: problemTitle(err.kind),
          status,
          detail: err.message,
          ...(err.errors ? { errors: err.errors } : {}),
          ...(requestId ? { instance: `urn:tollgate:request:${requestId}` } : {}),
        } satisfies ProblemBody),
      };
  }
}

function problemTitle(kind: ErrorKind): string {
  switch (kind) {
    case 'invalid_api_key':
      return 'Invalid API key';
    case 'invalid_request':
      return 'Invalid request parameters';
    case 'ledger_unavailable':
      return 'Usage store unavailable';
    case 'not_ready':
      return 'Gateway not ready';
    default:
      return kind.replaceAll('_', ' ');
  }
}

function json(status: number, body: unknown): RenderedError {
  return { status, contentType: 'application/json; charset=utf-8', body: JSON.stringify(body) };
}
