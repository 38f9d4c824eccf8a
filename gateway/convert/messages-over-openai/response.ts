// OpenAI chat completion -> Anthropic message, for messages clients on an `openai`-only model (reference §8.4).
import { GatewayError } from '../../errors.ts';
import { asObject, parseJson } from '../../json-guards.ts';
import { chatUsage as meteredChatUsage } from '../../meter/openai-chat.ts';

type Obj = Record<string, unknown>;

export interface ChatToMessagesContext {
  /** The request's stop_sequences: a matched one reported by the upstream becomes stop_reason "stop_sequence". */
  stopSequences: readonly string[];
  /** Used when the upstream gives no id (and to name synthesized tool ids). */
  fallbackId: string;
  /** Used when the upstream gives no model. */
  fallbackModel: string;
  /** Streams: the prompt's input tokens before the upstream reports them, for message_start (an estimate). */
  estimateInputTokens?: () => number;
}

export interface MessagesUsage {
  input_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
  output_tokens: number;
}

/** Chat usage in Anthropic terms, read by the meter that bills it (input = prompt - cached): one mapping, not two. */
export function messagesUsageFromChat(raw: unknown): MessagesUsage {
  const u = meteredChatUsage(raw);
  if (!u) return { input_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 0 };
  return { input_tokens: u.input, cache_creation_input_tokens: u.cacheWrite, cache_read_input_tokens: u.cacheRead, output_tokens: u.output };
}

/**
 * finish_reason -> stop_reason. A tool call makes it tool_use whatever the upstream said (some upstreams say "stop"),
 * except a cut at the token limit, which stays max_tokens as Anthropic reports it.
 */
export function stopReasonFromChat(finish: unknown, sawToolCall: boolean, matchedStop: string | null): string {
  if (finish === 'length') return 'max_tokens';
  if (sawToolCall || finish === 'tool_calls' || finish === 'function_call') return 'tool_use';
  if (finish === 'content_filter') return 'refusal';
  if (matchedStop !== null) return 'stop_sequence';
  return 'end_turn';
}

/** The stop sequence an upstream says it matched (vLLM `stop_reason`, SGLang `matched_stop`), if it is one the client asked for. */
export function matchedStopSequence(choice: Obj | undefined, stopSequences: readonly string[]): string | null {
  if (!choice || stopSequences.length === 0) return null;
  for (const key of ['stop_reason', 'matched_stop']) {
    const v = choice[key];
    if (typeof v === 'string' && stopSequences.includes(v)) return v;
  }
  return null;
}

/** msg_ ids for the client; the upstream's own id stays recognisable inside. */
export function messageId(upstreamId: unknown, fallback: string): string {
  const id = typeof upstreamId === 'string' && upstreamId !== '' ? upstreamId : fallback;
  return id.startsWith('msg_') ? id : `msg_${id.replace(/^chatcmpl-/, '')}`;
}

/** Reasoning text under either name chat upstreams use for it. */
export function reasoningText(m: Obj | undefined): string {
  const r = m?.reasoning_content ?? m?.reasoning;
  return typeof r === 'string' ? r : '';
}

export function chatResponseToMessages(body: unknown, ctx: ChatToMessagesContext): Obj {
  const res = asObject(body);
  const choices = res?.choices;
  if (!res || !Array.isArray(choices)) throw new GatewayError('upstream_unavailable', 'The upstream answered with a body that is not a chat completion.');
  const choice = asObject(choices[0]);
  const message = asObject(choice?.message);
  const content: Obj[] = [];
  const thinking = reasoningText(message);
  if (thinking !== '') content.push({ type: 'thinking', thinking, signature: '' });
  const text = messageText(message);
  if (text !== '') content.push({ type: 'text', text });
  let tools = 0;
  const calls = Array.isArray(message?.tool_calls) ? message.tool_calls : [];
  for (const raw of calls) {
    const call = asObject(raw);
    const fn = asObject(call?.function);
    if (!fn) continue;
    content.push({
      type: 'tool_use',
      id: typeof call?.id === 'string' && call.id !== '' ? call.id : `toolu_${ctx.fallbackId}_${tools}`,
      name: typeof fn.name === 'string' ? fn.name : '',
      input: toolInput(fn.arguments),
    });
    tools++;
  }
  const matched = matchedStopSequence(choice, ctx.stopSequences);
  const stopReason = stopReasonFromChat(choice?.finish_reason, tools > 0, matched);
  return {
    id: messageId(res.id, ctx.fallbackId),
    type: 'message',
    role: 'assistant',
    model: typeof res.model === 'string' && res.model !== '' ? res.model : ctx.fallbackModel,
    content,
    stop_reason: stopReason,
    stop_sequence: stopReason === 'stop_sequence' ? matched : null,
    usage: messagesUsageFromChat(res.usage),
  };
}

function messageText(m: Obj | undefined): string {
  const c = m?.content;
  if (typeof c === 'string') return c;
  let text = '';
  if (Array.isArray(c)) for (const p of c) if (typeof asObject(p)?.text === 'string') text += asObject(p)!.text as string;
  // A refusal is the model's answer; Anthropic has no separate field for its text.
  if (text === '' && typeof m?.refusal === 'string') text = m.refusal;
  return text;
}

// tool_use.input must be an object; arguments that are not a JSON object (truncated, malformed) become {}.
function toolInput(args: unknown): Obj {
  if (typeof args !== 'string' || args.trim() === '') return {};
  return asObject(parseJson(args)) ?? {};
}
