// Anthropic usage: input_tokens excludes cache reads and writes; message_delta figures are cumulative (docs/contract.md, usage).
import type { Usage } from './usage.ts';
import { emptyUsage } from './usage.ts';
import type { SseEvent, StreamMeter, UsageReader } from './stream-meter.ts';
import { asObject, nonNegativeInt, parseJson } from '../json-guards.ts';
import { stringFieldBytes } from './content-count.ts';

export function messagesUsage(u: unknown): Usage | null {
  const usage = asObject(u);
  if (!usage) return null;
  return {
    input: nonNegativeInt(usage.input_tokens),
    output: nonNegativeInt(usage.output_tokens),
    cacheRead: nonNegativeInt(usage.cache_read_input_tokens),
    cacheWrite: nonNegativeInt(usage.cache_creation_input_tokens),
    reasoning: 0,
    artifacts: 0,
    explicitCache: true,
    estimated: false,
    detail: usage,
  };
}

// The content_block_delta fields that carry output (a signature_delta's `signature` is not text).
const DELTA_CONTENT = ['text', 'partial_json', 'thinking'] as const;

class MessagesStreamMeter implements StreamMeter {
  done = false;
  contentBytes = 0;
  countedBytes = 0;
  private start: Record<string, unknown> | undefined;
  private delta: Record<string, unknown> | undefined;
  push(ev: SseEvent): void {
    // Anthropic names every event; a relay that drops `event:` lines still carries the type in the data.
    const type = ev.event ?? typeOfData(ev.data);
    if (type === 'message_stop') {
      this.done = true;
      return;
    }
    if (type === 'content_block_delta') {
      // One delta field per event: text, tool input JSON, or thinking (signatures are not output text).
      this.contentBytes += stringFieldBytes(ev.data, DELTA_CONTENT);
      return;
    }
    if (type !== 'message_start' && type !== 'message_delta') return;
    const data = asObject(parseJson(ev.data));
    if (!data) return;
    if (type === 'message_start') this.start = asObject(asObject(data.message)?.usage);
    else {
      // message_delta's output is cumulative; message_start's is a placeholder that counts none of the content.
      const usage = asObject(data.usage);
      this.delta = { ...this.delta, ...usage };
      if (typeof usage?.output_tokens === 'number') this.countedBytes = this.contentBytes;
    }
  }
  usage(): Usage {
    if (!this.start && !this.delta) return emptyUsage();
    // Input and cache figures are final in message_start unless a delta restates them; output is final in the last delta.
    const merged = { ...this.start, ...this.delta };
    const u = messagesUsage(merged)!;
    if (!this.delta) u.estimated = true;
    return u;
  }
}

export const anthropicReader: UsageReader = {
  // A usage object without the protocol's counts (chat-style usage on messages) is no usage: the answer is estimated.
  fromJson: (body) => {
    const u = asObject(asObject(body)?.usage);
    return u && (typeof u.input_tokens === 'number' || typeof u.output_tokens === 'number') ? messagesUsage(u) : null;
  },
  usageMember: 'usage',
  stream: () => new MessagesStreamMeter(),
};

function typeOfData(data: string): string | undefined {
  const m = /"type"\s*:\s*"([a-z_]+)"/.exec(data);
  return m?.[1];
}
