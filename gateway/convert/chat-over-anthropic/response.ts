// Anthropic Messages response -> chat completion (reference §8.2).
import type { ChatCompletion, ChatContext, ChatMessage, ChatToolCall } from '../chat-completion.ts';
import { unexpectedAnswer } from '../chat-completion.ts';
import { finishFromStop, usageFromMessages } from './finish.ts';
import { isObject } from '../../json-guards.ts';

export function messagesResponseToChat(body: unknown, ctx: ChatContext): ChatCompletion {
  if (!isObject(body) || !Array.isArray(body.content)) throw unexpectedAnswer('the messages response has no content');
  let text: string | undefined;
  let reasoning: string | undefined;
  const calls: ChatToolCall[] = [];
  for (const b of body.content) {
    if (!isObject(b)) continue;
    if (b.type === 'text' && typeof b.text === 'string') text = (text ?? '') + b.text;
    else if (b.type === 'thinking' && typeof b.thinking === 'string') reasoning = (reasoning ?? '') + b.thinking;
    else if (b.type === 'tool_use' && typeof b.id === 'string' && typeof b.name === 'string') {
      calls.push({ id: b.id, type: 'function', function: { name: b.name, arguments: JSON.stringify(b.input ?? {}) } });
    }
    // redacted_thinking and server-tool blocks have no chat equivalent.
  }
  const message: ChatMessage = { role: 'assistant', content: text ?? (calls.length > 0 ? null : ''), refusal: null };
  if (reasoning !== undefined) message.reasoning_content = reasoning;
  if (calls.length > 0) message.tool_calls = calls;
  const out: ChatCompletion = {
    id: typeof body.id === 'string' ? body.id : ctx.id,
    object: 'chat.completion',
    created: ctx.created,
    model: typeof body.model === 'string' ? body.model : ctx.model,
    choices: [{ index: 0, message, logprobs: null, finish_reason: finishFromStop(body.stop_reason, calls.length > 0) }],
  };
  const usage = usageFromMessages(body.usage);
  if (usage) out.usage = usage;
  return out;
}
