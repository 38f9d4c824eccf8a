// The images protocol (OpenAI images, Ark's compat dialect): paths, bearer credential, usage reader, error events.
import type { ErrorFamily, GatewayError } from '../errors.ts';
import { renderError } from '../errors.ts';
import { imagesReader } from '../meter/images.ts';
import { bearer } from './adapter.ts';

export const images = {
  protocol: 'images' as const,
  paths: { generations: '/images/generations', edits: '/images/edits' },
  credentialHeaders: bearer,
  /** The reader for one request: `expected` is how many images were asked for (read lazily: multipart learns `n` late). */
  reader: imagesReader,
  /** An `error` event the openai SDK raises as an APIError. */
  streamError: (family: ErrorFamily, err: GatewayError): string => `event: error\ndata: ${renderError(family, err).body}\n\n`,
};
