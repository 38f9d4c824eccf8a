// Success bodies the gateway itself writes (models, health, the document) and the least a passed-through answer
// holds: those are the upstream's own bytes, so their schemas name only what the gateway reads from them.
import { z } from 'zod';

export const modelObject = z
  .object({ id: z.string(), object: z.literal('model'), created: z.number().int(), owned_by: z.string() })
  .meta({ id: 'Model', description: 'A model the caller may use (OpenAI models shape).' });

export type ModelObject = z.output<typeof modelObject>;

export const modelList = z
  .object({ object: z.literal('list'), data: z.array(modelObject) })
  .meta({ id: 'ModelList', description: 'Without a key: the public models. With a key: every model its organization may call.' });

const openaiUsage = z
  .looseObject({ prompt_tokens: z.number().int(), completion_tokens: z.number().int(), total_tokens: z.number().int().optional() })
  .describe('Read by the meter; an answer without it is billed from an estimate.');

export const chatCompletion = z
  .looseObject({
    id: z.string(),
    object: z.literal('chat.completion'),
    created: z.number().int(),
    model: z.string(),
    choices: z.array(z.looseObject({ index: z.number().int(), message: z.looseObject({ role: z.string() }), finish_reason: z.string().nullable() })),
    usage: openaiUsage.optional(),
  })
  .meta({ id: 'ChatCompletion', description: "An OpenAI chat completion: the upstream's answer unchanged (or converted to this shape on the unified entry)." });

export const messagesAnswer = z
  .looseObject({
    id: z.string(),
    type: z.literal('message'),
    role: z.literal('assistant'),
    content: z.array(z.looseObject({ type: z.string() })),
    model: z.string(),
    usage: z.looseObject({ input_tokens: z.number().int(), output_tokens: z.number().int() }),
  })
  .meta({ id: 'Message', description: 'An Anthropic message: the upstream answer unchanged, or converted from chat.' });

export const tokenCount = z.looseObject({ input_tokens: z.number().int() }).meta({ id: 'TokenCount', description: "The upstream's count, unchanged (not billed)." });

export const responseObject = z
  .looseObject({ id: z.string(), object: z.literal('response'), model: z.string(), output: z.array(z.unknown()), usage: z.looseObject({ input_tokens: z.number().int(), output_tokens: z.number().int() }).nullable().optional() })
  .meta({ id: 'Response', description: 'An OpenAI response object, unchanged.' });

export const embeddingList = z
  .looseObject({
    object: z.literal('list'),
    data: z.array(z.looseObject({ object: z.literal('embedding'), index: z.number().int(), embedding: z.union([z.array(z.number()), z.string()]) })),
    model: z.string(),
    usage: z.looseObject({ prompt_tokens: z.number().int(), total_tokens: z.number().int() }),
  })
  .meta({ id: 'EmbeddingList', description: 'OpenAI embeddings, unchanged (base64 vectors stay strings).' });

export const imagesAnswer = z
  .looseObject({ created: z.number().int().optional(), data: z.array(z.looseObject({ url: z.string().optional(), b64_json: z.string().optional() })).optional() })
  .meta({ id: 'ImagesAnswer', description: 'Images, unchanged from the upstream (usage, where given, is what is billed).' });

export const generateContentAnswer = z
  .looseObject({ candidates: z.array(z.unknown()).optional(), usageMetadata: z.looseObject({}).optional() })
  .meta({ id: 'GenerateContentResponse', description: "Gemini's answer, unchanged; billed from usageMetadata.candidatesTokenCount." });

export const generateContentChunks = z.array(generateContentAnswer).meta({ id: 'GenerateContentChunks', description: 'streamGenerateContent without alt=sse: the chunks as one JSON array.' });

export const healthBody = z.object({ status: z.literal('ok') }).meta({ id: 'Health' });

export const readyBody = z
  .object({
    status: z.enum(['ready', 'not_ready']),
    snapshot: z.object({ version: z.string(), generation: z.number().int(), stale: z.string().optional().describe('Why the snapshot may be out of date.') }).nullable(),
    database: z.boolean(),
    ledger: z.object({ ready: z.boolean(), reason: z.string().optional(), journalBytes: z.number().int(), pendingRows: z.number().int() }),
    draining: z.boolean(),
  })
  .meta({ id: 'Readiness', description: 'Ready: a current snapshot is loaded, usage can be recorded, and the process is not draining.' });

export const openApiBody = z
  .looseObject({ openapi: z.literal('3.1.0'), info: z.looseObject({ title: z.string(), version: z.string() }), paths: z.record(z.string(), z.unknown()) })
  .meta({ id: 'OpenApiDocument', description: 'This document.' });
