// OpenAI chat error bodies -> Anthropic error bodies and in-stream error events (reference §2.6, §8.9).
import { asObject, parseJson } from '../../json-guards.ts';

/** Anthropic error.type for an HTTP status (the SDK picks its exception class by status; the type says the same). */
export function messagesErrorType(status: number): string {
  switch (status) {
    case 400:
      return 'invalid_request_error';
    case 401:
      return 'authentication_error';
    case 402:
      return 'billing_error';
    case 403:
      return 'permission_error';
    case 404:
      return 'not_found_error';
    case 413:
      return 'request_too_large';
    case 429:
      return 'rate_limit_error';
    case 503:
    case 529:
      return 'overloaded_error';
    case 504:
      return 'timeout_error';
    default:
      return status >= 500 ? 'api_error' : 'invalid_request_error';
  }
}

/** An upstream chat error answer (status, raw body) as the messages family's error body, same status. */
export function chatErrorToMessages(status: number, body: Buffer | string): { status: number; body: string; contentType: string } {
  const err = chatError(body);
  const message = err?.message ?? `The upstream provider answered with HTTP ${status}.`;
  return {
    status,
    contentType: 'application/json; charset=utf-8',
    body: JSON.stringify({ type: 'error', error: { type: messagesErrorType(status), message } }),
  };
}

/** The error type for an error an upstream sent inside a 200 stream, where there is no status to go by. */
export function streamErrorType(err: { type?: unknown; code?: unknown }): string {
  const words = `${typeof err.type === 'string' ? err.type : ''} ${typeof err.code === 'string' ? err.code : ''}`;
  if (/overload/i.test(words)) return 'overloaded_error';
  if (/rate_limit|requests|tokens|quota/i.test(words)) return 'rate_limit_error';
  if (/invalid_request/i.test(words)) return 'invalid_request_error';
  return 'api_error';
}

/** One `event: error` frame, as Anthropic sends it after a 200 (reference §2.5). */
export function messagesErrorEvent(type: string, message: string): string {
  return `event: error\ndata: ${JSON.stringify({ type: 'error', error: { type, message } })}\n\n`;
}

function chatError(body: Buffer | string): { message?: string; type?: unknown; code?: unknown } | undefined {
  const parsed = parseJson(body);
  const root = asObject(parsed);
  const e = asObject(root?.error) ?? root;
  if (!e) return undefined;
  const message = typeof e.message === 'string' && e.message !== '' ? e.message : undefined;
  return { message, type: e.type, code: e.code };
}
