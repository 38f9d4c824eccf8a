// Gemini finishReason -> chat finish_reason and usageMetadata -> chat usage (reference §8.5), shared by JSON and stream.
import type { ChatUsage, FinishReason } from '../chat-completion.ts';
import { chatUsageOf } from '../chat-completion.ts';
import { isObject } from '../../json-guards.ts';
import { geminiMetaUsage } from '../../meter/gemini.ts';

const FILTERED = new Set(['SAFETY', 'BLOCKLIST', 'PROHIBITED_CONTENT', 'SPII', 'IMAGE_SAFETY', 'IMAGE_PROHIBITED_CONTENT', 'RECITATION', 'IMAGE_RECITATION', 'LANGUAGE']);

export function finishFromGemini(reason: unknown, calledTools: boolean): FinishReason {
  if (reason === 'MAX_TOKENS') return 'length';
  if (typeof reason === 'string' && FILTERED.has(reason)) return 'content_filter';
  // Gemini ends a function call with STOP; a chat client needs to hear tool_calls.
  return calledTools ? 'tool_calls' : 'stop';
}

/** Read by the meter that bills it (prompt includes cached content, completion = candidates + thoughts), told in chat terms. */
export function usageFromGemini(meta: unknown): ChatUsage | undefined {
  if (!isObject(meta)) return undefined;
  return chatUsageOf(geminiMetaUsage(meta, 0), true);
}
