// Anthropic Messages SSE -> chat chunks (reference §8.3): an incremental state machine over parsed SSE events.
import type { SseEvent } from '../../meter/stream-meter.ts';
import type { StreamConverter } from '../converter.ts';
import type { ChatContext, FinishReason } from '../chat-completion.ts';
import { ChunkWriter, DONE_FRAME, errorFrame, malformedStreamFrame } from '../chat-completion.ts';
import { messagesErrorObject } from './error.ts';
import { finishFromStop, usageFromMessages } from './finish.ts';
import { isObject, parseJson } from '../../json-guards.ts';

/** What a content block index carries for the client: text, thinking, a tool call (with its dense chat index), or nothing. */
type BlockKind = { kind: 'text' } | { kind: 'thinking' } | { kind: 'tool'; index: number } | { kind: 'skip' };

const TEXT: BlockKind = { kind: 'text' };
const THINKING: BlockKind = { kind: 'thinking' };
const SKIP: BlockKind = { kind: 'skip' };

export class MessagesStreamToChat implements StreamConverter {
  private readonly ctx: ChatContext;
  private state: 'before-start' | 'open' | 'done' | 'failed' = 'before-start';
  private w: ChunkWriter | undefined;
  /** Indexed by Anthropic's content block index (text and thinking blocks count too). */
  private readonly blocks: BlockKind[] = [];
  private tools = 0;
  private stop: unknown = null;
  private startUsage: Record<string, unknown> | undefined;
  private deltaUsage: Record<string, unknown> | undefined;

  constructor(ctx: ChatContext) {
    this.ctx = ctx;
  }

  push(ev: SseEvent): string {
    if (this.state === 'done' || this.state === 'failed') return '';
    const data = parseJson(ev.data);
    if (data === undefined) return this.fail('an event is not valid JSON');
    if (!isObject(data)) return this.fail('an event is not a JSON object');
    // The SDKs dispatch on the event name and fill a missing `type` from it; so do we.
    const name = ev.event ?? (typeof data.type === 'string' ? data.type : '');
    if (name === 'ping') return '';
    if (name === 'error') {
      this.state = 'failed';
      return errorFrame(messagesErrorObject(data.error));
    }
    if (this.state === 'before-start') {
      if (name !== 'message_start') return this.fail(`\`${name}\` arrived before message_start`);
      return this.start(data);
    }
    const w = this.w!;
    switch (name) {
      case 'content_block_start':
        return this.blockStart(w, data);
      case 'content_block_delta':
        return this.blockDelta(w, data);
      case 'content_block_stop':
        return '';
      case 'message_delta': {
        const d = isObject(data.delta) ? data.delta : {};
        if (d.stop_reason !== undefined && d.stop_reason !== null) this.stop = d.stop_reason;
        // Figures in message_delta are cumulative: later ones replace earlier ones.
        if (isObject(data.usage)) this.deltaUsage = { ...this.deltaUsage, ...data.usage };
        return '';
      }
      case 'message_stop':
        return this.finish(w);
      case 'message_start':
        return this.fail('a second message_start arrived');
      default:
        // Anthropic may add event types; a converted stream cannot know what an unknown one would have said.
        return this.fail(`unknown event \`${name}\``);
    }
  }

  end(): string {
    if (this.state === 'done' || this.state === 'failed') return '';
    return this.fail('the stream ended before message_stop');
  }

  private fail(what: string): string {
    this.state = 'failed';
    return malformedStreamFrame(what);
  }

  private start(data: Record<string, unknown>): string {
    const m = isObject(data.message) ? data.message : {};
    this.w = new ChunkWriter(typeof m.id === 'string' ? m.id : this.ctx.id, this.ctx.created, typeof m.model === 'string' ? m.model : this.ctx.model);
    if (isObject(m.usage)) this.startUsage = m.usage;
    this.state = 'open';
    return this.w.delta(0, { role: 'assistant', content: '' });
  }

  private blockStart(w: ChunkWriter, data: Record<string, unknown>): string {
    const index = data.index;
    const b = data.content_block;
    if (typeof index !== 'number' || !isObject(b)) return this.fail('content_block_start without an index or a block');
    if (b.type === 'text') {
      this.blocks[index] = TEXT;
      return typeof b.text === 'string' && b.text !== '' ? w.delta(0, { content: b.text }) : '';
    }
    if (b.type === 'thinking') {
      this.blocks[index] = THINKING;
      return typeof b.thinking === 'string' && b.thinking !== '' ? w.delta(0, { reasoning_content: b.thinking }) : '';
    }
    if (b.type === 'tool_use' && typeof b.id === 'string' && typeof b.name === 'string') {
      // Chat counts tool calls densely; Anthropic's index counts every block.
      const t = this.tools++;
      this.blocks[index] = { kind: 'tool', index: t };
      let out = w.delta(0, { tool_calls: [{ index: t, id: b.id, type: 'function', function: { name: b.name, arguments: '' } }] });
      if (isObject(b.input) && Object.keys(b.input).length > 0) out += w.delta(0, { tool_calls: [{ index: t, function: { arguments: JSON.stringify(b.input) } }] });
      return out;
    }
    // redacted_thinking, server tools and their results have no chat equivalent.
    this.blocks[index] = SKIP;
    return '';
  }

  private blockDelta(w: ChunkWriter, data: Record<string, unknown>): string {
    const index = data.index;
    const block = typeof index === 'number' ? this.blocks[index] : undefined;
    if (!block) return this.fail('content_block_delta for a block that never started');
    const d = isObject(data.delta) ? data.delta : {};
    switch (d.type) {
      case 'text_delta':
        return block.kind === 'text' && typeof d.text === 'string' && d.text !== '' ? w.delta(0, { content: d.text }) : '';
      case 'thinking_delta':
        return block.kind === 'thinking' && typeof d.thinking === 'string' && d.thinking !== '' ? w.delta(0, { reasoning_content: d.thinking }) : '';
      case 'input_json_delta':
        if (block.kind !== 'tool' || typeof d.partial_json !== 'string' || d.partial_json === '') return '';
        return w.delta(0, { tool_calls: [{ index: block.index, function: { arguments: d.partial_json } }] });
      default:
        // signature_delta, citations_delta: nothing a chat client can hold.
        return '';
    }
  }

  private finish(w: ChunkWriter): string {
    this.state = 'done';
    const reason: FinishReason = finishFromStop(this.stop, this.tools > 0);
    let out = w.finish(0, reason);
    if (this.startUsage || this.deltaUsage) out += w.usage(usageFromMessages({ ...this.startUsage, ...this.deltaUsage })!);
    return out + DONE_FRAME;
  }
}
