// OpenAI chat usage: prompt_tokens includes cached_tokens (DESIGN §5).
import type { Usage } from './usage.ts';
import { emptyUsage } from './usage.ts';
import type { SseEvent, StreamMeter, UsageReader } from './stream-meter.ts';
import { int, obj, parseJson } from './stream-meter.ts';

export function chatUsage(u: unknown): Usage | null {
  const usage = obj(u);
  if (!usage) return null;
  const prompt = int(usage.prompt_tokens);
  const cached = Math.min(int(obj(usage.prompt_tokens_details)?.cached_tokens), prompt);
  return {
    input: prompt - cached,
    output: int(usage.completion_tokens),
    cacheRead: cached,
    cacheWrite: 0,
    reasoning: int(obj(usage.completion_tokens_details)?.reasoning_tokens),
    artifacts: 0,
    explicitCache: false,
    estimated: false,
    detail: usage,
  };
}

class ChatStreamMeter implements StreamMeter {
  done = false;
  private last: Usage | null = null;
  push(ev: SseEvent): void {
    const d = ev.data;
    if (d === '[DONE]') {
      this.done = true;
      return;
    }
    // Only chunks that carry a usage object are parsed; content deltas pass untouched.
    if (!d.includes('"usage"') || /"usage"\s*:\s*null/.test(d)) return;
    const u = chatUsage(obj(parseJson(d))?.usage);
    if (u) this.last = u;
  }
  usage(): Usage {
    return this.last ?? emptyUsage();
  }
}

export const openaiChatReader: UsageReader = {
  // A usage object without the protocol's counts (another protocol's shape) is no usage: the answer is estimated.
  fromJson: (body) => {
    const u = obj(obj(body)?.usage);
    return u && (typeof u.prompt_tokens === 'number' || typeof u.completion_tokens === 'number') ? chatUsage(u) : null;
  },
  usageMember: 'usage',
  stream: () => new ChatStreamMeter(),
};
