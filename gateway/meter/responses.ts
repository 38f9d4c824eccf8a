// OpenAI responses usage: input_tokens includes cached_tokens; read from the body or response.completed (docs/contract.md, usage).
import type { Usage } from './usage.ts';
import { emptyUsage } from './usage.ts';
import type { SseEvent, StreamMeter, UsageReader } from './stream-meter.ts';
import { asObject, nonNegativeInt, parseJson } from '../json-guards.ts';
import { stringFieldBytes } from './content-count.ts';

export function responsesUsage(u: unknown): Usage | null {
  const usage = asObject(u);
  if (!usage) return null;
  const prompt = nonNegativeInt(usage.input_tokens);
  const cached = Math.min(nonNegativeInt(asObject(usage.input_tokens_details)?.cached_tokens), prompt);
  return {
    input: prompt - cached,
    output: nonNegativeInt(usage.output_tokens),
    cacheRead: cached,
    cacheWrite: 0,
    reasoning: nonNegativeInt(asObject(usage.output_tokens_details)?.reasoning_tokens),
    artifacts: 0,
    explicitCache: false,
    estimated: false,
    detail: usage,
  };
}

const TERMINAL = new Set(['response.completed', 'response.failed', 'response.incomplete']);

function terminalTypeIn(data: string): string | undefined {
  // Cheap substring test first: only the terminal event is ever parsed.
  if (!data.includes('"response.')) return undefined;
  for (const t of TERMINAL) if (data.includes(`"${t}"`)) return String(asObject(parseJson(data))?.type ?? '');
  return undefined;
}

/**
 * `response.*.delta` events carry the output as it is made (text, refusal, function and custom-tool arguments,
 * reasoning text and summaries); the `.done` events repeat it whole and are not counted. Audio deltas are base64.
 */
function isContentDelta(ev: SseEvent): boolean {
  const type = ev.event ?? DELTA_TYPE.exec(ev.data)?.[1];
  return type !== undefined && type.endsWith('.delta') && !type.includes('audio');
}
// Without `event:` lines the type leads the data (the providers write it first).
const DELTA = ['delta'] as const;
const DELTA_TYPE = /^\{\s*"type"\s*:\s*"(response\.[a-z_.]+\.delta)"/;

class ResponsesStreamMeter implements StreamMeter {
  done = false;
  contentBytes = 0;
  countedBytes = 0;
  private last: Usage | null = null;
  push(ev: SseEvent): void {
    if (isContentDelta(ev)) {
      this.contentBytes += stringFieldBytes(ev.data, DELTA);
      return;
    }
    // The event name equals data.type; a relay that drops `event:` lines still leaves the type in the data.
    const type = ev.event ?? terminalTypeIn(ev.data);
    if (type === undefined || !TERMINAL.has(type)) return;
    const u = responsesUsage(asObject(asObject(parseJson(ev.data))?.response)?.usage);
    if (u) {
      this.last = u;
      this.countedBytes = this.contentBytes;
    }
    this.done = true;
  }
  usage(): Usage {
    return this.last ?? emptyUsage();
  }
}

export const responsesReader: UsageReader = {
  fromJson: (body) => responsesUsage(asObject(body)?.usage),
  usageMember: 'usage',
  stream: () => new ResponsesStreamMeter(),
};
