// Gemini usage: promptTokenCount includes cached content; thoughts are output (docs/contract.md, usage). The last usageMetadata wins.
import type { Usage } from './usage.ts';
import { emptyUsage } from './usage.ts';
import type { SseEvent, StreamMeter, UsageReader } from './stream-meter.ts';
import { asObject, nonNegativeInt, parseJson } from '../json-guards.ts';
import { utf8Bytes } from './content-count.ts';

type UsageOf = (body: Record<string, unknown> | undefined) => Usage | null;

/** The §5 mapping, used when a gemini upstream is billed by the text rule (the unified chat entry). */
export function geminiUsage(body: Record<string, unknown> | undefined): Usage | null {
  const meta = asObject(body?.usageMetadata);
  return meta ? geminiMetaUsage(meta, countImages(body)) : null;
}

/** The §5 mapping of one usageMetadata object; `artifacts` is the images counted beside it. */
export function geminiMetaUsage(meta: Record<string, unknown>, artifacts: number): Usage {
  const prompt = nonNegativeInt(meta.promptTokenCount);
  const cached = Math.min(nonNegativeInt(meta.cachedContentTokenCount), prompt);
  const thoughts = nonNegativeInt(meta.thoughtsTokenCount);
  return {
    input: prompt - cached,
    output: nonNegativeInt(meta.candidatesTokenCount) + thoughts,
    cacheRead: cached,
    cacheWrite: 0,
    reasoning: thoughts,
    artifacts,
    explicitCache: cached > 0,
    estimated: false,
    detail: meta,
  };
}

/**
 * The generateContent endpoint's rule (docs/contract.md, pricing): only candidatesTokenCount is billed (at the output price);
 * promptTokenCount, totalTokenCount and the rest stay in the detail, so no billed dimension shows tokens that cost nothing.
 */
export function generateContentUsage(body: Record<string, unknown> | undefined): Usage | null {
  const meta = asObject(body?.usageMetadata);
  if (!meta) return null;
  return {
    input: 0,
    output: nonNegativeInt(meta.candidatesTokenCount),
    cacheRead: 0,
    cacheWrite: 0,
    reasoning: 0,
    artifacts: countImages(body),
    explicitCache: false,
    estimated: false,
    detail: meta,
  };
}

/** Images returned: inlineData image parts, not counting thought (draft) images. */
function countImages(body: Record<string, unknown> | undefined): number {
  let n = 0;
  const candidates = body?.candidates;
  if (!Array.isArray(candidates)) return 0;
  for (const c of candidates) {
    const parts = asObject(asObject(c)?.content)?.parts;
    if (!Array.isArray(parts)) continue;
    for (const p of parts) {
      const part = asObject(p);
      if (!part || part.thought === true) continue;
      const blob = asObject(part.inlineData) ?? asObject(part.inline_data);
      const mime = blob?.mimeType ?? blob?.mime_type;
      if (typeof mime === 'string' && mime.startsWith('image/')) n++;
    }
  }
  return n;
}

/** UTF-8 bytes of a chunk's text parts (thoughts too: they are billed as output) and function-call arguments. */
function contentBytesOf(body: Record<string, unknown>): number {
  const candidates = body.candidates;
  if (!Array.isArray(candidates)) return 0;
  let n = 0;
  for (const c of candidates) {
    const parts = asObject(asObject(c)?.content)?.parts;
    if (!Array.isArray(parts)) continue;
    for (const p of parts) {
      const part = asObject(p);
      if (!part) continue;
      if (typeof part.text === 'string') n += utf8Bytes(part.text);
      const call = asObject(part.functionCall) ?? asObject(part.function_call);
      if (call?.args !== undefined) n += utf8Bytes(JSON.stringify(call.args));
    }
  }
  return n;
}

class GeminiStreamMeter implements StreamMeter {
  done = false;
  contentBytes = 0;
  countedBytes = 0;
  private last: Usage | null = null;
  private artifacts = 0;
  private readonly usageOf: UsageOf;
  constructor(usageOf: UsageOf) {
    this.usageOf = usageOf;
  }
  push(ev: SseEvent): void {
    const body = asObject(parseJson(ev.data));
    if (body) this.pushBody(body);
  }
  pushBody(body: Record<string, unknown>): void {
    this.contentBytes += contentBytesOf(body);
    const u = this.usageOf(body);
    // Each chunk carries only its new parts: images add up, usage does not (the last one is cumulative).
    if (u) {
      this.artifacts += u.artifacts;
      this.last = u;
      // A chunk's usageMetadata is cumulative, this chunk's parts included (when it counts candidates at all).
      if (typeof asObject(u.detail)?.candidatesTokenCount === 'number') this.countedBytes = this.contentBytes;
    } else this.artifacts += countImages(body);
    const candidates = body.candidates;
    // Gemini has no terminator event: the chunk with a finishReason and usage is the last one.
    if (u && Array.isArray(candidates) && candidates.some((c) => asObject(c)?.finishReason !== undefined)) this.done = true;
  }
  usage(): Usage {
    if (!this.last) return { ...emptyUsage(), artifacts: this.artifacts };
    return { ...this.last, artifacts: this.artifacts };
  }
}

function readerFor(usageOf: UsageOf): UsageReader {
  return {
    fromJson: (body) => {
      // streamGenerateContent without alt=sse answers one JSON array of chunks: meter it like a stream.
      if (Array.isArray(body)) {
        const meter = new GeminiStreamMeter(usageOf);
        for (const chunk of body) {
          const o = asObject(chunk);
          if (o) meter.pushBody(o);
        }
        const u = meter.usage();
        return u.estimated ? null : u;
      }
      return usageOf(asObject(body));
    },
    stream: () => new GeminiStreamMeter(usageOf),
  };
}

export const geminiReader: UsageReader = readerFor(geminiUsage);
/** For the native generateContent endpoint (billing rule `output_only`). */
export const generateContentReader: UsageReader = readerFor(generateContentUsage);
