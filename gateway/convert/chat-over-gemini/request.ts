// Chat request -> Gemini generateContent request (reference §8.5). Pure: what Gemini cannot take is a 400 here.
import { GatewayError } from '../../errors.ts';
import { imagePartUrl, mediaTypeOfUrl, parseDataUrl } from '../data-url.ts';
import { splitToolCallId } from './tool-id.ts';
import { isObject, parseJson } from '../../json-guards.ts';

/** `reasoning_effort` to a Gemini 2.5 thinking budget (0 turns thinking off where the model allows it, -1 is dynamic). */
export const GEMINI_THINKING_BUDGETS: Readonly<Record<string, number>> = { none: 0, minimal: 512, low: 1024, medium: 8192, high: 24576, xhigh: -1, max: -1 };

type Part = Record<string, unknown>;
interface Content {
  role: 'user' | 'model';
  parts: Part[];
}

const invalid = (message: string, param: string) => new GatewayError('invalid_request', message, { param });

export function chatRequestToGemini(chat: Record<string, unknown>): Record<string, unknown> {
  const system: Part[] = [];
  const contents: Content[] = [];
  // Gemini's functionResponse needs the function's name, which a chat tool message does not carry.
  const callNames = new Map<string, string>();
  const push = (role: Content['role'], parts: Part[]): void => {
    if (parts.length === 0) return;
    const last = contents.at(-1);
    // Gemini wants alternating turns: tool results and the next user text share one user turn.
    if (last && last.role === role) last.parts.push(...parts);
    else contents.push({ role, parts });
  };
  (chat.messages as unknown[]).forEach((m, i) => {
    const param = `messages[${i}]`;
    if (!isObject(m)) throw invalid(`${param} must be an object.`, param);
    switch (m.role) {
      case 'system':
      case 'developer':
        system.push(...textParts(m.content, `${param}.content`));
        break;
      case 'user':
        push('user', userParts(m.content, `${param}.content`));
        break;
      case 'assistant':
        push('model', modelParts(m, param, callNames));
        break;
      case 'tool':
        push('user', [functionResponse(m, param, callNames)]);
        break;
      default:
        throw invalid(`${param}.role ${JSON.stringify(m.role)} is not supported by this model's upstream (use system, developer, user, assistant or tool).`, `${param}.role`);
    }
  });
  if (contents.length === 0) throw invalid('At least one user or assistant message with content is required.', 'messages');

  const out: Record<string, unknown> = { contents };
  if (system.length > 0) out.systemInstruction = { parts: system };
  const tools = functionDeclarations(chat.tools);
  if (tools.length > 0) {
    out.tools = [{ functionDeclarations: tools }];
    const tc = toolConfig(chat.tool_choice);
    if (tc) out.toolConfig = { functionCallingConfig: tc };
  }
  const gen = generationConfig(chat);
  if (Object.keys(gen).length > 0) out.generationConfig = gen;
  return out;
}

function textParts(content: unknown, param: string): Part[] {
  if (typeof content === 'string') return content === '' ? [] : [{ text: content }];
  if (!Array.isArray(content)) throw invalid(`${param} must be a string or an array of text parts.`, param);
  const out: Part[] = [];
  content.forEach((p, j) => {
    if (!isObject(p) || p.type !== 'text' || typeof p.text !== 'string') throw invalid(`${param}[${j}] must be a text part.`, `${param}[${j}]`);
    if (p.text !== '') out.push({ text: p.text });
  });
  return out;
}

function userParts(content: unknown, param: string): Part[] {
  if (typeof content === 'string' || content === undefined || content === null) return textParts(content ?? '', param);
  if (!Array.isArray(content)) throw invalid(`${param} must be a string or an array of content parts.`, param);
  const out: Part[] = [];
  content.forEach((p, j) => {
    const at = `${param}[${j}]`;
    if (!isObject(p)) throw invalid(`${at} must be an object.`, at);
    switch (p.type) {
      case 'text':
        if (typeof p.text !== 'string') throw invalid(`${at}.text must be a string.`, at);
        if (p.text !== '') out.push({ text: p.text });
        break;
      case 'image_url': {
        const url = imagePartUrl(p);
        if (!url) throw invalid(`${at}.image_url.url is required.`, at);
        out.push(mediaPart(url, at));
        break;
      }
      case 'input_audio': {
        const a = isObject(p.input_audio) ? p.input_audio : {};
        if (typeof a.data !== 'string' || typeof a.format !== 'string') throw invalid(`${at}.input_audio needs data and format.`, at);
        out.push({ inlineData: { mimeType: `audio/${a.format === 'mp3' ? 'mpeg' : a.format}`, data: a.data } });
        break;
      }
      case 'file': {
        const f = isObject(p.file) ? p.file : {};
        if (typeof f.file_data !== 'string' || !parseDataUrl(f.file_data)) throw invalid(`${at}: only files given inline as a base64 data: URL in file.file_data are supported by this model's upstream.`, at);
        out.push(mediaPart(f.file_data, at));
        break;
      }
      default:
        throw invalid(`${at}: content parts of type ${JSON.stringify(p.type)} are not supported by this model's upstream.`, at);
    }
  });
  return out;
}

function mediaPart(url: string, at: string): Part {
  const d = parseDataUrl(url);
  if (d) return { inlineData: { mimeType: d.mediaType, data: d.data } };
  // Remote files go by reference; the upstream fetches them (Gemini accepts http(s) and File API URIs).
  if (/^(https?|gs):\/\//i.test(url)) return { fileData: { mimeType: mediaTypeOfUrl(url), fileUri: url } };
  throw invalid(`${at}: the URL must be an http(s) URL or a base64 data: URL.`, at);
}

function modelParts(m: Record<string, unknown>, param: string, callNames: Map<string, string>): Part[] {
  const out: Part[] = [];
  const c = m.content;
  if (typeof c === 'string') {
    if (c !== '') out.push({ text: c });
  } else if (Array.isArray(c)) {
    for (const p of c) if (isObject(p) && p.type === 'text' && typeof p.text === 'string' && p.text !== '') out.push({ text: p.text });
  }
  if (Array.isArray(m.tool_calls)) {
    m.tool_calls.forEach((tc, j) => {
      const at = `${param}.tool_calls[${j}]`;
      if (!isObject(tc) || !isObject(tc.function) || typeof tc.id !== 'string' || typeof tc.function.name !== 'string') {
        throw invalid(`${at} must be a function tool call with an id and a function name.`, at);
      }
      callNames.set(tc.id, tc.function.name);
      const part: Part = { functionCall: { name: tc.function.name, args: parseArguments(tc.function.arguments, `${at}.function.arguments`) } };
      // Gemini 2.5/3 wants the thought signature of a function call echoed back; it travels inside our tool-call id.
      const sig = splitToolCallId(tc.id).signature;
      if (sig) part.thoughtSignature = sig;
      out.push(part);
    });
  }
  return out;
}

function parseArguments(args: unknown, at: string): Record<string, unknown> {
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

function functionResponse(m: Record<string, unknown>, param: string, callNames: Map<string, string>): Part {
  const id = m.tool_call_id;
  if (typeof id !== 'string' || id === '') throw invalid(`${param}.tool_call_id is required.`, `${param}.tool_call_id`);
  const name = callNames.get(id) ?? (typeof m.name === 'string' ? m.name : undefined);
  if (!name) throw invalid(`${param}.tool_call_id ${JSON.stringify(id)} names no tool call of an earlier assistant message.`, `${param}.tool_call_id`);
  let text: string;
  if (typeof m.content === 'string') text = m.content;
  else if (Array.isArray(m.content)) text = textParts(m.content, `${param}.content`).map((p) => p.text).join('');
  else text = '';
  // Gemini wants an object: a JSON object result goes as it is, anything else under `output`.
  const response = parseJson(text);
  return { functionResponse: { name, response: isObject(response) ? response : { output: text } } };
}

function functionDeclarations(tools: unknown): Part[] {
  if (!Array.isArray(tools)) return [];
  return tools.map((t, i) => {
    const at = `tools[${i}]`;
    if (!isObject(t) || t.type !== 'function' || !isObject(t.function) || typeof t.function.name !== 'string') {
      throw invalid(`${at}: only function tools are supported by this model's upstream.`, at);
    }
    const f = t.function;
    const d: Part = { name: f.name };
    if (typeof f.description === 'string') d.description = f.description;
    // parametersJsonSchema takes full JSON Schema; `parameters` takes only Google's OpenAPI subset.
    if (isObject(f.parameters)) {
      const schema = { ...f.parameters };
      // A null `required` is rejected upstream; an absent one means the same.
      if (schema.required === null) delete schema.required;
      d.parametersJsonSchema = schema;
    }
    return d;
  });
}

function toolConfig(choice: unknown): Part | undefined {
  if (choice === undefined || choice === null || choice === 'auto') return undefined;
  if (choice === 'none') return { mode: 'NONE' };
  if (choice === 'required') return { mode: 'ANY' };
  if (isObject(choice) && choice.type === 'function' && isObject(choice.function) && typeof choice.function.name === 'string') {
    return { mode: 'ANY', allowedFunctionNames: [choice.function.name] };
  }
  if (isObject(choice) && choice.type === 'allowed_tools' && isObject(choice.allowed_tools) && Array.isArray(choice.allowed_tools.tools)) {
    const names = choice.allowed_tools.tools.map((t) => (isObject(t) && isObject(t.function) ? t.function.name : undefined)).filter((n): n is string => typeof n === 'string');
    return { mode: choice.allowed_tools.mode === 'required' ? 'ANY' : 'AUTO', allowedFunctionNames: names };
  }
  throw invalid("'tool_choice' must be none, auto, required or a function choice.", 'tool_choice');
}

function generationConfig(chat: Record<string, unknown>): Record<string, unknown> {
  const g: Record<string, unknown> = {};
  const num = (k: string) => (typeof chat[k] === 'number' ? (chat[k] as number) : undefined);
  const max = num('max_completion_tokens') ?? num('max_tokens');
  if (max !== undefined) {
    if (!Number.isInteger(max) || max < 1) throw invalid("'max_completion_tokens' must be a positive integer.", 'max_completion_tokens');
    g.maxOutputTokens = max;
  }
  if (num('temperature') !== undefined) g.temperature = num('temperature');
  if (num('top_p') !== undefined) g.topP = num('top_p');
  if (num('top_k') !== undefined) g.topK = num('top_k');
  if (num('n') !== undefined) g.candidateCount = num('n');
  if (num('seed') !== undefined) g.seed = num('seed');
  if (num('presence_penalty') !== undefined) g.presencePenalty = num('presence_penalty');
  if (num('frequency_penalty') !== undefined) g.frequencyPenalty = num('frequency_penalty');
  const stop = chat.stop;
  if (typeof stop === 'string' && stop !== '') g.stopSequences = [stop];
  else if (Array.isArray(stop)) {
    const list = stop.filter((s): s is string => typeof s === 'string' && s !== '');
    if (list.length > 0) g.stopSequences = list;
  }
  const rf = chat.response_format;
  if (isObject(rf) && rf.type === 'json_object') g.responseMimeType = 'application/json';
  else if (isObject(rf) && rf.type === 'json_schema' && isObject(rf.json_schema)) {
    g.responseMimeType = 'application/json';
    if (isObject(rf.json_schema.schema)) g.responseJsonSchema = rf.json_schema.schema;
  }
  // OpenRouter's convention for image output on chat: modalities ["image", "text"].
  if (Array.isArray(chat.modalities) && chat.modalities.includes('image')) g.responseModalities = ['TEXT', 'IMAGE'];
  const effort = chat.reasoning_effort;
  if (typeof effort === 'string') {
    const budget = GEMINI_THINKING_BUDGETS[effort];
    if (budget === undefined) throw invalid(`'reasoning_effort' ${JSON.stringify(effort)} is not one of ${Object.keys(GEMINI_THINKING_BUDGETS).join(', ')}.`, 'reasoning_effort');
    g.thinkingConfig = budget === 0 ? { thinkingBudget: 0 } : { thinkingBudget: budget, includeThoughts: true };
  }
  return g;
}
