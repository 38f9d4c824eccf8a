// Images-style usage: usage.input_tokens / usage.output_tokens; artifacts = images returned (docs/contract.md: usage, pricing).
// Streams come in two dialects (reference §4.4, §5.3):
//   OpenAI: image_generation.partial_image / image_edit.partial_image previews, then one *.completed event per image
//           carrying that image and its usage; no [DONE].
//   Ark:    image_generation.partial_succeeded per image (partial_failed for a refused one), then one
//           image_generation.completed carrying only the usage, then data: [DONE].
import type { Usage } from './usage.ts';
import { emptyUsage } from './usage.ts';
import type { SseEvent, StreamMeter, UsageReader } from './stream-meter.ts';
import { asObject, nonNegativeInt, parseJson } from '../json-guards.ts';

export function imagesUsage(body: Record<string, unknown> | undefined): Usage | null {
  if (!body) return null;
  const usage = asObject(body.usage);
  const artifacts = imagesIn(body.data);
  if (!usage) {
    // No usage (dall-e, some proxies): the images are still counted; tokens are unknown, not guessed from base64 bytes.
    return Array.isArray(body.data) ? { ...emptyUsage(), artifacts } : null;
  }
  return fromUsage(usage, artifacts || nonNegativeInt(usage.generated_images));
}

function imagesIn(data: unknown): number {
  if (!Array.isArray(data)) return 0;
  let n = 0;
  // Ark group generation reports a refused image as {error} inside data[]: not an artifact.
  for (const d of data) if (asObject(d) && asObject(d)!.error === undefined) n++;
  return n;
}

function fromUsage(usage: Record<string, unknown>, artifacts: number): Usage {
  return {
    input: nonNegativeInt(usage.input_tokens),
    output: nonNegativeInt(usage.output_tokens),
    cacheRead: 0,
    cacheWrite: 0,
    reasoning: 0,
    artifacts,
    explicitCache: false,
    estimated: false,
    detail: usage,
  };
}

class ImagesStreamMeter implements StreamMeter {
  done = false;
  /** Partial images are base64, not tokens: no content estimate. */
  readonly contentBytes = 0;
  readonly countedBytes = 0;
  private readonly expected: () => number;
  private input = 0;
  private output = 0;
  private detail: unknown = null;
  private sawUsage = false;
  /** Finished images seen: OpenAI *.completed with an image, Ark partial_succeeded. */
  private images = 0;
  /** Ark's closing usage event: its generated_images is the fallback count. */
  private arkGenerated = 0;

  constructor(expected: () => number) {
    this.expected = expected;
  }

  push(ev: SseEvent): void {
    const data = ev.data;
    if (data === '[DONE]') {
      this.done = true;
      return;
    }
    const type = ev.event ?? eventType(data);
    if (type === undefined) return;
    // Previews and refusals carry no usage; they pass untouched and unparsed.
    if (type.endsWith('.partial_image') || type.endsWith('.partial_failed')) return;
    if (type.endsWith('.partial_succeeded')) {
      this.images++;
      return;
    }
    if (!type.endsWith('.completed')) return;
    const body = asObject(parseJson(data));
    if (!body) return;
    const usage = asObject(body.usage);
    if (body.b64_json !== undefined || body.url !== undefined) {
      // OpenAI: one completed event per image, each with the usage of that image.
      this.images++;
      if (usage) this.add(usage);
      if (this.images >= this.expected()) this.done = true;
      return;
    }
    // Ark: the closing event; its usage covers every image of the request.
    if (usage) {
      this.input = 0;
      this.output = 0;
      this.add(usage);
      this.arkGenerated = nonNegativeInt(usage.generated_images);
    }
    this.done = true;
  }

  private add(usage: Record<string, unknown>): void {
    this.sawUsage = true;
    this.input += nonNegativeInt(usage.input_tokens);
    this.output += nonNegativeInt(usage.output_tokens);
    this.detail = usage;
  }

  usage(): Usage {
    const artifacts = this.images || this.arkGenerated;
    if (!this.sawUsage) return { ...emptyUsage(), artifacts };
    return { ...fromUsage({}, artifacts), input: this.input, output: this.output, detail: this.detail };
  }
}

/** The `type` of an event sent without an `event:` line (cheap scan; the meter parses only the events it bills). */
function eventType(data: string): string | undefined {
  const m = /"type"\s*:\s*"([^"]+)"/.exec(data);
  return m ? m[1] : undefined;
}

/**
 * A reader for one request. `expected` is how many images were asked for (`n`): an OpenAI stream is final once that
 * many completed events passed (it sends no [DONE]); it is read lazily because multipart edits learn `n` late.
 */
export function imagesReader(expected: () => number = () => 1): UsageReader {
  return {
    fromJson: (body) => imagesUsage(asObject(body)),
    stream: () => new ImagesStreamMeter(expected),
  };
}
