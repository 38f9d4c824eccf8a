// The gemini protocol (generateContent): model paths, the x-goog-api-key credential, usage readers, CRLF error frames.
import type { ErrorFamily, GatewayError } from '../errors.ts';
import { renderError } from '../errors.ts';
import { generateContentReader, geminiReader } from '../meter/gemini.ts';

export type GeminiAction = 'generateContent' | 'streamGenerateContent';

export const gemini = {
  protocol: 'gemini' as const,
  // The model is part of the path: see modelPath.
  paths: {},
  credentialHeaders: (credential: string): Record<string, string> => ({ 'x-goog-api-key': credential }),
  /** The text rule (the unified chat entry bills a gemini upstream like every other chat). */
  reader: geminiReader,
  /** The native generateContent endpoint's rule: only candidatesTokenCount, at the output price. */
  outputOnlyReader: generateContentReader,
  // Google frames its own SSE with CRLF; the SDK's parser reads what Google sends.
  streamError: (family: ErrorFamily, err: GatewayError): string => `data: ${renderError(family, err).body}\r\n\r\n`,
  /**
   * `/{collection}/{id}:{action}` for an upstream model id. An id already naming its collection (`models/…`,
   * `tunedModels/…`) keeps it, as Google's paths do; any other id goes under `models/`. Each segment is escaped and
   * `/` is kept raw, as @google/genai sends `google/gemini-2.5-pro`.
   */
  modelPath(id: string, action: GeminiAction, sse: boolean): string {
    return `/${upstreamModelPath(id)}:${action}${sse ? '?alt=sse' : ''}`;
  },
};

/** `models/{id}` (or the id's own collection) with each segment escaped. */
export function upstreamModelPath(id: string): string {
  const full = id.startsWith('models/') || id.startsWith('tunedModels/') ? id : `models/${id}`;
  return full.split('/').map(encodeURIComponent).join('/');
}
