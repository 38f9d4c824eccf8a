// Chat request -> Anthropic Messages request (reference §8.1). Pure: what cannot be said to Anthropic is a 400 here.
import { GatewayError } from '../../errors.ts';
import { imagePartUrl, parseDataUrl } from '../data-url.ts';
import { isObject } from '../../json-guards.ts';

/** `max_tokens` is required by Anthropic and optional in chat: this fills it when the client gave none. */
export const DEFAULT_MAX_TOKENS = 4096;

/** `reasoning_effort` to an extended-thinking budget (Anthropic needs >= 1024 and < max_tokens). */
export const THINKING_BUDGETS: Readonly<Record<string, number>> = { minimal: 1024, low: 1024, medium: 2048, high: 4096, xhigh: 8192, max: 16384 };

const MIN_THINKING_BUDGET = 1024;
const IMAGE_TYPES = new Set(['image/jpeg', 'image/png', 'image/gif', 'image/webp']);

export interface MessagesRequestOptions {
  /** The upstream model id. */
  model: string;
  defaultMaxTokens?: number;
}

type Block = Record<string, unknown>;
interface Turn {
  role: 'user' | 'assistant';
  content: Block[];
}

const invalid = (message: string, param: string) => new GatewayError('invalid_request', message, { param });

export function chatRequestToMessages(chat: Record<string, unknown>, opts: MessagesRequestOptions): Record<string, unknown> {
  const system: Block[] = [];
  const turns: Turn[] = [];
  const push = (role: Turn['role'], blocks: Block[]): void => {
    if (blocks.length === 0) return;
    const last = turns.at(-1);
    // Anthropic wants alternating turns: consecutive tool results and user text share one user turn.
    if (last && last.role === role) last.content.push(...blocks);
    else turns.push({ role, content: blocks });
  };
  const messages = chat.messages as unknown[];
  let lastAssistantCalledTools = false;
  messages.forEach((m, i) => {
    const param = `messages[${i}]`;
    if (!isObject(m)) throw invalid(`${param} must be an object.`, param);
    switch (m.role) {
      case 'system':
      case 'developer':
        system.push(...textBlocks(m.content, `${param}.content`));
        break;
      case 'user':
        push('user', userBlocks(m.content, `${param}.content`));
        break;
      case 'assistant': {
        const blocks = assistantBlocks(m, param);
        lastAssistantCalledTools = blocks.some((b) => b.type === 'tool_use');
        push('assistant', blocks);
        break;
      }
      case 'tool':
        push('user', [toolResult(m, param)]);
        break;
      default:
        throw invalid(`${param}.role ${JSON.stringify(m.role)} is not supported by this model's upstream (use system, developer, user, assistant or tool).`, `${param}.role`);
    }
  });
  if (turns.length === 0) throw invalid('At least one user or assistant message with content is required.', 'messages');

  if (typeof chat.n === 'number' && chat.n > 1) throw invalid("'n' greater than 1 is not supported by this model's upstream.", 'n');
  const requested = positiveInt(chat.max_completion_tokens, 'max_completion_tokens') ?? positiveInt(chat.max_tokens, 'max_tokens');
  let budget = thinkingBudget(chat);
  // A tool loop continued with thinking on needs the signed thinking block of the last turn, which chat cannot carry.
  if (lastAssistantCalledTools) budget = undefined;
  let maxTokens = requested ?? opts.defaultMaxTokens ?? DEFAULT_MAX_TOKENS;
  if (budget !== undefined) {
    if (requested === undefined) maxTokens = budget + (opts.defaultMaxTokens ?? DEFAULT_MAX_TOKENS);
    else if (budget >= maxTokens) budget = maxTokens - 1 >= MIN_THINKING_BUDGET ? maxTokens - 1 : undefined;
  }

  const out: Record<string, unknown> = { model: opts.model, max_tokens: maxTokens };
  if (system.length > 0) out.system = system;
  out.messages = turns;
  if (budget !== undefined) out.thinking = { type: 'enabled', budget_tokens: budget };
  else {
    // Extended thinking requires the default sampling; without it these map one to one (temperature clamped to 0..1).
    if (typeof chat.temperature === 'number') out.temperature = Math.min(Math.max(chat.temperature, 0), 1);
    if (typeof chat.top_p === 'number') out.top_p = chat.top_p;
    if (typeof chat.top_k === 'number') out.top_k = chat.top_k;
  }
  const stop = stopSequences(chat.stop);
  if (stop) out.stop_sequences = stop;
  const tools = convertTools(chat.tools, chat.tool_choice);
  if (tools.length > 0) {
    out.tools = tools;
    const choice = toolChoice(chat.tool_choice, chat.parallel_tool_calls);
    if (choice) out.tool_choice = choice;
  }
  if (typeof chat.user === 'string' && chat.user !== '') out.metadata = { user_id: chat.user };
  if (chat.stream === true) out.stream = true;
  return out;
}

function positiveInt(v: unknown, param: string): number | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1) throw invalid(`'${param}' must be a positive integer.`, param);
  return v;
}

function thinkingBudget(chat: Record<string, unknown>): number | undefined {
  const t = chat.thinking;
  // Some chat clients (Zhipu style) send `thinking` directly; honour an explicit budget, else a medium one.
  if (isObject(t)) {
    if (t.type === 'enabled') return typeof t.budget_tokens === 'number' && t.budget_tokens >= MIN_THINKING_BUDGET ? Math.floor(t.budget_tokens) : THINKING_BUDGETS.medium;
    return undefined;
  }
  const effort = chat.reasoning_effort;
  if (typeof effort !== 'string' || effort === 'none') return undefined;
  const b = THINKING_BUDGETS[effort];
  if (b === undefined) throw invalid(`'reasoning_effort' ${JSON.stringify(effort)} is not one of ${Object.keys(THINKING_BUDGETS).join(', ')}, none.`, 'reasoning_effort');
  return b;
}

function cacheControl(part: Record<string, unknown>, block: Block): Block {
  // Non-standard but common on chat parts (OpenRouter, LiteLLM): the prompt-cache breakpoint goes along unchanged.
  if (isObject(part.cache_control)) block.cache_control = part.cache_control;
  return block;
}

function textBlocks(content: unknown, param: string): Block[] {
  if (typeof content === 'string') return content === '' ? [] : [{ type: 'text', text: content }];
  if (!Array.isArray(content)) throw invalid(`${param} must be a string or an array of text parts.`, param);
  const out: Block[] = [];
  content.forEach((p, j) => {
    if (!isObject(p) || p.type !== 'text' || typeof p.text !== 'string') throw invalid(`${param}[${j}] must be a text part.`, `${param}[${j}]`);
    if (p.text !== '') out.push(cacheControl(p, { type: 'text', text: p.text }));
  });
  return out;
}

function userBlocks(content: unknown, param: string): Block[] {
  if (typeof content === 'string' || content === undefined || content === null) return textBlocks(content ?? '', param);
  if (!Array.isArray(content)) throw invalid(`${param} must be a string or an array of content parts.`, param);
  const out: Block[] = [];
  content.forEach((p, j) => {
    const at = `${param}[${j}]`;
    if (!isObject(p)) throw invalid(`${at} must be an object.`, at);
    switch (p.type) {
      case 'text':
        if (typeof p.text !== 'string') throw invalid(`${at}.text must be a string.`, at);
        if (p.text !== '') out.push(cacheControl(p, { type: 'text', text: p.text }));
        break;
      case 'image_url':
        out.push(cacheControl(p, imageBlock(imagePartUrl(p), at)));
        break;
      case 'file':
        out.push(cacheControl(p, fileBlock(p.file, at)));
        break;
      default:
        throw invalid(`${at}: content parts of type ${JSON.stringify(p.type)} are not supported by this model's upstream.`, at);
    }
  });
  return out;
}

function imageBlock(url: string | undefined, at: string): Block {
  if (!url) throw invalid(`${at}.image_url.url is required.`, at);
  if (/^https?:\/\//i.test(url)) return { type: 'image', source: { type: 'url', url } };
  const d = parseDataUrl(url);
  if (!d) throw invalid(`${at}.image_url.url must be an http(s) URL or a base64 data: URL.`, at);
  if (d.mediaType === 'application/pdf') return { type: 'document', source: { type: 'base64', media_type: d.mediaType, data: d.data } };
  if (!IMAGE_TYPES.has(d.mediaType)) throw invalid(`${at}: image type ${d.mediaType} is not supported (use jpeg, png, gif or webp).`, at);
  return { type: 'image', source: { type: 'base64', media_type: d.mediaType, data: d.data } };
}

function fileBlock(file: unknown, at: string): Block {
  const data = isObject(file) && typeof file.file_data === 'string' ? parseDataUrl(file.file_data) : undefined;
  if (!data) throw invalid(`${at}: only files given inline as a base64 data: URL in file.file_data are supported by this model's upstream.`, at);
  if (data.mediaType === 'application/pdf') return { type: 'document', source: { type: 'base64', media_type: data.mediaType, data: data.data } };
  if (data.mediaType === 'text/plain') return { type: 'document', source: { type: 'text', media_type: 'text/plain', data: Buffer.from(data.data, 'base64').toString('utf8') } };
  if (IMAGE_TYPES.has(data.mediaType)) return { type: 'image', source: { type: 'base64', media_type: data.mediaType, data: data.data } };
  throw invalid(`${at}: file type ${data.mediaType} is not supported (use pdf, plain text or an image).`, at);
}

function assistantBlocks(m: Record<string, unknown>, param: string): Block[] {
  const out: Block[] = [];
  const c = m.content;
  if (typeof c === 'string') {
    if (c !== '') out.push({ type: 'text', text: c });
  } else if (Array.isArray(c)) {
    c.forEach((p, j) => {
      if (!isObject(p)) throw invalid(`${param}.content[${j}] must be an object.`, `${param}.content[${j}]`);
      // A refusal part has nothing Anthropic could continue from.
      if (p.type === 'text' && typeof p.text === 'string' && p.text !== '') out.push(cacheControl(p, { type: 'text', text: p.text }));
    });
  }
  const calls = m.tool_calls;
  if (Array.isArray(calls)) {
    calls.forEach((tc, j) => {
      const at = `${param}.tool_calls[${j}]`;
      if (!isObject(tc) || !isObject(tc.function) || typeof tc.id !== 'string' || typeof tc.function.name !== 'string') {
        throw invalid(`${at} must be a function tool call with an id and a function name.`, at);
      }
      out.push({ type: 'tool_use', id: tc.id, name: tc.function.name, input: parseArguments(tc.function.arguments, `${at}.function.arguments`) });
    });
  }
  return out;
}

function parseArguments(args: unknown, at: string): unknown {
  if (args === undefined || args === null || args === '') return {};
  if (typeof args !== 'string') throw invalid(`${at} must be a JSON string.`, at);
  let v: unknown;
  try {
    v = JSON.parse(args);
  } catch {
    throw invalid(`${at} is not valid JSON.`, at);
  }
  if (!isObject(v)) throw invalid(`${at} must encode a JSON object.`, at);
  return v;
}

function toolResult(m: Record<string, unknown>, param: string): Block {
  if (typeof m.tool_call_id !== 'string' || m.tool_call_id === '') throw invalid(`${param}.tool_call_id is required.`, `${param}.tool_call_id`);
  const block: Block = { type: 'tool_result', tool_use_id: m.tool_call_id };
  if (typeof m.content === 'string') {
    if (m.content !== '') block.content = m.content;
  } else if (Array.isArray(m.content)) {
    const blocks = textBlocks(m.content, `${param}.content`);
    if (blocks.length > 0) block.content = blocks;
  } else if (m.content !== undefined && m.content !== null) throw invalid(`${param}.content must be a string or text parts.`, `${param}.content`);
  return block;
}

function stopSequences(stop: unknown): string[] | undefined {
  if (typeof stop === 'string') return stop === '' ? undefined : [stop];
  if (!Array.isArray(stop)) return undefined;
  const list = stop.filter((s): s is string => typeof s === 'string' && s !== '');
  return list.length > 0 ? list : undefined;
}

function convertTools(tools: unknown, choice: unknown): Block[] {
  if (!Array.isArray(tools)) return [];
  // `allowed_tools` narrows the offered tools; Anthropic has no such filter, so only the allowed ones are sent.
  const allowed = isObject(choice) && choice.type === 'allowed_tools' && isObject(choice.allowed_tools) && Array.isArray(choice.allowed_tools.tools) ? new Set(choice.allowed_tools.tools.map((t) => (isObject(t) && isObject(t.function) ? t.function.name : undefined))) : undefined;
  const out: Block[] = [];
  tools.forEach((t, i) => {
    const at = `tools[${i}]`;
    if (!isObject(t) || t.type !== 'function' || !isObject(t.function) || typeof t.function.name !== 'string') {
      throw invalid(`${at}: only function tools are supported by this model's upstream.`, at);
    }
    const f = t.function;
    if (allowed && !allowed.has(f.name)) return;
    const schema: Record<string, unknown> = { type: 'object', ...(isObject(f.parameters) ? f.parameters : {}) };
    // A null `required` is rejected upstream; an absent one means the same.
    if (schema.required === null) delete schema.required;
    const tool: Block = { name: f.name };
    if (typeof f.description === 'string') tool.description = f.description;
    tool.input_schema = schema;
    out.push(cacheControl(t, tool));
  });
  return out;
}

function toolChoice(choice: unknown, parallel: unknown): Block | undefined {
  let out: Block | undefined;
  if (choice === 'none') return { type: 'none' };
  if (choice === 'required') out = { type: 'any' };
  else if (choice === 'auto' || choice === undefined || choice === null) out = parallel === false ? { type: 'auto' } : undefined;
  else if (isObject(choice) && choice.type === 'function' && isObject(choice.function) && typeof choice.function.name === 'string') out = { type: 'tool', name: choice.function.name };
  else if (isObject(choice) && choice.type === 'allowed_tools' && isObject(choice.allowed_tools)) out = { type: choice.allowed_tools.mode === 'required' ? 'any' : 'auto' };
  else throw invalid("'tool_choice' must be none, auto, required or a function choice.", 'tool_choice');
  if (out && parallel === false) out.disable_parallel_tool_use = true;
  return out;
}
