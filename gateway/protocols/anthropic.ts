// The anthropic protocol (Messages API): paths, credential and version headers, usage reader, `event: error` frames.
import type { IncomingHttpHeaders } from 'node:http';
import type { ErrorFamily, GatewayError } from '../errors.ts';
import { renderError } from '../errors.ts';
import { anthropicReader } from '../meter/anthropic.ts';

/** What the Messages API requires when a client leaves it out (and what converted chat calls send). */
export const ANTHROPIC_VERSION = '2023-06-01';

export const anthropic = {
  protocol: 'anthropic' as const,
  paths: { messages: '/messages', countTokens: '/messages/count_tokens' },
  credentialHeaders: (credential: string): Record<string, string> => ({ 'x-api-key': credential }),
  reader: anthropicReader,
  streamError: (family: ErrorFamily, err: GatewayError): string => `event: error\ndata: ${renderError(family, err).body}\n\n`,
  // A pass-through stream is whole only with message_stop.
  requireTerminalEvent: true,
  /**
   * The version and beta headers sent upstream: the client's own `anthropic-version` and `anthropic-beta` as sent,
   * else the default version. Without client headers (a converted chat call) only the default version goes. Written
   * into `headers` (the pass-through headers built so far), which is returned.
   */
  versionHeaders(client: IncomingHttpHeaders | undefined, headers: Record<string, string>): Record<string, string> {
    const version = client?.['anthropic-version'];
    headers['anthropic-version'] = typeof version === 'string' && version !== '' ? version : ANTHROPIC_VERSION;
    const beta = client?.['anthropic-beta'];
    if (beta !== undefined && beta !== '') headers['anthropic-beta'] = Array.isArray(beta) ? beta.join(',') : beta;
    return headers;
  },
};
