// The openai protocol (chat completions): path, bearer credential, usage reader, and `data:` error frames.
import type { ErrorFamily, GatewayError } from '../errors.ts';
import { renderError } from '../errors.ts';
import { openaiChatReader } from '../meter/openai-chat.ts';
import { bearer } from './adapter.ts';

export const openai = {
  protocol: 'openai' as const,
  paths: { chat: '/chat/completions' },
  credentialHeaders: bearer,
  reader: openaiChatReader,
  // The OpenAI SDKs raise any data object with an `error` key.
  streamError: (family: ErrorFamily, err: GatewayError): string => `data: ${renderError(family, err).body}\n\n`,
};
