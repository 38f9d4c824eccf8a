// OpenAI chat SSE -> Anthropic messages SSE: an incremental state machine over parsed events (reference §2.5, §8.4).
// Anthropic blocks are strictly sequential (start, deltas, stop, then the next index); chat interleaves reasoning,
// text and tool-call fragments freely, so a change of kind closes the open block and opens the next one.
import type { StreamConverter } from '../converter.ts';
import type { SseEvent } from '../../meter/stream-meter.ts';
import type { ChatToMessagesContext } from './response.ts';
import { matchedStopSequence, messageId, messagesUsageFromChat, reasoningText, stopReasonFromChat } from './response.ts';
import { messagesErrorEvent, streamErrorType } from './error.ts';
import { asObject, parseJson } from '../../json-guards.ts';

type Obj = Record<string, unknown>;
type BlockKind = 'thinking' | 'text' | 'tool';

export class ChatToMessagesStream implements StreamConverter {
  private readonly ctx: ChatToMessagesContext;
  private started = false;
  /** [DONE] handled or an error sent: nothing more goes out. */
  private closed = false;
  private nextIndex = 0;
  private openKind: BlockKind | undefined;
  private openIndex = -1;
  /** Chat tool_calls[].index of the open tool block. */
  private openTool = -1;
  private readonly toolsSeen = new Set<number>();
  private finish: unknown = null;
  private matched: string | null = null;
  private usage: unknown = undefined;

  constructor(ctx: ChatToMessagesContext) {
    this.ctx = ctx;
  }

  push(ev: SseEvent): string {
    if (this.closed) return '';
    // Chat streams carry no event names; anything named is not a chat chunk.
    if (ev.event !== undefined && ev.event !== 'message') return this.fail('api_error', `The upstream stream sent an unexpected "${ev.event}" event.`);
    if (ev.data === '[DONE]') return this.complete();
    const parsed = parseJson(ev.data);
    if (parsed === undefined) return this.fail('api_error', 'The upstream stream sent a malformed event.');
    const chunk = asObject(parsed);
    if (!chunk) return this.fail('api_error', 'The upstream stream sent a malformed event.');
    const err = asObject(chunk.error);
    if (err) return this.fail(streamErrorType(err), typeof err.message === 'string' && err.message !== '' ? err.message : 'The upstream reported an error mid-stream.');
    const choices = chunk.choices;
    if (!Array.isArray(choices) && !asObject(chunk.usage)) return this.fail('api_error', 'The upstream stream sent an event that is not a chat chunk.');
    let out = this.started ? '' : this.start(chunk);
    if (asObject(chunk.usage)) this.usage = chunk.usage;
    if (Array.isArray(choices)) {
      for (const c of choices) {
        const choice = asObject(c);
        // Only the first choice: the request never asks for n > 1.
        if (!choice || (choice.index !== undefined && choice.index !== 0)) continue;
        out += this.delta(asObject(choice.delta));
        if (this.closed) return out;
        if (choice.finish_reason !== null && choice.finish_reason !== undefined) {
          this.finish = choice.finish_reason;
          this.matched = matchedStopSequence(choice, this.ctx.stopSequences);
          out += this.closeBlock();
        }
      }
    }
    return out;
  }

  end(): string {
    if (this.closed) return '';
    return this.fail('api_error', 'The upstream stream ended before it was complete.');
  }

  private start(chunk: Obj): string {
    this.started = true;
    const model = typeof chunk.model === 'string' && chunk.model !== '' ? chunk.model : this.ctx.fallbackModel;
    // Chat reports usage only at the end: message_start carries an offline estimate of the prompt (clients that read
    // input tokens only there see a real figure), message_delta the upstream's exact figures, which are what is billed.
    return frame('message_start', {
      type: 'message_start',
      message: {
        id: messageId(chunk.id, this.ctx.fallbackId),
        type: 'message',
        role: 'assistant',
        model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: this.ctx.estimateInputTokens?.() ?? 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 0 },
      },
    });
  }

  private delta(d: Obj | undefined): string {
    if (!d) return '';
    let out = '';
    const thinking = reasoningText(d);
    if (thinking !== '') out += this.ensure('thinking') + deltaFrame(this.openIndex, 'thinking_delta', 'thinking', thinking);
    const text = typeof d.content === 'string' ? d.content : typeof d.refusal === 'string' ? d.refusal : '';
    if (text !== '') out += this.ensure('text') + deltaFrame(this.openIndex, 'text_delta', 'text', text);
    if (Array.isArray(d.tool_calls)) {
      for (const raw of d.tool_calls) {
        out += this.toolFragment(asObject(raw));
        if (this.closed) return out;
      }
    }
    return out;
  }

  private toolFragment(tc: Obj | undefined): string {
    if (!tc) return '';
    const fn = asObject(tc.function);
    // Upstreams that omit the index send one call at a time: a fragment with an id starts the next one.
    const index = typeof tc.index === 'number' ? tc.index : typeof tc.id === 'string' && tc.id !== '' ? this.toolsSeen.size : Math.max(this.openTool, 0);
    let out = '';
    if (!this.toolsSeen.has(index)) {
      this.toolsSeen.add(index);
      out += this.closeBlock();
      this.openKind = 'tool';
      this.openIndex = this.nextIndex++;
      this.openTool = index;
      out += frame('content_block_start', {
        type: 'content_block_start',
        index: this.openIndex,
        content_block: {
          type: 'tool_use',
          id: typeof tc.id === 'string' && tc.id !== '' ? tc.id : `toolu_${this.ctx.fallbackId}_${index}`,
          name: typeof fn?.name === 'string' ? fn.name : '',
          input: {},
        },
      });
    } else if (this.openKind !== 'tool' || this.openTool !== index) {
      // Its block is already closed: Anthropic cannot reopen a block, and dropping arguments would run a wrong call.
      return out + this.fail('api_error', 'The upstream interleaved the arguments of parallel tool calls; they cannot be streamed in order.');
    }
    const args = fn?.arguments;
    if (typeof args === 'string' && args !== '') {
      out += deltaFrame(this.openIndex, 'input_json_delta', 'partial_json', args);
    }
    return out;
  }

  /** Opens a block of this kind unless one is open; closes a block of another kind first. */
  private ensure(kind: 'thinking' | 'text'): string {
    if (this.openKind === kind) return '';
    const out = this.closeBlock();
    this.openKind = kind;
    this.openIndex = this.nextIndex++;
    const block = kind === 'text' ? { type: 'text', text: '' } : { type: 'thinking', thinking: '', signature: '' };
    return out + frame('content_block_start', { type: 'content_block_start', index: this.openIndex, content_block: block });
  }

  private closeBlock(): string {
    if (this.openKind === undefined) return '';
    this.openKind = undefined;
    this.openTool = -1;
    return frame('content_block_stop', { type: 'content_block_stop', index: this.openIndex });
  }

  private complete(): string {
    let out = this.started ? '' : this.start({});
    out += this.closeBlock();
    this.closed = true;
    const stopReason = stopReasonFromChat(this.finish, this.toolsSeen.size > 0, this.matched);
    out += frame('message_delta', {
      type: 'message_delta',
      delta: { stop_reason: stopReason, stop_sequence: stopReason === 'stop_sequence' ? this.matched : null },
      usage: messagesUsageFromChat(this.usage),
    });
    return out + frame('message_stop', { type: 'message_stop' });
  }

  private fail(type: string, message: string): string {
    this.closed = true;
    return messagesErrorEvent(type, message);
  }
}

// The per-token frame, written without building an object first (it is most of a stream's events).
function deltaFrame(index: number, type: string, field: string, value: string): string {
  return `event: content_block_delta\ndata: {"type":"content_block_delta","index":${index},"delta":{"type":"${type}","${field}":${JSON.stringify(value)}}}\n\n`;
}

function frame(event: string, data: unknown): string {
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}
