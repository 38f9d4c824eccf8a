// Gemini usage: promptTokenCount includes cached content; thoughts are output (DESIGN §5). The last usageMetadata wins.
import type { Usage } from './usage.ts';
import { emptyUsage } from './usage.ts';
import type { SseEvent, StreamMeter, UsageReader } from './stream-meter.ts';
import { int, obj, parseJson } from './stream-meter.ts';

export function geminiUsage(body: Record<string, unknown> | undefined): Usage | null {
  const meta = obj(body?.usageMetadata);
  if (!meta) return null;
  const prompt = int(meta.promptTokenCount);
  const cached = Math.min(int(meta.cachedContentTokenCount), prompt);
  const thoughts = int(meta.thoughtsTokenCount);
  return {
    input: prompt - cached,
    output: int(meta.candidatesTokenCount) + thoughts,
    cacheRead: cached,
    cacheWrite: 0,
    reasoning: thoughts,
    artifacts: countImages(body),
    explicitCache: cached > 0,
    estimated: false,
    detail: meta,
  };
}

function countImages(body: Record<string, unknown> | undefined): number {
  let n = 0;
  const candidates = body?.candidates;
  if (!Array.isArray(candidates)) return 0;
  for (const c of candidates) {
    const parts = obj(obj(c)?.content)?.parts;
    if (!Array.isArray(parts)) continue;
    for (const p of parts) {
      const part = obj(p);
      if (part && obj(part.inlineData) && part.thought !== true && String(obj(part.inlineData)?.mimeType ?? '').startsWith('image/')) n++;
    }
  }
  return n;
}

class GeminiStreamMeter implements StreamMeter {
  done = false;
  private last: Usage | null = null;
  private artifacts = 0;
  push(ev: SseEvent): void {
    const body = obj(parseJson(ev.data));
    if (!body) return;
    this.artifacts += countImages(body);
    const u = geminiUsage(body);
    if (u) this.last = u;
    const candidates = body.candidates;
    // Gemini has no terminator event: the chunk with a finishReason and usage is the last one.
    if (u && Array.isArray(candidates) && candidates.some((c) => obj(c)?.finishReason !== undefined)) this.done = true;
  }
  usage(): Usage {
    if (!this.last) return { ...emptyUsage(), artifacts: this.artifacts };
    return { ...this.last, artifacts: this.artifacts };
  }
}

export const geminiReader: UsageReader = {
  fromJson: (body) => geminiUsage(obj(body)),
  stream: () => new GeminiStreamMeter(),
};
