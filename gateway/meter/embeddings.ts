// OpenAI embeddings usage: `usage.prompt_tokens` is all there is to bill (input tokens; nothing cached, no output).
import { emptyUsage } from './usage.ts';
import type { Usage } from './usage.ts';
import type { StreamMeter, UsageReader } from './stream-meter.ts';
import { asObject, nonNegativeInt } from '../json-guards.ts';

export function embeddingsUsage(u: unknown): Usage | null {
  const usage = asObject(u);
  if (!usage) return null;
  return { input: nonNegativeInt(usage.prompt_tokens), output: 0, cacheRead: 0, cacheWrite: 0, reasoning: 0, artifacts: 0, explicitCache: false, estimated: false, detail: usage };
}

/** Embeddings never stream; a stream-shaped answer is metered as nothing reported (the relay then estimates). */
class NoStreamMeter implements StreamMeter {
  done = false;
  readonly contentBytes = 0;
  readonly countedBytes = 0;
  push(): void {}
  usage(): Usage {
    return emptyUsage();
  }
}

export const embeddingsReader: UsageReader = {
  fromJson: (body) => embeddingsUsage(asObject(body)?.usage),
  usageMember: 'usage',
  stream: () => new NoStreamMeter(),
};
