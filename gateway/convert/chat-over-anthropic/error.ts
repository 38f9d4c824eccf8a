// Anthropic error bodies (JSON and `event: error`) -> the chat error shape, the upstream's status kept (docs/contract.md, errors).
import type { ChatErrorBody } from '../chat-completion.ts';
import { chatError } from '../chat-completion.ts';
import { nonJsonError } from '../upstream-error.ts';
import { isObject, parseJson } from '../../json-guards.ts';

// reference §8.9: Anthropic error.type -> chat type and code.
const TYPES: Readonly<Record<string, [string, string | null]>> = {
  invalid_request_error: ['invalid_request_error', null],
  authentication_error: ['invalid_request_error', 'invalid_api_key'],
  billing_error: ['insufficient_quota', 'insufficient_quota'],
  permission_error: ['permission_error', null],
  not_found_error: ['invalid_request_error', 'not_found'],
  request_too_large: ['invalid_request_error', 'request_too_large'],
  rate_limit_error: ['rate_limit_error', 'rate_limit_exceeded'],
  api_error: ['server_error', null],
  timeout_error: ['server_error', 'timeout'],
  overloaded_error: ['server_error', 'overloaded'],
};

/** The `error` object of an Anthropic error body or stream event, in chat terms. */
export function messagesErrorObject(err: unknown, status?: number): ChatErrorBody {
  const e = isObject(err) ? err : {};
  const kind = typeof e.type === 'string' ? e.type : '';
  const [type, code] = TYPES[kind] ?? [status !== undefined && status < 500 ? 'invalid_request_error' : 'server_error', kind || null];
  const message = typeof e.message === 'string' && e.message !== '' ? e.message : `The upstream provider answered with an error${status ? ` (HTTP ${status})` : ''}.`;
  return chatError(message, type, code);
}

export function messagesErrorToChat(status: number, body: Buffer): { status: number; body: string } {
  const parsed = parseJson(body);
  if (!isObject(parsed) || !isObject(parsed.error)) return { status, body: JSON.stringify(nonJsonError(status)) };
  return { status, body: JSON.stringify(messagesErrorObject(parsed.error, status)) };
}
