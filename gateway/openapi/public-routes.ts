// Every route the API port serves, declared once (gateway/openapi/spec.ts) for the OpenAPI document; paths are the
// exact fastify paths. openapi.test.ts fails when a route is served but not listed here, or listed but not served.
import { z } from 'zod';
import { limitsViewSchema } from '../governance/limits-view.ts';
import { usageReportSchema } from '../ledger/report-types.ts';
import * as answer from './answer-bodies.ts';
import { BILLED_ERRORS, chatErrorBody, errorResponses, upstreamErrors } from './error-bodies.ts';
import * as request from './request-bodies.ts';
import type { ResponseSpec, RouteSpec } from './spec.ts';

const ok = (description: string, schema: z.ZodType, stream = false): ResponseSpec => ({ description, schema, stream });

function chatRoute(path: string, operationId: string, family: 'chat' | 'compat', summary: string, description?: string): RouteSpec {
  return {
    method: 'POST',
    path,
    port: 'api',
    operationId,
    summary,
    description,
    tags: ['chat'],
    security: 'apiKey',
    body: request.chatCompletionRequest,
    responses: { 200: ok('The completion, or with `stream: true` its chunks as server-sent events ending with `data: [DONE]`.', answer.chatCompletion, true), ...errorResponses(family, BILLED_ERRORS) },
    defaultResponse: upstreamErrors(family),
  };
}

const modelsPaths = [
  ['/api/v1/models', 'V1', 'chat'],
  ['/api/v3/models', 'V3', 'compat'],
  ['/api/v0/models', 'V0', 'chat'],
  ['/api/paas/v4/models', 'PaasV4', 'chat'],
] as const;

const modelsRoutes: RouteSpec[] = modelsPaths.flatMap(([path, v, family]): RouteSpec[] => [
  {
    method: 'GET',
    path,
    port: 'api',
    operationId: `listModels${v}`,
    summary: 'List models',
    tags: ['models'],
    security: 'apiKeyOptional',
    responses: { 200: ok('The models the caller may use.', answer.modelList), ...errorResponses(family, [401, 503]) },
  },
  {
    method: 'GET',
    path: `${path}/*`,
    docPath: `${path}/{model}`,
    port: 'api',
    operationId: `getModel${v}`,
    summary: 'Get one model',
    description: 'The model id holds a `/` (openai/gpt-4o-mini): send it raw or as %2F. An alias works too.',
    tags: ['models'],
    security: 'apiKeyOptional',
    params: z.object({ model: z.string().describe('Model id or alias, e.g. openai/gpt-4o-mini.') }),
    responses: { 200: ok('The model.', answer.modelObject), ...errorResponses(family, [401, 404, 503]) },
  },
]);

const messagesRoutes: RouteSpec[] = (
  [
    ['/api/v1', ''],
    ['/api/anthropic/v1', 'Anthropic'],
  ] as const
).flatMap(([base, suffix]): RouteSpec[] => {
  const query = z.object({ beta: z.enum(['true']).optional().describe('Passed on to Anthropic (Claude Code sends it).') });
  return [
    {
      method: 'POST',
      path: `${base}/messages`,
      port: 'api',
      operationId: `createMessage${suffix}`,
      summary: 'Create a message (Anthropic messages)',
      description: 'Passed through to anthropic upstreams; for openai-only models converted through chat and back.',
      tags: ['messages'],
      security: 'apiKey',
      query,
      body: request.messagesRequest,
      responses: { 200: ok('The message, or with `stream: true` its events.', answer.messagesAnswer, true), ...errorResponses('messages', BILLED_ERRORS) },
      defaultResponse: upstreamErrors('messages'),
    },
    {
      method: 'POST',
      path: `${base}/messages/count_tokens`,
      port: 'api',
      operationId: `countTokens${suffix}`,
      summary: 'Count tokens (not billed)',
      tags: ['messages'],
      security: 'apiKey',
      query,
      body: request.messagesRequest,
      responses: { 200: ok("The upstream's count.", answer.tokenCount), ...errorResponses('messages', BILLED_ERRORS) },
      defaultResponse: upstreamErrors('messages'),
    },
  ];
});

function imageRoutes(v: 'v1' | 'v3'): RouteSpec[] {
  const family = v === 'v1' ? 'chat' : 'compat';
  const V = v.toUpperCase();
  const answered = { 200: ok('The images, or with `stream: true` partial images as server-sent events.', answer.imagesAnswer, true), ...errorResponses(family, BILLED_ERRORS) };
  const defaultResponse = upstreamErrors(family);
  return [
    {
      method: 'POST',
      path: `/api/${v}/images/generations`,
      port: 'api',
      operationId: `createImage${V}`,
      summary: 'Generate images',
      tags: ['images'],
      security: 'apiKey',
      body: v === 'v1' ? request.imageGenerationRequest : request.imageGenerationRequestV3,
      responses: answered,
      defaultResponse,
    },
    {
      method: 'POST',
      path: `/api/${v}/images/edits`,
      port: 'api',
      operationId: `editImage${V}`,
      summary: 'Edit images',
      description: 'multipart/form-data (streamed through, up to 64 MiB) or the JSON body with `images`.',
      tags: ['images'],
      security: 'apiKey',
      body: v === 'v1' ? request.imageEditJsonRequest : request.imageEditJsonRequestV3,
      otherBodies: { 'multipart/form-data': request.imageEditMultipartRequest },
      responses: answered,
      defaultResponse,
    },
  ];
}

const geminiRoutes: RouteSpec[] = (['v1beta', 'v1'] as const).flatMap((version): RouteSpec[] =>
  (['generateContent', 'streamGenerateContent'] as const).map((action) => ({
    method: 'POST',
    path: `/api/v1/gemini/${version}/models/*`,
    docPath: `/api/v1/gemini/${version}/models/{model}:${action}`,
    port: 'api',
    operationId: `${action}${version === 'v1' ? 'V1' : 'V1beta'}`,
    summary: action === 'generateContent' ? 'Generate content (Gemini)' : 'Generate content as a stream (Gemini)',
    description: 'The model may hold a `/`, raw or as %2F. The key may also come as `?key=`.',
    tags: ['gemini'],
    security: 'apiKeyGemini',
    params: z.object({ model: z.string().describe('Model id or alias, e.g. google/gemini-2.5-flash.') }),
    query: action === 'streamGenerateContent' ? z.object({ alt: z.enum(['sse']).optional().describe('sse: server-sent events; otherwise a JSON array of chunks.') }) : undefined,
    body: request.generateContentRequest,
    responses: {
      200: action === 'generateContent' ? ok('The answer.', answer.generateContentAnswer) : ok('The answer in chunks: server-sent events with alt=sse, else one JSON array of them.', answer.generateContentChunks, true),
      ...errorResponses('gemini', BILLED_ERRORS),
    },
    defaultResponse: upstreamErrors('gemini'),
  })),
);

const customerErrors = errorResponses('problem', [400, 401, 422, 500, 503]);
/** Every API-port route answers 503 in its family's shape once the process is shutting down. */
const draining = errorResponses('chat', [503]);

export const PUBLIC_ROUTES: RouteSpec[] = [
  { method: 'GET', path: '/healthz', port: 'api', operationId: 'healthz', summary: 'Liveness', tags: ['health'], security: 'none', responses: { 200: ok('The process is alive.', answer.healthBody), ...draining } },
  {
    method: 'GET',
    path: '/readyz',
    port: 'api',
    operationId: 'readyz',
    summary: 'Readiness',
    tags: ['health'],
    security: 'none',
    responses: { 200: ok('Ready.', answer.readyBody), 503: ok('Not ready; the body says why (while shutting down: the error shape).', z.union([answer.readyBody, chatErrorBody])) },
  },
  { method: 'GET', path: '/openapi.json', port: 'api', operationId: 'openApiDocument', summary: 'This OpenAPI document', tags: ['meta'], security: 'none', responses: { 200: ok('The OpenAPI 3.1 document.', answer.openApiBody), ...draining } },
  ...modelsRoutes,
  chatRoute('/api/v1/chat/completions', 'createChatCompletion', 'chat', 'Chat completions (OpenAI)', 'Passed through to openai-protocol upstreams.'),
  chatRoute('/api/v3/chat/completions', 'createChatCompletionV3', 'compat', 'Chat completions (v3 style errors)'),
  chatRoute('/api/v0/chat/completions', 'createChatCompletionUnified', 'chat', 'Chat completions for any model', "Converted to the model's native protocol (openai, else anthropic, else gemini) and back."),
  chatRoute('/api/paas/v4/chat/completions', 'createChatCompletionPaasV4', 'chat', 'Chat completions for any model (paas/v4 base)', 'The same as /api/v0/chat/completions.'),
  ...messagesRoutes,
  {
    method: 'POST',
    path: '/api/v1/responses',
    port: 'api',
    operationId: 'createResponse',
    summary: 'Create a response (OpenAI responses)',
    tags: ['responses'],
    security: 'apiKey',
    body: request.responsesRequest,
    responses: { 200: ok('The response, or with `stream: true` its events.', answer.responseObject, true), ...errorResponses('chat', BILLED_ERRORS) },
    defaultResponse: upstreamErrors('chat'),
  },
  ...imageRoutes('v1'),
  ...imageRoutes('v3'),
  ...(['v1', 'v0'] as const).map(
    (v): RouteSpec => ({
      method: 'POST',
      path: `/api/${v}/embeddings`,
      port: 'api',
      operationId: v === 'v1' ? 'createEmbeddings' : 'createEmbeddingsV0',
      summary: 'Embeddings',
      tags: ['embeddings'],
      security: 'apiKey',
      body: request.embeddingsRequest,
      responses: { 200: ok('The embeddings.', answer.embeddingList), ...errorResponses('chat', BILLED_ERRORS) },
      defaultResponse: upstreamErrors('chat'),
    }),
  ),
  ...geminiRoutes,
  {
    method: 'GET',
    path: '/api/business/v1/customer/usage',
    port: 'api',
    operationId: 'usageReport',
    summary: "The key's project usage",
    description: 'From the ledger rollups: [from, to), at most 366 days.',
    tags: ['usage'],
    security: 'apiKey',
    query: z.object({
      from: z.string().describe('RFC 3339 timestamp or date (YYYY-MM-DD), inclusive.'),
      to: z.string().describe('RFC 3339 timestamp or date (YYYY-MM-DD), exclusive.'),
    }),
    responses: { 200: ok('The report.', usageReportSchema), ...customerErrors },
  },
  {
    method: 'GET',
    path: '/api/business/v1/customer/limits',
    port: 'api',
    operationId: 'limits',
    summary: "The key's limits and budgets",
    description: 'Never limited itself: a key over its budget can still see why.',
    tags: ['usage'],
    security: 'apiKey',
    responses: { 200: ok('Limits and what is left.', limitsViewSchema), ...errorResponses('problem', [401, 500, 503]) },
  },
];
