// Gemini streamGenerateContent (alt=sse) -> chat chunks (reference §7.4, §8.5). Each upstream chunk holds only new parts;
// Gemini has no terminator, so the finish, usage and [DONE] chunks go out when the upstream closes.
import type { SseEvent } from '../../meter/stream-meter.ts';
import type { StreamConverter } from '../converter.ts';
import type { ChatContext, ChatDelta } from '../chat-completion.ts';
import { ChunkWriter, DONE_FRAME, errorFrame, malformedStreamFrame } from '../chat-completion.ts';
import { geminiErrorObject } from './error.ts';
import { finishFromGemini, usageFromGemini } from './finish.ts';
import { geminiToolCallId } from './tool-id.ts';
import { isObject, parseJson } from '../../json-guards.ts';

interface CandidateState {
  index: number;
  tools: number;
  finish: unknown;
}

export class GeminiStreamToChat implements StreamConverter {
  private readonly ctx: ChatContext;
  private failed = false;
  private w: ChunkWriter | undefined;
  private responseId = '';
  private readonly candidates: CandidateState[] = [];
  private usage: unknown;
  private blocked = false;

  constructor(ctx: ChatContext) {
    this.ctx = ctx;
  }

  push(ev: SseEvent): string {
    if (this.failed) return '';
    const data = parseJson(ev.data);
    if (data === undefined) return this.fail('an event is not valid JSON');
    if (!isObject(data)) return this.fail('an event is not a JSON object');
    if (data.error !== undefined) {
      this.failed = true;
      return errorFrame(geminiErrorObject(data.error));
    }
    if (!this.w) {
      this.responseId = typeof data.responseId === 'string' ? data.responseId : this.ctx.id;
      this.w = new ChunkWriter(this.responseId, this.ctx.created, typeof data.modelVersion === 'string' ? data.modelVersion : this.ctx.model);
    }
    const w = this.w;
    let out = '';
    const candidates = Array.isArray(data.candidates) ? data.candidates : [];
    candidates.forEach((c, i) => {
      if (!isObject(c)) return;
      const index = typeof c.index === 'number' ? c.index : i;
      let st = this.candidates.find((s) => s.index === index);
      if (!st) {
        st = { index, tools: 0, finish: undefined };
        this.candidates.push(st);
        out += w.delta(index, { role: 'assistant', content: '' });
      }
      const parts = isObject(c.content) && Array.isArray(c.content.parts) ? c.content.parts : [];
      for (const p of parts) if (isObject(p)) out += this.part(w, st, p);
      if (c.finishReason !== undefined) st.finish = c.finishReason;
    });
    if (candidates.length === 0 && isObject(data.promptFeedback) && typeof data.promptFeedback.blockReason === 'string') this.blocked = true;
    // usageMetadata is cumulative: the last one is the answer's.
    if (isObject(data.usageMetadata)) this.usage = data.usageMetadata;
    return out;
  }

  end(): string {
    if (this.failed) return '';
    const w = this.w;
    if (!w) return this.fail('the stream ended before any answer');
    let out = '';
    if (this.candidates.length === 0 && this.blocked) {
      out += w.delta(0, { role: 'assistant', content: '' }) + w.finish(0, 'content_filter');
    } else {
      if (!this.candidates.some((c) => c.finish !== undefined)) return this.fail('the stream ended before a finishReason');
      for (const c of [...this.candidates].sort((a, b) => a.index - b.index)) out += w.finish(c.index, finishFromGemini(c.finish, c.tools > 0));
    }
    const usage = usageFromGemini(this.usage);
    if (usage) out += w.usage(usage);
    return out + DONE_FRAME;
  }

  private fail(what: string): string {
    this.failed = true;
    return malformedStreamFrame(what);
  }

  private part(w: ChunkWriter, st: CandidateState, p: Record<string, unknown>): string {
    let delta: ChatDelta | undefined;
    if (typeof p.text === 'string') {
      if (p.text !== '') delta = p.thought === true ? { reasoning_content: p.text } : { content: p.text };
    } else if (isObject(p.functionCall) && typeof p.functionCall.name === 'string') {
      // Gemini sends each call whole: one chunk carries id, name and the complete arguments.
      const t = st.tools++;
      const id = geminiToolCallId(this.responseId + (st.index > 0 ? `_${st.index}` : ''), t, p.functionCall.id, p.thoughtSignature);
      delta = { tool_calls: [{ index: t, id, type: 'function', function: { name: p.functionCall.name, arguments: JSON.stringify(p.functionCall.args ?? {}) } }] };
    } else if (isObject(p.inlineData) && p.thought !== true && typeof p.inlineData.data === 'string') {
      delta = { images: [{ type: 'image_url', image_url: { url: `data:${String(p.inlineData.mimeType ?? 'application/octet-stream')};base64,${p.inlineData.data}` } }] };
    }
    return delta ? w.delta(st.index, delta) : '';
  }
}
