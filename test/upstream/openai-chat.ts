// OpenAI Chat Completions (reference §1). Also serves the OpenAI-compatible chat of Ark and Zhipu.
import {
  IMAGE_TOKENS,
  SSE_DONE,
  errorStatus,
  fillFromSchema,
  head40,
  idBody,
  isObj,
  obfuscation,
  splitDeltas,
  splitFragments,
  sseData,
  str,
  tokensOf,
} from './common.ts';
import type { HandlerCtx, HeaderList, Obj, Plan } from './common.ts';

// ---------------------------------------------------------------- headers and errors shared by the OpenAI protocols

const OPENAI_STATIC: HeaderList = [
  ['openai-processing-ms', '42'],
  ['openai-version', '2020-10-01'],
  ['openai-project', 'proj_fake'],
  ['x-ratelimit-limit-requests', '10000'],
  ['x-ratelimit-limit-tokens', '10000000'],
  ['x-ratelimit-remaining-requests', '9999'],
  ['x-ratelimit-remaining-tokens', '9999000'],
  ['x-ratelimit-reset-requests', '6ms'],
  ['x-ratelimit-reset-tokens', '0s'],
];

export const CT_JSON = 'application/json';
export const CT_JSON_UTF8 = 'application/json; charset=utf-8';
export const CT_SSE = 'text/event-stream; charset=utf-8';

export function openaiHeaders(contentType: string, seq: number): HeaderList {
  return [['content-type', contentType], ['x-request-id', idBody('req_', seq)], ...OPENAI_STATIC];
}

/** OpenAI error body for a status (message/type/param/code, all four keys present). */
export function openaiErrorBody(status: number, model: string): string {
  switch (status) {
    case 400: // [recorded] envoy cassettes/chat-bad-request.yaml, byte for byte
      return '{"error":{"code":"unsupported_parameter","message":"Unsupported parameter: \'max_tokens\' is not supported with this model. Use \'max_completion_tokens\' instead.","param":"max_tokens","type":"invalid_request_error"}}';
    case 401:
      return '{"error":{"message":"Incorrect API key provided: sk-fake***1234. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}';
    case 403:
      return '{"error":{"message":"Country, region, or territory not supported","type":"request_forbidden","param":null,"code":"unsupported_country_region_territory"}}';
    case 404:
      return JSON.stringify({
        error: {
          message: `The model \`${model}\` does not exist or you do not have access to it.`,
          type: 'invalid_request_error',
          param: null,
          code: 'model_not_found',
        },
      });
    case 429:
      return '{"error":{"message":"Rate limit reached for requests per min (RPM): Limit 500, Used 500, Requested 1. Please try again in 120ms. Visit https://platform.openai.com/account/rate-limits to learn more.","type":"requests","param":null,"code":"rate_limit_exceeded"}}';
    case 503:
    case 529:
      return '{"error":{"message":"The engine is currently overloaded, please try again later","type":"server_error","param":null,"code":"server_is_overloaded"}}';
    default:
      return '{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}';
  }
}

export const OPENAI_STREAM_ERROR_FRAME = sseData(
  '{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}',
);

export function openaiError(status: number, model: string, seq: number): Plan {
  return { status, headers: openaiHeaders(CT_JSON_UTF8, seq), body: openaiErrorBody(status, model) };
}

export function badRequest(message: string, param: string | null, seq: number): Plan {
  return {
    status: 400,
    headers: openaiHeaders(CT_JSON_UTF8, seq),
    body: JSON.stringify({ error: { message, type: 'invalid_request_error', param, code: null } }),
  };
}

// ---------------------------------------------------------------- prompt accounting

export interface PromptCount {
  chars: number;
  images: number;
}

function countContent(content: unknown, acc: PromptCount): void {
  if (typeof content === 'string') {
    acc.chars += content.length;
    return;
  }
  if (!Array.isArray(content)) return;
  for (const part of content) {
    if (!isObj(part)) continue;
    if (part.type === 'image_url') acc.images++;
    else if (typeof part.text === 'string') acc.chars += part.text.length;
    else if (typeof part.refusal === 'string') acc.chars += part.refusal.length;
  }
}

/** Characters and images of a chat request: message text, assistant tool calls, and the tools' JSON. */
export function chatPromptCount(body: Obj): PromptCount {
  const acc: PromptCount = { chars: 0, images: 0 };
  const messages = Array.isArray(body.messages) ? body.messages : [];
  for (const m of messages) {
    if (!isObj(m)) continue;
    countContent(m.content, acc);
    if (Array.isArray(m.tool_calls)) {
      for (const tc of m.tool_calls) {
        if (isObj(tc) && isObj(tc.function)) acc.chars += str(tc.function.name).length + str(tc.function.arguments).length;
      }
    }
  }
  if (Array.isArray(body.tools) && body.tools.length > 0) acc.chars += JSON.stringify(body.tools).length;
  return acc;
}

/** prompt_tokens of a chat request (ceil(chars/4), min 1, + 85 per image). */
export function chatPromptTokens(body: Obj): number {
  const c = chatPromptCount(body);
  return tokensOf(c.chars) + c.images * IMAGE_TOKENS;
}

function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  let out = '';
  for (const part of content) if (isObj(part) && typeof part.text === 'string') out += part.text;
  return out;
}

// ---------------------------------------------------------------- the answer

export interface ChatAnswer {
  kind: 'text' | 'tool';
  text: string;
  toolName: string;
  toolArgs: string;
  finishReason: 'stop' | 'length' | 'tool_calls';
  promptTokens: number;
  cachedTokens: number;
  completionTokens: number;
}

function pickTool(body: Obj): { name: string; parameters: unknown } | undefined {
  if (!Array.isArray(body.tools) || body.tools.length === 0) return undefined;
  const choice = body.tool_choice;
  if (choice === 'none') return undefined;
  const fns: { name: string; parameters: unknown }[] = [];
  for (const t of body.tools) {
    if (isObj(t) && isObj(t.function) && typeof t.function.name === 'string') {
      fns.push({ name: t.function.name, parameters: t.function.parameters });
    }
  }
  if (fns.length === 0) return undefined;
  if (isObj(choice) && isObj(choice.function) && typeof choice.function.name === 'string') {
    return fns.find((f) => f.name === (choice.function as Obj).name) ?? fns[0];
  }
  return fns[0];
}

export function chatAnswer(body: Obj, forceLength: boolean): ChatAnswer {
  const messages = Array.isArray(body.messages) ? body.messages : [];
  const last = messages.length > 0 && isObj(messages[messages.length - 1]) ? (messages[messages.length - 1] as Obj) : {};
  const count = chatPromptCount(body);
  const promptTokens = tokensOf(count.chars) + count.images * IMAGE_TOKENS;
  const cachedTokens = body.prompt_cache_key != null ? Math.floor(promptTokens / 2) : 0;
  const tool = last.role === 'tool' ? undefined : pickTool(body);
  if (tool) {
    const toolArgs = JSON.stringify(fillFromSchema(tool.parameters ?? { type: 'object' }));
    return {
      kind: 'tool',
      text: '',
      toolName: tool.name,
      toolArgs,
      finishReason: 'tool_calls',
      promptTokens,
      cachedTokens,
      completionTokens: tokensOf(tool.name.length + toolArgs.length),
    };
  }
  let text: string;
  if (last.role === 'tool') {
    text = 'tool result: ' + head40(contentText(last.content));
  } else {
    let userText = '';
    for (let i = messages.length - 1; i >= 0; i--) {
      const m = messages[i];
      if (isObj(m) && m.role === 'user') {
        userText = contentText(m.content);
        break;
      }
    }
    text = 'echo: ' + head40(userText);
  }
  const rf = body.response_format;
  if (isObj(rf) && rf.type === 'json_schema' && isObj(rf.json_schema)) {
    text = JSON.stringify(fillFromSchema(rf.json_schema.schema ?? { type: 'object' }));
  } else if (isObj(rf) && rf.type === 'json_object') {
    text = JSON.stringify({ echo: text });
  }
  let finishReason: ChatAnswer['finishReason'] = forceLength ? 'length' : 'stop';
  const limitRaw = body.max_completion_tokens ?? body.max_tokens;
  if (typeof limitRaw === 'number' && limitRaw >= 1 && tokensOf(text.length) > limitRaw) {
    text = text.slice(0, limitRaw * 4);
    finishReason = 'length';
  }
  return {
    kind: 'text',
    text,
    toolName: '',
    toolArgs: '',
    finishReason,
    promptTokens,
    cachedTokens,
    completionTokens: tokensOf(text.length),
  };
}

export function chatUsageJson(a: ChatAnswer): string {
  return (
    '{"prompt_tokens":' +
    a.promptTokens +
    ',"completion_tokens":' +
    a.completionTokens +
    ',"total_tokens":' +
    (a.promptTokens + a.completionTokens) +
    ',"prompt_tokens_details":{"cached_tokens":' +
    a.cachedTokens +
    ',"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}'
  );
}

// ---------------------------------------------------------------- plan

export function chatPlan(ctx: HandlerCtx): Plan {
  const body = ctx.json;
  if (!isObj(body)) return badRequest('We could not parse the JSON body of your request.', null, ctx.seq);
  const model = str(body.model);
  if (!model) return badRequest("you must provide a model parameter", 'model', ctx.seq);
  if (!Array.isArray(body.messages) || body.messages.length === 0) {
    return badRequest("Invalid 'messages': empty array. Expected an array with minimum length 1.", 'messages', ctx.seq);
  }
  const sc = ctx.scenario.name;
  const errStatus = errorStatus(sc);
  if (errStatus !== undefined) return openaiError(errStatus, model, ctx.seq);

  const a = chatAnswer(body, sc === 'length');
  const id = idBody('chatcmpl-', ctx.seq, 29);
  const callId = idBody('call_', ctx.seq, 24);
  const withUsage = sc !== 'no-usage';

  if (body.stream !== true) {
    const message =
      a.kind === 'tool'
        ? '{"role":"assistant","content":null,"tool_calls":[{"id":' +
          JSON.stringify(callId) +
          ',"type":"function","function":{"name":' +
          JSON.stringify(a.toolName) +
          ',"arguments":' +
          JSON.stringify(a.toolArgs) +
          '}}],"refusal":null,"annotations":[]}'
        : '{"role":"assistant","content":' + JSON.stringify(a.text) + ',"refusal":null,"annotations":[]}';
    const json =
      '{"id":"' +
      id +
      '","object":"chat.completion","created":' +
      ctx.now +
      ',"model":' +
      JSON.stringify(model) +
      ',"choices":[{"index":0,"message":' +
      message +
      ',"logprobs":null,"finish_reason":"' +
      a.finishReason +
      '"}]' +
      (withUsage ? ',"usage":' + chatUsageJson(a) : '') +
      ',"service_tier":"default","system_fingerprint":null}';
    return { status: 200, headers: openaiHeaders(CT_JSON, ctx.seq), body: json };
  }

  const so = isObj(body.stream_options) ? body.stream_options : {};
  const includeUsage = so.include_usage === true && withUsage;
  const obf = so.include_obfuscation !== false;
  const prefix =
    '{"id":"' +
    id +
    '","object":"chat.completion.chunk","created":' +
    ctx.now +
    ',"model":' +
    JSON.stringify(model) +
    ',"service_tier":"default","system_fingerprint":null,"choices":';
  const events: string[] = [];
  const push = (choices: string, usage: string | null): void => {
    const i = events.length;
    const tail =
      (so.include_usage === true ? ',"usage":' + (usage ?? 'null') : '') +
      (obf ? ',"obfuscation":"' + obfuscation(i) + '"' : '') +
      '}';
    events.push(sseData(prefix + choices + tail));
  };
  const choice = (delta: string, finish: string | null): string =>
    '[{"index":0,"delta":' + delta + ',"finish_reason":' + (finish ? '"' + finish + '"' : 'null') + '}]';

  if (a.kind === 'tool') {
    push(
      choice(
        '{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":' +
          JSON.stringify(callId) +
          ',"type":"function","function":{"name":' +
          JSON.stringify(a.toolName) +
          ',"arguments":""}}],"refusal":null}',
        null,
      ),
      null,
    );
    for (const frag of splitFragments(a.toolArgs)) {
      push(choice('{"tool_calls":[{"index":0,"function":{"arguments":' + JSON.stringify(frag) + '}}]}', null), null);
    }
  } else {
    push(choice('{"role":"assistant","content":"","refusal":null}', null), null);
    for (const piece of splitDeltas(a.text)) push(choice('{"content":' + JSON.stringify(piece) + '}', null), null);
  }
  const cutAfter = Math.min(3, events.length);
  push(choice('{}', a.finishReason), null);
  if (includeUsage) push('[]', chatUsageJson(a));
  events.push(SSE_DONE);
  return {
    status: 200,
    headers: openaiHeaders(CT_SSE, ctx.seq),
    events,
    cutAfter,
    errorFrame: OPENAI_STREAM_ERROR_FRAME,
  };
}
