// The responses protocol (OpenAI Responses API): path, bearer credential, usage reader, and its `error` event.
import type { GatewayError } from '../errors.ts';
import { responsesReader } from '../meter/responses.ts';
import { bearer } from './adapter.ts';

export const responses = {
  protocol: 'responses' as const,
  paths: { create: '/responses' },
  credentialHeaders: bearer,
  reader: responsesReader,
  /** The Responses API's own `error` event (the openai SDK raises it as an APIError); it has one shape for every family. */
  streamError(_family: unknown, err: GatewayError): string {
    const data = { type: 'error', code: err.kind, message: err.message, param: null };
    return `event: error\ndata: ${JSON.stringify(data)}\n\n`;
  },
  // The SDK's stream helper needs response.completed (or .failed / .incomplete) last: a stream ending without it is an error.
  requireTerminalEvent: true,
};
