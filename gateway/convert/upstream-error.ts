// What every error converter answers when the upstream's error body is not its protocol's error JSON.
import type { ChatErrorBody } from './chat-completion.ts';
import { chatError } from './chat-completion.ts';

/** An upstream error whose body is not its protocol's error JSON (a proxy's HTML page, an empty body). */
export function nonJsonError(status: number): ChatErrorBody {
  return chatError(`The upstream provider answered HTTP ${status} without a readable error body.`, status < 500 ? 'invalid_request_error' : 'upstream_error', 'upstream_error');
}
