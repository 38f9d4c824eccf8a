// Gemini generateContent response -> chat completion (reference §8.5).
import type { ChatChoice, ChatCompletion, ChatContext, ChatImage, ChatMessage, ChatToolCall } from '../chat-completion.ts';
import { unexpectedAnswer } from '../chat-completion.ts';
import { finishFromGemini, usageFromGemini } from './finish.ts';
import { geminiToolCallId } from './tool-id.ts';
import { isObject } from '../../json-guards.ts';

export function geminiResponseToChat(body: unknown, ctx: ChatContext): ChatCompletion {
  if (!isObject(body)) throw unexpectedAnswer('the generateContent response is not an object');
  const responseId = typeof body.responseId === 'string' ? body.responseId : ctx.id;
  const choices: ChatChoice[] = [];
  const candidates = Array.isArray(body.candidates) ? body.candidates : [];
  candidates.forEach((c, i) => {
    if (!isObject(c)) return;
    const index = typeof c.index === 'number' ? c.index : i;
    let text: string | undefined;
    let reasoning: string | undefined;
    const calls: ChatToolCall[] = [];
    const images: ChatImage[] = [];
    const parts = isObject(c.content) && Array.isArray(c.content.parts) ? c.content.parts : [];
    for (const p of parts) {
      if (!isObject(p)) continue;
      if (typeof p.text === 'string') {
        if (p.thought === true) reasoning = (reasoning ?? '') + p.text;
        else text = (text ?? '') + p.text;
      } else if (isObject(p.functionCall) && typeof p.functionCall.name === 'string') {
        const id = geminiToolCallId(responseId + (index > 0 ? `_${index}` : ''), calls.length, p.functionCall.id, p.thoughtSignature);
        calls.push({ id, type: 'function', function: { name: p.functionCall.name, arguments: JSON.stringify(p.functionCall.args ?? {}) } });
      } else if (isObject(p.inlineData) && p.thought !== true && typeof p.inlineData.data === 'string') {
        images.push({ type: 'image_url', image_url: { url: `data:${String(p.inlineData.mimeType ?? 'application/octet-stream')};base64,${p.inlineData.data}` } });
      }
    }
    const message: ChatMessage = { role: 'assistant', content: text ?? (calls.length > 0 || images.length > 0 ? null : ''), refusal: null };
    if (reasoning !== undefined) message.reasoning_content = reasoning;
    if (calls.length > 0) message.tool_calls = calls;
    if (images.length > 0) message.images = images;
    choices.push({ index, message, logprobs: null, finish_reason: finishFromGemini(c.finishReason, calls.length > 0) });
  });
  if (choices.length === 0) {
    // A blocked prompt comes back with promptFeedback and no candidates.
    const blocked = isObject(body.promptFeedback) && typeof body.promptFeedback.blockReason === 'string';
    if (!blocked) throw unexpectedAnswer('the generateContent response has no candidates');
    choices.push({ index: 0, message: { role: 'assistant', content: null, refusal: null }, logprobs: null, finish_reason: 'content_filter' });
  }
  const out: ChatCompletion = {
    id: responseId,
    object: 'chat.completion',
    created: ctx.created,
    model: typeof body.modelVersion === 'string' ? body.modelVersion : ctx.model,
    choices,
  };
  const usage = usageFromGemini(body.usageMetadata);
  if (usage) out.usage = usage;
  return out;
}
