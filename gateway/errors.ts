// Every error the gateway itself raises, declared once, rendered in each protocol family's shape (DESIGN §8).

export type ErrorKind =
  | 'invalid_api_key'
  | 'model_not_found'
  | 'model_not_permitted'
  | 'unsupported_protocol'
  | 'invalid_request'
  | 'request_too_large'
  | 'rate_limited'
  | 'upstream_unavailable'
  | 'upstream_timeout'
  | 'upstream_invalid_response'
  | 'ledger_unavailable'
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
  upstream_unavailable: { status: 502, chatType: 'upstream_error', code: 'upstream_unavailable', messagesType: 'api_error', googleStatus: 'UNAVAILABLE', compatType: 'BadGateway' },
  upstream_invalid_response: { status: 502, chatType: 'upstream_error', code: 'upstream_invalid_response', messagesType: 'api_error', googleStatus: 'UNAVAILABLE', compatType: 'BadGateway' },
  upstream_timeout: { status: 504, chatType: 'upstream_error', code: 'upstream_timeout', messagesType: 'api_error', googleStatus: 'DEADLINE_EXCEEDED', compatType: 'GatewayTimeout' },
  ledger_unavailable: { status: 503, chatType: 'server_error', code: 'ledger_unavailable', messagesType: 'overloaded_error', googleStatus: 'UNAVAILABLE', compatType: 'ServiceUnavailable' },
  not_found: { status: 404, chatType: 'invalid_request_error', code: 'not_found', messagesType: 'not_found_error', googleStatus: 'NOT_FOUND', compatType: 'NotFound' },
  internal: { status: 500, chatType: 'server_error', code: 'internal_error', messagesType: 'api_error', googleStatus: 'INTERNAL', compatType: 'InternalServerError' },
};

export interface ParamError {
  name: string;
  reason: string;
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
      return json(status, { error: { message: err.message, type: spec.chatType, param: err.param, code: spec.code } });
    case 'compat':
      return json(status, { error: { code: spec.code, message: err.message, param: err.param ?? '', type: spec.compatType } });
    case 'messages':
      return json(status, { type: 'error', error: { type: spec.messagesType, message: err.message }, ...(requestId ? { request_id: requestId } : {}) });
    case 'gemini':
      return json(status, { error: { code: status, message: err.message, status: spec.googleStatus } });
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
        }),
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
    default:
      return kind.replaceAll('_', ' ');
  }
}

function json(status: number, body: unknown): RenderedError {
  return { status, contentType: 'application/json; charset=utf-8', body: JSON.stringify(body) };
}
