// An offline count of a chat prompt's tokens, for the one place an answer needs a figure before the upstream
// reports it: message_start of a messages stream served over chat (Anthropic clients such as LangChain read input
// tokens only there). It is an estimate and is never billed: message_delta carries the upstream's exact figures.
// The ranks ship inside js-tiktoken (no download). Each encoding loads on the first estimate that needs it, in the
// background (~10 MB and a few hundred ms of CPU, neither of which an idle gateway or one that never converts
// messages over chat should pay); that first estimate, and any before the load ends, uses characters / 4.
import { loadBpeCounter } from './bpe-count.ts';
import type { BpeCounter } from './bpe-count.ts';

type Encoding = 'o200k_base' | 'cl100k_base';
const counters = new Map<Encoding, BpeCounter>();
const loading = new Map<Encoding, Promise<void>>();

function load(name: Encoding): Promise<void> {
  let p = loading.get(name);
  if (!p) {
    p = loadBpeCounter(name).then((c) => void counters.set(name, c));
    loading.set(name, p);
  }
  return p;
}

/** Loads both encodings now (tests, and anyone who wants exact estimates from the first request). */
export async function preloadTokenizers(): Promise<void> {
  await Promise.all([load('o200k_base'), load('cl100k_base')]);
}

/** Called when an encoding failed to load; estimates then stay at characters / 4. */
let onLoadError: (err: Error) => void = () => {};
export function onTokenizerLoadError(handler: (err: Error) => void): void {
  onLoadError = handler;
}

/** The encoding of the upstream model's family: o200k for the GPT-4o / 4.1 / 5 and o-series, cl100k otherwise. */
function encodingFor(model: string): BpeCounter | undefined {
  const name: Encoding = /gpt-4o|gpt-4\.1|gpt-5|(^|\/)o\d|chatgpt/i.test(model) ? 'o200k_base' : 'cl100k_base';
  const c = counters.get(name);
  if (!c && !loading.has(name)) load(name).catch((err: unknown) => onLoadError(err as Error));
  return c;
}

// Per-message framing OpenAI documents for chat prompts: 3 tokens a message, 3 to prime the answer.
const PER_MESSAGE = 3;
const REPLY_PRIMING = 3;

/** Tokens of the chat request's messages and tools as the upstream's model family counts them (an estimate). */
export function estimateChatPromptTokens(chat: Record<string, unknown>, model: string): number {
  const enc = encodingFor(model);
  const count = (text: string) => (enc ? enc.count(text) : Math.ceil(text.length / 4));
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
