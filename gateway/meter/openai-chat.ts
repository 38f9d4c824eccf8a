// OpenAI chat usage: prompt_tokens includes cached_tokens (docs/contract.md, usage).
import type { Usage } from './usage.ts';
import { emptyUsage } from './usage.ts';
import type { SseEvent, StreamMeter, UsageReader } from './stream-meter.ts';
import { asObject, nonNegativeInt, parseJson } from '../json-guards.ts';
import * as scan from './content-count.ts';

export function chatUsage(u: unknown): Usage | null {
  const usage = asObject(u);
  if (!usage) return null;
  const prompt = nonNegativeInt(usage.prompt_tokens);
  const cached = Math.min(nonNegativeInt(asObject(usage.prompt_tokens_details)?.cached_tokens), prompt);
  return {
    input: prompt - cached,
    output: nonNegativeInt(usage.completion_tokens),
    cacheRead: cached,
    cacheWrite: 0,
    reasoning: nonNegativeInt(asObject(usage.completion_tokens_details)?.reasoning_tokens),
    artifacts: 0,
    explicitCache: false,
    estimated: false,
    detail: usage,
  };
}

// The delta fields that carry output; none of them is a key elsewhere in a chunk with a string value.
const CHAT_CONTENT = ['content', 'arguments', 'refusal', 'reasoning_content', 'reasoning'] as const;
const USAGE = ['usage'] as const;

class ChatStreamMeter implements StreamMeter {
  done = false;
  contentBytes = 0;
  countedBytes = 0;
  private last: Usage | null = null;
  push(ev: SseEvent): void {
    const d = ev.data;
    if (d === '[DONE]') {
      this.done = true;
      return;
    }
    // What a delta gave the client (its text, refusal, reasoning in two compatible spellings, tool arguments) and
    // whether the chunk carries a usage object, in one pass: only such chunks are parsed, content deltas are not.
    this.contentBytes += scan.chunkFieldBytes(d, CHAT_CONTENT, USAGE);
    if (!scan.memberWasObject) return;
    const u = chatUsage(asObject(parseJson(d))?.usage);
    if (u) {
      this.last = u;
      if (typeof asObject(u.detail)?.completion_tokens === 'number') this.countedBytes = this.contentBytes;
    }
  }
  usage(): Usage {
    return this.last ?? emptyUsage();
  }
}

export const openaiChatReader: UsageReader = {
  // A usage object without the protocol's counts (another protocol's shape) is no usage: the answer is estimated.
  fromJson: (body) => {
    const u = asObject(asObject(body)?.usage);
    return u && (typeof u.prompt_tokens === 'number' || typeof u.completion_tokens === 'number') ? chatUsage(u) : null;
  },
  usageMember: 'usage',
  stream: () => new ChatStreamMeter(),
};
