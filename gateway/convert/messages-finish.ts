// Anthropic stop_reason -> chat finish_reason and usage -> chat usage (reference §8.2), shared by JSON and stream.
import type { ChatUsage, FinishReason } from './chat-completion.ts';
import { chatUsage } from './chat-completion.ts';
import { isObject, nonNegativeInt } from '../json-guards.ts';

const FINISH: Readonly<Record<string, FinishReason>> = {
  end_turn: 'stop',
  stop_sequence: 'stop',
  pause_turn: 'stop',
  max_tokens: 'length',
  // The context window filled up while answering: the answer is cut like a token limit cuts it.
  model_context_window_exceeded: 'length',
  tool_use: 'tool_calls',
  refusal: 'content_filter',
};

export function finishFromStop(stop: unknown, calledTools: boolean): FinishReason {
  const f = (typeof stop === 'string' && FINISH[stop]) || 'stop';
  // A tool call ends the turn for a chat client whatever Anthropic calls the stop.
  return f === 'stop' && calledTools ? 'tool_calls' : f;
}

/** prompt = input + cache read + cache write (OpenAI's prompt includes cached tokens); cached_tokens = cache read. */
export function usageFromMessages(u: unknown): ChatUsage | undefined {
  if (!isObject(u)) return undefined;
  const input = nonNegativeInt(u.input_tokens);
  const read = nonNegativeInt(u.cache_read_input_tokens);
  const write = nonNegativeInt(u.cache_creation_input_tokens);
  return chatUsage(input + read + write, read, write, nonNegativeInt(u.output_tokens));
}
