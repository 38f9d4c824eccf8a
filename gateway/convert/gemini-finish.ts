// Gemini finishReason -> chat finish_reason and usageMetadata -> chat usage (reference §8.5), shared by JSON and stream.
import type { ChatUsage, FinishReason } from './chat-completion.ts';
import { chatUsage, isObject, nonNegativeInt } from './chat-completion.ts';

const FILTERED = new Set(['SAFETY', 'BLOCKLIST', 'PROHIBITED_CONTENT', 'SPII', 'IMAGE_SAFETY', 'IMAGE_PROHIBITED_CONTENT', 'RECITATION', 'IMAGE_RECITATION', 'LANGUAGE']);

export function finishFromGemini(reason: unknown, calledTools: boolean): FinishReason {
  if (reason === 'MAX_TOKENS') return 'length';
  if (typeof reason === 'string' && FILTERED.has(reason)) return 'content_filter';
  // Gemini ends a function call with STOP; a chat client needs to hear tool_calls.
  return calledTools ? 'tool_calls' : 'stop';
}

/** Same figures the meter bills (docs/contract.md, usage): prompt includes cached content, completion = candidates + thoughts. */
export function usageFromGemini(meta: unknown): ChatUsage | undefined {
  if (!isObject(meta)) return undefined;
  const prompt = nonNegativeInt(meta.promptTokenCount);
  const thoughts = nonNegativeInt(meta.thoughtsTokenCount);
  return chatUsage(prompt, Math.min(nonNegativeInt(meta.cachedContentTokenCount), prompt), 0, nonNegativeInt(meta.candidatesTokenCount) + thoughts, thoughts);
}
