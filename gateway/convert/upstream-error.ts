// What every error converter does first: read the upstream's error body without trusting it.
import type { ChatErrorBody } from './chat-completion.ts';
import { chatError } from './chat-completion.ts';

export function parseErrorBody(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
}

/** An upstream error whose body is not its protocol's error JSON (a proxy's HTML page, an empty body). */
export function nonJsonError(status: number): ChatErrorBody {
  return chatError(`The upstream provider answered HTTP ${status} without a readable error body.`, status < 500 ? 'invalid_request_error' : 'upstream_error', 'upstream_error');
}
