// OpenAI-compatible upstream errors -> the chat error shape with all four keys (Zhipu, for one, sends only code and message).
import type { ChatErrorBody } from '../chat-completion.ts';
import { chatError } from '../chat-completion.ts';
import { nonJsonError } from '../upstream-error.ts';
import { isObject, parseJson } from '../../json-guards.ts';

export function openaiErrorToChat(status: number, body: Buffer): { status: number; body: string } {
  const parsed = parseJson(body);
  if (!isObject(parsed) || !isObject(parsed.error)) return { status, body: JSON.stringify(nonJsonError(status)) };
  return { status, body: JSON.stringify(openaiErrorObject(parsed.error, status)) };
}

function openaiErrorObject(e: Record<string, unknown>, status: number): ChatErrorBody {
  const message = typeof e.message === 'string' && e.message !== '' ? e.message : `The upstream provider answered with an error (HTTP ${status}).`;
  const type = typeof e.type === 'string' && e.type !== '' ? e.type : status < 500 ? 'invalid_request_error' : 'server_error';
  const code = typeof e.code === 'string' ? e.code : typeof e.code === 'number' ? String(e.code) : null;
  return chatError(message, type, code, typeof e.param === 'string' ? e.param : null);
}
