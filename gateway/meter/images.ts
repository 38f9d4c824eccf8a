// Images-style usage: usage.input_tokens / usage.output_tokens; artifacts = images returned (DESIGN §5, §6).
import type { Usage } from './usage.ts';
import { emptyUsage } from './usage.ts';
import type { SseEvent, StreamMeter, UsageReader } from './stream-meter.ts';
import { int, obj, parseJson } from './stream-meter.ts';

export function imagesUsage(body: Record<string, unknown> | undefined): Usage | null {
  const usage = obj(body?.usage);
  const data = body?.data;
  const artifacts = Array.isArray(data) ? data.filter((d) => obj(d) && obj(d)!.error === undefined).length : 0;
  if (!usage) return null;
  return {
    input: int(usage.input_tokens),
    output: int(usage.output_tokens),
    cacheRead: 0,
    cacheWrite: 0,
    reasoning: 0,
    artifacts: artifacts || int(usage.generated_images),
    explicitCache: false,
    estimated: false,
    detail: usage,
  };
}

class ImagesStreamMeter implements StreamMeter {
  done = false;
  private last: Usage | null = null;
  private images = 0;
  push(ev: SseEvent): void {
    if (ev.data === '[DONE]') {
      this.done = true;
      return;
    }
    const body = obj(parseJson(ev.data));
    const type = String(body?.type ?? ev.event ?? '');
    if (type.endsWith('.partial_succeeded')) this.images++;
    if (!type.endsWith('.completed')) return;
    if (!type.includes('generation.completed') || body?.usage !== undefined) {
      // OpenAI: one *.completed event per image carrying usage; Ark: one final completed event.
      if (type.startsWith('image_generation.') || type.startsWith('image_edit.')) {
        if (body?.b64_json !== undefined || body?.url !== undefined) this.images++;
      }
      const u = imagesUsage(body);
      if (u) this.last = this.last ? sum(this.last, u) : u;
    }
  }
  usage(): Usage {
    const u = this.last ?? emptyUsage();
    return { ...u, artifacts: this.images || u.artifacts };
  }
}

function sum(a: Usage, b: Usage): Usage {
  return { ...a, input: a.input + b.input, output: a.output + b.output, artifacts: a.artifacts + b.artifacts, detail: b.detail };
}

export const imagesReader: UsageReader = {
  fromJson: (body) => imagesUsage(obj(body)),
  stream: () => new ImagesStreamMeter(),
};
