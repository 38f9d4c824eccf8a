// The pivot's output side: chat completion objects, stream chunks and error frames as OpenAI's schema spells them.
import { GatewayError, renderError } from '../errors.ts';
import type { Usage } from '../meter/usage.ts';
import { promptTokens } from '../meter/usage.ts';

/** What a response converter knows beside the upstream body: fallbacks for ids the upstream may not give. */
export interface ChatContext {
  /** Used as the completion id when the upstream gives none; also seeds synthesised tool-call ids. */
  id: string;
  /** Unix seconds, the same on every chunk of one stream. */
  created: number;
  /** The upstream model id, used when the upstream does not name its model. */
  model: string;
}

export type FinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter';

export interface ChatToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/** An output image (Gemini inlineData): chat has no standard field, so the widely used `images` extension carries it. */
export interface ChatImage {
  type: 'image_url';
  image_url: { url: string };
}

export interface ChatMessage {
  role: 'assistant';
  content: string | null;
  refusal: null;
  reasoning_content?: string;
  tool_calls?: ChatToolCall[];
  images?: ChatImage[];
}

export interface ChatChoice {
  index: number;
  message: ChatMessage;
  logprobs: null;
  finish_reason: FinishReason;
}

export interface ChatUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details: { cached_tokens: number; cache_write_tokens?: number };
  completion_tokens_details?: { reasoning_tokens: number };
}

export interface ChatCompletion {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  choices: ChatChoice[];
  usage?: ChatUsage;
}

export interface ChatDelta {
  role?: 'assistant';
  content?: string;
  reasoning_content?: string;
  tool_calls?: { index: number; id?: string; type?: 'function'; function: { name?: string; arguments: string } }[];
  images?: ChatImage[];
}

/** Usage in OpenAI's sense: prompt includes cached and cache-written tokens, completion includes reasoning. */
export function chatUsage(prompt: number, cached: number, cacheWrite: number, completion: number, reasoning?: number): ChatUsage {
  const u: ChatUsage = {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    prompt_tokens_details: cacheWrite > 0 ? { cached_tokens: cached, cache_write_tokens: cacheWrite } : { cached_tokens: cached },
  };
  if (reasoning !== undefined) u.completion_tokens_details = { reasoning_tokens: reasoning };
  return u;
}

/** The meter's Usage as chat reports it (prompt includes cache reads and writes); `reasoning` adds completion details. */
export function chatUsageOf(u: Usage, reasoning: boolean): ChatUsage {
  return chatUsage(promptTokens(u), u.cacheRead, u.cacheWrite, u.output, reasoning ? u.reasoning : undefined);
}

/**
 * Frames chat chunks for one stream. Every chunk carries `usage: null` and the usage arrives in a last chunk with empty
 * `choices`, as with `include_usage` (docs/contract.md, pass-through: returned whether or not the client asked).
 */
export class ChunkWriter {
  private readonly prefix: string;
  constructor(id: string, created: number, model: string) {
    // The constant head of every chunk is serialised once per stream.
    this.prefix = `data: {"id":${JSON.stringify(id)},"object":"chat.completion.chunk","created":${created},"model":${JSON.stringify(model)},"choices":`;
  }
  delta(index: number, delta: ChatDelta): string {
    return `${this.prefix}[{"index":${index},"delta":${JSON.stringify(delta)},"logprobs":null,"finish_reason":null}],"usage":null}\n\n`;
  }
  finish(index: number, reason: FinishReason): string {
    return `${this.prefix}[{"index":${index},"delta":{},"logprobs":null,"finish_reason":"${reason}"}],"usage":null}\n\n`;
  }
  usage(u: ChatUsage): string {
    return `${this.prefix}[],"usage":${JSON.stringify(u)}}\n\n`;
  }
}

export const DONE_FRAME = 'data: [DONE]\n\n';

export interface ChatErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

export function chatError(message: string, type: string, code: string | null, param: string | null = null): ChatErrorBody {
  return { error: { message, type, param, code } };
}

/** A mid-stream error the OpenAI SDKs raise on: any data object with an `error` key. */
export function errorFrame(body: ChatErrorBody): string {
  return `data: ${JSON.stringify(body)}\n\n`;
}

/** The frame for an upstream stream we cannot translate (malformed, cut short, out of order). */
export function malformedStreamFrame(what: string): string {
  return `data: ${renderError('chat', new GatewayError('upstream_unavailable', `The upstream stream was malformed: ${what}.`)).body}\n\n`;
}

/** For an upstream answer that is not the shape its protocol promises: a 502 in the chat shape. */
export function unexpectedAnswer(what: string): GatewayError {
  return new GatewayError('upstream_unavailable', `The upstream answer could not be converted: ${what}.`);
}
