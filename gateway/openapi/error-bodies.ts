// Each error family's body (gateway/errors.ts renders them) as zod schemas, and the error answers a route declares.
import { z } from 'zod';
import type { ErrorFamily } from '../errors.ts';
import type { ResponseSpec } from './spec.ts';

// Outer objects stay open: an upstream's own error passes through unchanged and may carry more fields.
export const chatErrorBody = z
  .looseObject({
    error: z.looseObject({
      message: z.string(),
      type: z.string(),
      param: z.string().nullable(),
      code: z.string().nullable(),
    }),
  })
  .meta({ id: 'ChatError', description: 'An OpenAI-style error (chat, responses, images v1, embeddings, models).' });

export const compatErrorBody = z
  .looseObject({
    error: z.looseObject({
      code: z.string(),
      message: z.string(),
      param: z.string(),
      type: z.string(),
    }),
  })
  .meta({ id: 'CompatError', description: 'A v3-style error (`/api/v3/*`): `param` is always a string, `type` a status name.' });

export const messagesErrorBody = z
  .looseObject({
    type: z.literal('error'),
    error: z.looseObject({ type: z.string(), message: z.string() }),
    request_id: z.string().optional(),
  })
  .meta({ id: 'MessagesError', description: 'An Anthropic-style error (messages, count_tokens).' });

export const geminiErrorBody = z
  .looseObject({
    error: z.looseObject({ code: z.number().int(), message: z.string(), status: z.string() }),
  })
  .meta({ id: 'GeminiError', description: 'A Google-style error (generateContent).' });

export const problemBody = z
  .object({
    type: z.string().describe('A URI naming the problem, https://tollgate.dev/problems/<code>.'),
    title: z.string(),
    status: z.number().int(),
    detail: z.string(),
    errors: z.array(z.object({ location: z.string(), message: z.string(), value: z.unknown().optional() })).optional().describe('Which parameters were wrong.'),
    instance: z.string().optional().describe('urn:tollgate:request:<request id>'),
  })
  .meta({ id: 'Problem', description: 'RFC 9457 problem details (`application/problem+json`), for /api/business/*.' });

// gateway/errors.ts renders with these types (`satisfies`), so a renderer and its schema cannot drift apart.
export type ChatErrorBody = z.output<typeof chatErrorBody>;
export type CompatErrorBody = z.output<typeof compatErrorBody>;
export type MessagesErrorBody = z.output<typeof messagesErrorBody>;
export type GeminiErrorBody = z.output<typeof geminiErrorBody>;
export type ProblemBody = z.output<typeof problemBody>;

const BODIES: Record<ErrorFamily, z.ZodType> = { chat: chatErrorBody, compat: compatErrorBody, messages: messagesErrorBody, gemini: geminiErrorBody, problem: problemBody };

const WHY: Record<number, string> = {
  400: 'The request is malformed or names something the model cannot do.',
  401: 'No API key, or one that is wrong, revoked or expired.',
  403: 'The key may not call this model.',
  404: 'No such model (or not visible to this key).',
  405: 'Another method is served at this path (see Allow).',
  408: 'The request body did not arrive in time.',
  413: 'The request body is too large.',
  422: 'The parameters are well-formed but inconsistent.',
  429: 'A rate limit or a budget was reached (see Retry-After and x-should-retry).',
  500: 'The gateway hit an internal error.',
  502: 'No upstream gave a usable answer.',
  503: 'Not ready, shutting down, or usage cannot be recorded right now.',
  504: 'The upstream did not answer in time.',
};

/** What a billed call may be refused with, before or after reaching an upstream. */
export const BILLED_ERRORS = [400, 401, 403, 404, 408, 413, 429, 500, 502, 503, 504] as const;

/** A pass-through route's answer for any status not listed: the upstream's own error (mostly in the same shape). */
export function upstreamErrors(family: ErrorFamily): ResponseSpec {
  return { description: "An upstream's own error, passed through with its status and body.", schema: BODIES[family] };
}

/** Error answers in one family's shape, for the statuses given. */
export function errorResponses(family: ErrorFamily, statuses: readonly number[]): Record<number, ResponseSpec> {
  const out: Record<number, ResponseSpec> = {};
  for (const s of statuses) {
    out[s] = { description: WHY[s] ?? 'An error.', schema: BODIES[family], contentType: family === 'problem' ? 'application/problem+json' : 'application/json' };
  }
  return out;
}
