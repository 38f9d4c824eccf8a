// The OpenTelemetry GenAI semantic conventions as tollgate fills them: names, operation and provider values,
// request parameters read from the client's body, and response facts read from the upstream's answer.
import type { Attributes, Span } from '@opentelemetry/api';
import type { SseEvent, StreamMeter } from '../meter/stream-meter.ts';
import { asObject, parseJson } from '../json-guards.ts';
import type { Protocol } from '../snapshot/schema.ts';

export const A = {
  operation: 'gen_ai.operation.name',
  provider: 'gen_ai.provider.name',
  requestModel: 'gen_ai.request.model',
  responseModel: 'gen_ai.response.model',
  responseId: 'gen_ai.response.id',
  finishReasons: 'gen_ai.response.finish_reasons',
  inputTokens: 'gen_ai.usage.input_tokens',
  outputTokens: 'gen_ai.usage.output_tokens',
  cacheReadTokens: 'gen_ai.usage.cache_read.input_tokens',
  cacheCreationTokens: 'gen_ai.usage.cache_creation.input_tokens',
  reasoningTokens: 'gen_ai.usage.reasoning.output_tokens',
  tokenType: 'gen_ai.token.type',
  outputType: 'gen_ai.output.type',
  stream: 'gen_ai.request.stream',
  errorType: 'error.type',
  statusCode: 'http.response.status_code',
  organization: 'tollgate.organization',
  project: 'tollgate.project',
  keyPrefix: 'tollgate.api_key.prefix',
  costPoints: 'tollgate.cost_points',
  endpoint: 'tollgate.endpoint',
  requestId: 'tollgate.request_id',
  model: 'tollgate.model',
  providerId: 'tollgate.provider',
  upstreamModel: 'tollgate.upstream.model',
  attempt: 'tollgate.upstream.attempt',
  estimated: 'tollgate.usage.estimated',
  artifacts: 'tollgate.usage.artifacts',
} as const;

/** gen_ai.operation.name: generateContent and images generate content, embeddings embed; every other route is a chat. */
export function operationOf(protocol: Protocol): string {
  if (protocol === 'embeddings') return 'embeddings';
  return protocol === 'gemini' || protocol === 'images' ? 'generate_content' : 'chat';
}

/** gen_ai.provider.name names the wire format spoken upstream; the configured provider id is tollgate.provider. */
export function providerNameOf(protocol: Protocol): string {
  if (protocol === 'anthropic') return 'anthropic';
  if (protocol === 'gemini') return 'gcp.gemini';
  return 'openai';
}

// Client body field → GenAI request attribute. The protocols' names do not collide, so one table reads any body.
const NUMERIC_PARAMS: [string, string][] = [
  ['max_tokens', 'gen_ai.request.max_tokens'],
  ['max_completion_tokens', 'gen_ai.request.max_tokens'],
  ['max_output_tokens', 'gen_ai.request.max_tokens'],
  ['temperature', 'gen_ai.request.temperature'],
  ['top_p', 'gen_ai.request.top_p'],
  ['top_k', 'gen_ai.request.top_k'],
  ['frequency_penalty', 'gen_ai.request.frequency_penalty'],
  ['presence_penalty', 'gen_ai.request.presence_penalty'],
  ['seed', 'gen_ai.request.seed'],
  ['n', 'gen_ai.request.choice.count'],
];
const GEMINI_PARAMS: [string, string][] = [
  ['maxOutputTokens', 'gen_ai.request.max_tokens'],
  ['temperature', 'gen_ai.request.temperature'],
  ['topP', 'gen_ai.request.top_p'],
  ['topK', 'gen_ai.request.top_k'],
  ['frequencyPenalty', 'gen_ai.request.frequency_penalty'],
  ['presencePenalty', 'gen_ai.request.presence_penalty'],
  ['seed', 'gen_ai.request.seed'],
  ['candidateCount', 'gen_ai.request.choice.count'],
];

/** The request parameters the conventions define, from the client's parsed body (never its content). */
export function requestParams(body: Record<string, unknown>, into: Attributes): void {
  for (const [field, attr] of NUMERIC_PARAMS) {
    const v = body[field];
    if (typeof v === 'number' && Number.isFinite(v) && into[attr] === undefined) into[attr] = v;
  }
  const stop = body.stop_sequences ?? body.stop;
  if (typeof stop === 'string') into['gen_ai.request.stop_sequences'] = [stop];
  else if (Array.isArray(stop) && stop.every((s) => typeof s === 'string')) into['gen_ai.request.stop_sequences'] = stop as string[];
  const gen = asObject(body.generationConfig);
  if (gen) {
    for (const [field, attr] of GEMINI_PARAMS) {
      const v = gen[field];
      if (typeof v === 'number' && Number.isFinite(v)) into[attr] = v;
    }
    const s = gen.stopSequences;
    if (Array.isArray(s) && s.every((x) => typeof x === 'string')) into['gen_ai.request.stop_sequences'] = s as string[];
  }
}

/** Response id, model and finish reasons from an upstream JSON answer, in any of the five protocols. */
export function responseFacts(body: unknown, span: Span): void {
  const b = asObject(body) ?? asObject(Array.isArray(body) ? body.at(-1) : undefined);
  if (!b) return;
  const id = b.id ?? b.responseId;
  if (typeof id === 'string') span.setAttribute(A.responseId, id);
  const model = b.model ?? b.modelVersion;
  if (typeof model === 'string') span.setAttribute(A.responseModel, model);
  const reasons: string[] = [];
  const list = Array.isArray(b.choices) ? b.choices : Array.isArray(b.candidates) ? b.candidates : undefined;
  if (list) {
    for (const c of list) {
      const r = asObject(c)?.finish_reason ?? asObject(c)?.finishReason;
      if (typeof r === 'string') reasons.push(r);
    }
  } else if (typeof b.stop_reason === 'string') reasons.push(b.stop_reason);
  else if (b.object === 'response' && typeof b.status === 'string') reasons.push(String(asObject(b.incomplete_details)?.reason ?? b.status));
  if (reasons.length > 0) span.setAttribute(A.finishReasons, reasons);
}

const FINISH = /"(?:finish_reason|finishReason|stop_reason)"\s*:\s*"([^"\\]+)"/g;
const RESPONSES_TERMINAL: Record<string, string> = { 'response.completed': 'completed', 'response.incomplete': 'incomplete', 'response.failed': 'failed' };

/**
 * Watches a stream's events beside the meter for the response facts. Only the first event is parsed (it carries the
 * id and model in every protocol); finish reasons are read with a pattern from the few events that name one.
 */
export class StreamFacts implements StreamMeter {
  private readonly inner: StreamMeter;
  private readonly span: Span;
  private first = true;
  private readonly reasons: string[] = [];

  constructor(inner: StreamMeter, span: Span) {
    this.inner = inner;
    this.span = span;
  }

  get done(): boolean {
    return this.inner.done;
  }

  usage(): ReturnType<StreamMeter['usage']> {
    return this.inner.usage();
  }

  get contentBytes(): number {
    return this.inner.contentBytes;
  }

  get countedBytes(): number {
    return this.inner.countedBytes;
  }

  push(ev: SseEvent): void {
    this.inner.push(ev);
    const d = ev.data;
    if (this.first && d.startsWith('{')) {
      this.first = false;
      const o = asObject(parseJson(d));
      const r = asObject(o?.message) ?? asObject(o?.response) ?? o;
      if (r) responseFacts({ id: r.id ?? r.responseId, model: r.model ?? r.modelVersion }, this.span);
    }
    const terminal = ev.event !== undefined ? RESPONSES_TERMINAL[ev.event] : undefined;
    if (terminal !== undefined) this.reasons.push(terminal);
    else if (d.includes('inish') || d.includes('stop_reason')) {
      for (const m of d.matchAll(FINISH)) this.reasons.push(m[1]);
    }
  }

  /** Called once the stream ended. */
  flush(): void {
    if (this.reasons.length > 0) this.span.setAttribute(A.finishReasons, this.reasons);
  }
}
