// Anthropic messages request -> OpenAI chat request, for models that speak only `openai` (docs/contract.md, endpoints; reference §8.4).
// Pure: throws GatewayError('invalid_request') for what cannot be converted, never touches I/O.
import { GatewayError } from '../../errors.ts';
import { asObject } from '../../json-guards.ts';

type Obj = Record<string, unknown>;

export interface MessagesToChatOptions {
  /** The model's capabilities.drop: fields removed from the chat body (and the max-tokens field chosen by it). */
  drop: readonly string[];
}

// Extended-thinking budgets bucketed into chat's reasoning_effort (the thresholds LiteLLM uses, reference §8.1).
export function effortForBudget(budget: number): 'low' | 'medium' | 'high' {
  if (budget >= 4096) return 'high';
  if (budget >= 2048) return 'medium';
  return 'low';
}

const EFFORTS = new Set(['none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max']);

export function messagesRequestToChat(body: Obj, opts: MessagesToChatOptions): Obj {
  const chat: Obj = { model: body.model };
  const messages: Obj[] = [];
  const system = systemMessage(body.system);
  if (system) messages.push(system);
  const input = body.messages;
  if (!Array.isArray(input) || input.length === 0) throw bad('messages: at least one message is required', 'messages');
  input.forEach((m, i) => convertMessage(m, i, messages));
  chat.messages = messages;

  if (body.max_tokens !== undefined) {
    const max = body.max_tokens;
    if (typeof max !== 'number' || !Number.isInteger(max) || max < 1) throw bad('max_tokens: must be a positive integer', 'max_tokens');
    // Newer OpenAI models refuse max_tokens; a model that drops max_completion_tokens gets the legacy field.
    chat[opts.drop.includes('max_completion_tokens') ? 'max_tokens' : 'max_completion_tokens'] = max;
  }
  copyNumber(body, chat, 'temperature');
  copyNumber(body, chat, 'top_p');
  if (body.stop_sequences !== undefined) {
    if (!Array.isArray(body.stop_sequences) || !body.stop_sequences.every((s) => typeof s === 'string')) throw bad('stop_sequences: must be a list of strings', 'stop_sequences');
    if (body.stop_sequences.length > 0) chat.stop = body.stop_sequences;
  }
  if (body.stream === true) {
    chat.stream = true;
    // The usage chunk is what bills a converted stream and fills message_delta.usage.
    chat.stream_options = { include_usage: true };
  }
  const tools = convertTools(body.tools);
  if (tools) chat.tools = tools;
  convertToolChoice(body.tool_choice, chat, tools !== undefined);
  const effort = reasoningEffort(body);
  if (effort) chat.reasoning_effort = effort;
  const userId = asObject(body.metadata)?.user_id;
  if (typeof userId === 'string' && userId !== '') chat.user = userId;
  const format = outputFormat(body);
  if (format) chat.response_format = format;

  for (const f of opts.drop) delete chat[f];
  return chat;
}

function systemMessage(system: unknown): Obj | undefined {
  if (system === undefined || system === null) return undefined;
  if (typeof system === 'string') return system === '' ? undefined : { role: 'system', content: system };
  if (!Array.isArray(system)) throw bad('system: must be a string or a list of text blocks', 'system');
  const parts = system.map((b, i) => {
    const block = asObject(b);
    if (block?.type !== 'text' || typeof block.text !== 'string') throw bad(`system.${i}: only text blocks are allowed`, 'system');
    return block.text;
  });
  if (parts.length === 0) return undefined;
  // One block stays a plain string (every chat upstream takes that); several keep their boundaries as text parts.
  return { role: 'system', content: parts.length === 1 ? parts[0] : parts.map((text) => ({ type: 'text', text })) };
}

function convertMessage(raw: unknown, i: number, out: Obj[]): void {
  const m = asObject(raw);
  if (!m) throw bad(`messages.${i}: must be an object`, 'messages');
  const role = m.role;
  const content = m.content;
  if (role === 'system') {
    const s = systemMessage(content);
    if (s) out.push(s);
    return;
  }
  if (role !== 'user' && role !== 'assistant') throw bad(`messages.${i}.role: must be "user" or "assistant"`, 'messages');
  if (typeof content === 'string') {
    out.push({ role, content });
    return;
  }
  if (!Array.isArray(content)) throw bad(`messages.${i}.content: must be a string or a list of content blocks`, 'messages');
  if (role === 'assistant') out.push(assistantMessage(content, i));
  else userMessages(content, i, out);
}

function assistantMessage(blocks: unknown[], i: number): Obj {
  let text = '';
  const toolCalls: Obj[] = [];
  blocks.forEach((b, j) => {
    const block = asObject(b);
    const where = `messages.${i}.content.${j}`;
    switch (block?.type) {
      case 'text':
        text += str(block.text, `${where}.text`);
        break;
      case 'tool_use':
        toolCalls.push({
          id: str(block.id, `${where}.id`),
          type: 'function',
          function: { name: str(block.name, `${where}.name`), arguments: JSON.stringify(block.input ?? {}) },
        });
        break;
      // Chat has no request field for earlier reasoning: thinking blocks (and their signatures) stay behind.
      case 'thinking':
      case 'redacted_thinking':
        break;
      default:
        throw unsupportedBlock(block, where);
    }
  });
  const msg: Obj = { role: 'assistant', content: text === '' && toolCalls.length > 0 ? null : text };
  if (toolCalls.length > 0) msg.tool_calls = toolCalls;
  return msg;
}

// One user turn becomes the tool messages for its tool_result blocks (first, as chat requires) and then one user message.
function userMessages(blocks: unknown[], i: number, out: Obj[]): void {
  const parts: Obj[] = [];
  blocks.forEach((b, j) => {
    const block = asObject(b);
    const where = `messages.${i}.content.${j}`;
    if (block?.type === 'tool_result') {
      const { text, images } = toolResultContent(block.content, where);
      out.push({ role: 'tool', tool_call_id: str(block.tool_use_id, `${where}.tool_use_id`), content: text });
      // A chat tool message carries text only: images a tool returned follow in the user message.
      parts.push(...images);
      return;
    }
    parts.push(userPart(block, where));
  });
  if (parts.length === 0) return;
  const onlyText = parts.length === 1 && parts[0].type === 'text';
  out.push({ role: 'user', content: onlyText ? parts[0].text : parts });
}

function userPart(block: Obj | undefined, where: string): Obj {
  switch (block?.type) {
    case 'text':
      return { type: 'text', text: str(block.text, `${where}.text`) };
    case 'image':
      return { type: 'image_url', image_url: { url: sourceUrl(block.source, where) } };
    case 'document':
      return documentPart(block, where);
    default:
      throw unsupportedBlock(block, where);
  }
}

function sourceUrl(raw: unknown, where: string): string {
  const source = asObject(raw);
  if (source?.type === 'base64') return `data:${str(source.media_type, `${where}.source.media_type`)};base64,${str(source.data, `${where}.source.data`)}`;
  if (source?.type === 'url') return str(source.url, `${where}.source.url`);
  throw bad(`${where}.source: only base64 and url sources can be converted for this model`, 'messages');
}

function documentPart(block: Obj, where: string): Obj {
  const source = asObject(block.source);
  if (source?.type === 'text') return { type: 'text', text: str(source.data, `${where}.source.data`) };
  if (source?.type === 'base64') {
    const file: Obj = { file_data: `data:${str(source.media_type, `${where}.source.media_type`)};base64,${str(source.data, `${where}.source.data`)}` };
    file.filename = typeof block.title === 'string' && block.title !== '' ? block.title : 'document.pdf';
    return { type: 'file', file };
  }
  throw bad(`${where}.source: only base64 and text documents can be converted for this model`, 'messages');
}

function toolResultContent(content: unknown, where: string): { text: string; images: Obj[] } {
  if (content === undefined || content === null) return { text: '', images: [] };
  if (typeof content === 'string') return { text: content, images: [] };
  if (!Array.isArray(content)) throw bad(`${where}.content: must be a string or a list of blocks`, 'messages');
  let text = '';
  const images: Obj[] = [];
  content.forEach((b, k) => {
    const block = asObject(b);
    if (block?.type === 'text') text += (text === '' ? '' : '\n') + str(block.text, `${where}.content.${k}.text`);
    else if (block?.type === 'image') images.push({ type: 'image_url', image_url: { url: sourceUrl(block.source, `${where}.content.${k}`) } });
    else throw unsupportedBlock(block, `${where}.content.${k}`);
  });
  return { text, images };
}

function convertTools(raw: unknown): Obj[] | undefined {
  if (raw === undefined || raw === null) return undefined;
  if (!Array.isArray(raw)) throw bad('tools: must be a list', 'tools');
  if (raw.length === 0) return undefined;
  return raw.map((t, i) => {
    const tool = asObject(t);
    if (!tool) throw bad(`tools.${i}: must be an object`, 'tools');
    // Server tools (web search, code execution, ...) run at Anthropic; a chat upstream has nothing to run them.
    if (tool.type !== undefined && tool.type !== 'custom') throw bad(`tools.${i}: the server tool "${String(tool.type)}" is not available for this model`, 'tools');
    const fn: Obj = { name: str(tool.name, `tools.${i}.name`) };
    if (typeof tool.description === 'string') fn.description = tool.description;
    fn.parameters = asObject(tool.input_schema) ?? { type: 'object', properties: {} };
    if (typeof tool.strict === 'boolean') fn.strict = tool.strict;
    return { type: 'function', function: fn };
  });
}

function convertToolChoice(raw: unknown, chat: Obj, hasTools: boolean): void {
  if (raw === undefined || raw === null) return;
  const choice = asObject(raw);
  if (!choice) throw bad('tool_choice: must be an object', 'tool_choice');
  switch (choice.type) {
    case 'auto':
      if (hasTools) chat.tool_choice = 'auto';
      break;
    case 'any':
      chat.tool_choice = 'required';
      break;
    case 'tool':
      chat.tool_choice = { type: 'function', function: { name: str(choice.name, 'tool_choice.name') } };
      break;
    case 'none':
      chat.tool_choice = 'none';
      break;
    default:
      throw bad('tool_choice.type: must be one of auto, any, tool, none', 'tool_choice');
  }
  if (choice.disable_parallel_tool_use === true && hasTools) chat.parallel_tool_calls = false;
}

function reasoningEffort(body: Obj): string | undefined {
  const explicit = asObject(body.output_config)?.effort;
  if (typeof explicit === 'string' && EFFORTS.has(explicit)) return explicit;
  const thinking = asObject(body.thinking);
  if (!thinking) return undefined;
  if (thinking.type === 'enabled') return effortForBudget(typeof thinking.budget_tokens === 'number' ? thinking.budget_tokens : 0);
  // Reasoning on without a budget: the middle effort.
  if (thinking.type === 'adaptive' || thinking.type === 'between_tools') return 'medium';
  return undefined;
}

// Structured output: Anthropic's json_schema format becomes chat's response_format.
function outputFormat(body: Obj): Obj | undefined {
  const format = asObject(asObject(body.output_config)?.format) ?? asObject(body.output_format);
  if (format?.type !== 'json_schema' || !asObject(format.schema)) return undefined;
  return { type: 'json_schema', json_schema: { name: 'output', schema: format.schema, strict: true } };
}

function copyNumber(from: Obj, to: Obj, key: string): void {
  const v = from[key];
  if (v === undefined || v === null) return;
  if (typeof v !== 'number' || !Number.isFinite(v)) throw bad(`${key}: must be a number`, key);
  to[key] = v;
}

function str(v: unknown, where: string): string {
  if (typeof v !== 'string') throw bad(`${where}: must be a string`, where.split('.')[0]);
  return v;
}

function unsupportedBlock(block: Obj | undefined, where: string): GatewayError {
  const type = block && typeof block.type === 'string' ? `"${block.type}" ` : '';
  return bad(`${where}: content block ${type}cannot be converted for this model`, 'messages');
}

function bad(message: string, param: string): GatewayError {
  return new GatewayError('invalid_request', message, { param });
}
