// The request fields the gateway reads and checks, as loose zod schemas: everything else in a body passes through
// to the upstream untouched. The routes check these fields with hand-written guards (no zod parse per request);
// request-bodies.test.ts proves guard and schema accept and refuse the same bodies.
import { z } from 'zod';

/** `trim() !== ''`: JavaScript's trim strips exactly what `\s` matches. */
const modelName = z.string().regex(/\S/, 'must not be blank').describe('The model id or alias, as listed by GET /api/v1/models.');

/** parseJsonObject refuses a body naming either twice (the upstream might read the other copy): not sayable in JSON Schema. */
const ONCE = ' `model` and `stream` may each appear only once.';

const streamFlag = z.unknown().optional().describe('`true` answers as a server-sent event stream (`text/event-stream`); anything else as one JSON body.');

export const chatCompletionRequest = z
  .looseObject({
    model: modelName,
    messages: z.array(z.unknown()).min(1).describe('The conversation, passed to the upstream unchanged.'),
    stream: streamFlag,
    stream_options: z.unknown().optional().describe('Passed on; on a stream the gateway sets `include_usage: true` so usage is always reported.'),
  })
  .meta({ id: 'ChatCompletionRequest', description: `An OpenAI chat completions body. Fields not listed pass through to the upstream.${ONCE}` });

export const messagesRequest = z
  .looseObject({
    model: modelName,
    messages: z.array(z.unknown()).min(1).describe('The conversation, passed on (or converted through chat for openai-only models).'),
    stream: streamFlag,
  })
  .meta({ id: 'MessagesRequest', description: `An Anthropic messages (or count_tokens) body. Fields not listed pass through.${ONCE}` });

export const responsesRequest = z
  .looseObject({
    model: modelName,
    input: z.unknown().optional().describe('Optional: previous_response_id, conversation or a stored prompt may stand in for it.'),
    stream: streamFlag,
  })
  .meta({ id: 'ResponsesRequest', description: `An OpenAI responses body. Fields not listed pass through.${ONCE}` });

/** Any JSON value but null. */
const present = z.union([z.string(), z.number(), z.boolean(), z.array(z.unknown()), z.record(z.string(), z.unknown())]);

export const embeddingsRequest = z
  .looseObject({
    model: modelName,
    input: present.describe('The text(s) or token arrays to embed, passed on unchanged.'),
  })
  .meta({ id: 'EmbeddingsRequest', description: `An OpenAI embeddings body. Fields not listed pass through; base64 vectors come back untouched.${ONCE}` });

export const generateContentRequest = z
  .looseObject({
    contents: z.array(z.unknown()).min(1).describe('The conversation, passed on unchanged.'),
  })
  .meta({ id: 'GenerateContentRequest', description: `A Gemini generateContent body; the model is named by the path (a \`model\` field here is removed). Fields not listed pass through.${ONCE}` });

const imageFields = {
  model: modelName,
  prompt: z.string().min(1),
  n: z.number().int().min(1).optional().describe('Images to make (billed per image where the pricing group says so).'),
  stream: z.boolean().nullable().optional(),
  partial_images: z.number().int().min(0).max(3).nullable().optional().describe('Only with `stream: true`.'),
};
const compatImageFields = { ...imageFields, response_format: z.enum(['url', 'b64_json']).optional() };

type ImageBody = { stream?: boolean | null; partial_images?: number | null };
const partialNeedsStream = (b: ImageBody) => b.partial_images === undefined || b.partial_images === null || b.stream === true;
const partialRule = { message: "'partial_images' is only allowed with 'stream': true.", path: ['partial_images'] };

export const imageGenerationRequest = z
  .looseObject(imageFields)
  .refine(partialNeedsStream, partialRule)
  .meta({ id: 'ImageGenerationRequest', description: `An OpenAI images generations body. Fields not listed pass through.${ONCE}` });

export const imageGenerationRequestV3 = z
  .looseObject(compatImageFields)
  .refine(partialNeedsStream, partialRule)
  .meta({ id: 'ImageGenerationRequestV3', description: `An images generations body (v3 style). \`size\` must be one the model lists, when it lists any.${ONCE}` });

const editImages = z.array(z.unknown()).min(1).max(16).describe('Up to 16 images, each `{image_url}` or `{file_id}`.');

export const imageEditJsonRequest = z
  .looseObject({ ...imageFields, images: editImages })
  .refine(partialNeedsStream, partialRule)
  .meta({ id: 'ImageEditJsonRequest', description: `The JSON images edits body. Fields not listed pass through.${ONCE}` });

export const imageEditJsonRequestV3 = z
  .looseObject({ ...compatImageFields, images: editImages })
  .refine(partialNeedsStream, partialRule)
  .meta({ id: 'ImageEditJsonRequestV3', description: `The JSON images edits body (v3 style).${ONCE}` });

const binary = z.string().meta({ format: 'binary' });

export const imageEditMultipartRequest = z
  .looseObject({
    model: z.string().describe('The only part rewritten; the rest streams upstream as it arrives.'),
    prompt: z.string(),
    image: z.union([binary, z.array(binary).max(16)]).describe('Up to 16 image parts, named `image`, `image[]` or `image[N]`.'),
    n: z.string().optional(),
    stream: z.enum(['true', 'false']).optional(),
    partial_images: z.string().optional().describe('Only with stream=true.'),
  })
  .meta({ id: 'ImageEditMultipartRequest', description: 'A multipart images edits body (at most 64 MiB), streamed through, never held whole.' });
