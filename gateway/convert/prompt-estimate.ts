// An offline count of a chat prompt's tokens, for the one place an answer needs a figure before the upstream
// reports it: message_start of a messages stream served over chat (Anthropic clients such as LangChain read input
// tokens only there). It is an estimate and is never billed: message_delta carries the upstream's exact figures.
// The ranks ship inside js-tiktoken (no download); they load once, in the background, at start.
import type { Tiktoken } from 'js-tiktoken/lite';

let o200k: Tiktoken | undefined;
let cl100k: Tiktoken | undefined;
let loading: Promise<void> | undefined;

/** Loads the encodings (a few MB) off the request path; estimates fall back to characters / 4 until then. */
export function preloadTokenizers(): Promise<void> {
  loading ??= (async () => {
    const [{ Tiktoken }, o, c] = await Promise.all([import('js-tiktoken/lite'), import('js-tiktoken/ranks/o200k_base'), import('js-tiktoken/ranks/cl100k_base')]);
    o200k = new Tiktoken(o.default);
    cl100k = new Tiktoken(c.default);
  })();
  return loading;
}

/** The encoding of the upstream model's family: o200k for the GPT-4o / 4.1 / 5 and o-series, cl100k otherwise. */
function encodingFor(model: string): Tiktoken | undefined {
  return /gpt-4o|gpt-4\.1|gpt-5|(^|\/)o\d|chatgpt/i.test(model) ? o200k : cl100k;
}

// Per-message framing OpenAI documents for chat prompts: 3 tokens a message, 3 to prime the answer.
const PER_MESSAGE = 3;
const REPLY_PRIMING = 3;

/** Tokens of the chat request's messages and tools as the upstream's model family counts them (an estimate). */
export function estimateChatPromptTokens(chat: Record<string, unknown>, model: string): number {
  const enc = encodingFor(model);
  const count = (text: string) => (enc ? enc.encode(text).length : Math.ceil(text.length / 4));
  let n = REPLY_PRIMING;
  const messages = Array.isArray(chat.messages) ? chat.messages : [];
  for (const m of messages) {
    n += PER_MESSAGE;
    const msg = m as Record<string, unknown>;
    if (typeof msg.role === 'string') n += count(msg.role);
    n += countContent(msg.content, count);
    if (Array.isArray(msg.tool_calls)) n += count(JSON.stringify(msg.tool_calls));
  }
  if (Array.isArray(chat.tools)) n += count(JSON.stringify(chat.tools));
  return n;
}

function countContent(content: unknown, count: (text: string) => number): number {
  if (typeof content === 'string') return count(content);
  if (!Array.isArray(content)) return 0;
  let n = 0;
  for (const part of content) {
    const p = part as Record<string, unknown>;
    if (typeof p.text === 'string') n += count(p.text);
    // Images and files are priced by the upstream in its own way; a flat figure keeps the estimate in range.
    else if (p.type === 'image_url' || p.type === 'file') n += 85;
  }
  return n;
}
