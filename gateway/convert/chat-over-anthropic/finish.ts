// Anthropic stop_reason -> chat finish_reason and usage -> chat usage (reference §8.2), shared by JSON and stream.
import type { ChatUsage, FinishReason } from '../chat-completion.ts';
import { chatUsageOf } from '../chat-completion.ts';
import { messagesUsage } from '../../meter/anthropic.ts';

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

/** Read by the meter that bills it, then told in chat terms: prompt = input + cache read + cache write. */
export function usageFromMessages(u: unknown): ChatUsage | undefined {
  const usage = messagesUsage(u);
  return usage ? chatUsageOf(usage, false) : undefined;
}
