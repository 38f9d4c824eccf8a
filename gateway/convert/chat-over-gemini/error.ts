// Gemini error bodies (`{"error": {code, message, status}}`, also inside a stream) -> the chat error shape.
import type { ChatErrorBody } from '../chat-completion.ts';
import { chatError } from '../chat-completion.ts';
import { nonJsonError } from '../upstream-error.ts';
import { isObject, parseJson } from '../../json-guards.ts';

// reference §8.9: Google canonical status -> chat type and code.
const STATUSES: Readonly<Record<string, [string, string | null]>> = {
  INVALID_ARGUMENT: ['invalid_request_error', null],
  FAILED_PRECONDITION: ['invalid_request_error', 'failed_precondition'],
  OUT_OF_RANGE: ['invalid_request_error', null],
  UNAUTHENTICATED: ['invalid_request_error', 'invalid_api_key'],
  PERMISSION_DENIED: ['permission_error', null],
  NOT_FOUND: ['invalid_request_error', 'not_found'],
  RESOURCE_EXHAUSTED: ['rate_limit_error', 'rate_limit_exceeded'],
  INTERNAL: ['server_error', null],
  UNAVAILABLE: ['server_error', 'overloaded'],
  DEADLINE_EXCEEDED: ['server_error', 'timeout'],
};

export function geminiErrorObject(err: unknown, status?: number): ChatErrorBody {
  const e = isObject(err) ? err : {};
  const name = typeof e.status === 'string' ? e.status : '';
  const code = status ?? (typeof e.code === 'number' ? e.code : undefined);
  const [type, chatCode] = STATUSES[name] ?? [code !== undefined && code < 500 ? 'invalid_request_error' : 'server_error', name || null];
  const message = typeof e.message === 'string' && e.message !== '' ? e.message : `The upstream provider answered with an error${code ? ` (HTTP ${code})` : ''}.`;
  return chatError(message, type, chatCode);
}

export function geminiErrorToChat(status: number, body: Buffer): { status: number; body: string } {
  let parsed = parseJson(body);
  // A streaming request may be answered with a JSON array holding the error object.
  if (Array.isArray(parsed)) parsed = parsed[0];
  if (!isObject(parsed) || !isObject(parsed.error)) return { status, body: JSON.stringify(nonJsonError(status)) };
  return { status, body: JSON.stringify(geminiErrorObject(parsed.error, status)) };
}
