// Google Gemini generateContent / streamGenerateContent?alt=sse / countTokens (reference §7).
// Accepts lowerCamelCase and snake_case request fields. SSE blocks are separated by \r\n\r\n.
import {
  IMAGE_TOKENS,
  TINY_PNG_B64,
  errorStatus,
  fillFromSchema,
  googleJson,
  head40,
  idBody,
  isObj,
  splitDeltas,
  str,
  tokensOf,
} from './common.ts';
import type { HandlerCtx, HeaderList, Obj, Plan } from './common.ts';

const CT_JSON = 'application/json; charset=UTF-8';
const CT_SSE = 'text/event-stream';
const SEP = '\r\n\r\n';
/** Output tokens of one generated image (the widely reported 1290 for a 1024px image). */
export const GEMINI_IMAGE_OUTPUT_TOKENS = 1290;

function headers(contentType: string): HeaderList {
  return [
    ['content-type', contentType],
    ['vary', 'Origin, X-Origin, Referer'],
    ['server', 'scaffolding on HTTPServer2'],
    ['server-timing', 'gfet4t7; dur=42'],
    ['x-content-type-options', 'nosniff'],
  ];
}

const STATUS_NAMES: Record<number, [string, string]> = {
  400: ['INVALID_ARGUMENT', 'API key not valid. Please pass a valid API key.'],
  401: ['UNAUTHENTICATED', 'Request had invalid authentication credentials.'],
  403: ['PERMISSION_DENIED', 'Method doesn\'t allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.'],
  404: ['NOT_FOUND', 'models/not-a-model is not found for API version v1beta, or is not supported for generateContent.'],
  429: ['RESOURCE_EXHAUSTED', 'You exceeded your current quota, please check your plan and billing details.'],
  500: ['INTERNAL', 'An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting'],
  503: ['UNAVAILABLE', 'The model is overloaded. Please try again later.'],
  504: ['DEADLINE_EXCEEDED', 'Deadline expired before operation could complete.'],
};

function errorObj(status: number, model: string, message?: string): Obj {
  const [name, defaultMsg] = STATUS_NAMES[status] ?? ['INTERNAL', STATUS_NAMES[500][1]];
  const msg =
    message ??
    (status === 404 && model ? `models/${model} is not found for API version v1beta, or is not supported for generateContent.` : defaultMsg);
  const err: Obj = { code: status, message: msg, status: name };
  if (status === 400 && message === undefined) {
    // [recorded by third parties] invalid key: HTTP 400 INVALID_ARGUMENT
    err.details = [
      {
        '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
        reason: 'API_KEY_INVALID',
        domain: 'googleapis.com',
        metadata: { service: 'generativelanguage.googleapis.com' },
      },
      { '@type': 'type.googleapis.com/google.rpc.LocalizedMessage', locale: 'en-US', message: msg },
    ];
  } else if (status === 429) {
    err.details = [
      {
        '@type': 'type.googleapis.com/google.rpc.QuotaFailure',
        violations: [
          {
            quotaMetric: 'generativelanguage.googleapis.com/generate_content_free_tier_requests',
            quotaId: 'GenerateRequestsPerMinutePerProjectPerModel-FreeTier',
          },
        ],
      },
      { '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '1s' },
    ];
  }
  return { error: err };
}

export function geminiError(status: number, model: string, message?: string): Plan {
  return { status, headers: headers(CT_JSON), body: JSON.stringify(errorObj(status, model, message), null, 2) + '\n' };
}

// ---------------------------------------------------------------- request reading

function pick(o: Obj, camel: string, snake: string): unknown {
  return o[camel] !== undefined ? o[camel] : o[snake];
}

interface Count {
  chars: number;
  images: number;
}

function countParts(parts: unknown, acc: Count): void {
  if (!Array.isArray(parts)) return;
  for (const p of parts) {
    if (!isObj(p)) continue;
    if (typeof p.text === 'string') acc.chars += p.text.length;
    const fc = pick(p, 'functionCall', 'function_call');
    const fr = pick(p, 'functionResponse', 'function_response');
    if (pick(p, 'inlineData', 'inline_data') !== undefined || pick(p, 'fileData', 'file_data') !== undefined) acc.images++;
    if (isObj(fc)) acc.chars += str(fc.name).length + JSON.stringify(fc.args ?? {}).length;
    if (isObj(fr)) acc.chars += str(fr.name).length + JSON.stringify(fr.response ?? {}).length;
  }
}

function count(body: Obj): Count {
  const acc: Count = { chars: 0, images: 0 };
  const sys = pick(body, 'systemInstruction', 'system_instruction');
  if (isObj(sys)) countParts(sys.parts, acc);
  else if (typeof sys === 'string') acc.chars += sys.length;
  if (Array.isArray(body.contents)) for (const c of body.contents) if (isObj(c)) countParts(c.parts, acc);
  if (Array.isArray(body.tools) && body.tools.length > 0) acc.chars += JSON.stringify(body.tools).length;
  return acc;
}

/** promptTokenCount of a generateContent request: ceil(chars/4), min 1, + 85 per inline/file part. */
export function geminiPromptTokens(body: Obj): number {
  const c = count(body);
  return tokensOf(c.chars) + c.images * IMAGE_TOKENS;
}

function promptDetails(c: Count): Obj[] {
  const d: Obj[] = [{ modality: 'TEXT', tokenCount: tokensOf(c.chars) }];
  if (c.images > 0) d.push({ modality: 'IMAGE', tokenCount: c.images * IMAGE_TOKENS });
  return d;
}

function partsText(parts: unknown): string {
  let out = '';
  if (Array.isArray(parts)) for (const p of parts) if (isObj(p) && typeof p.text === 'string') out += p.text;
  return out;
}

// ---------------------------------------------------------------- the answer

interface Answer {
  /** Parts in emission order; the thought part (if any) comes first. */
  thought: string | undefined;
  text: string | undefined;
  call: { name: string; args: unknown } | undefined;
  image: boolean;
  finishReason: string;
  candidatesTokens: number;
  textTokens: number;
  thoughtsTokens: number;
}

function answer(body: Obj, forceMax: boolean): Answer {
  const contents = Array.isArray(body.contents) ? body.contents : [];
  const last = contents.length > 0 && isObj(contents[contents.length - 1]) ? (contents[contents.length - 1] as Obj) : {};
  let funcResponse: unknown = undefined;
  if (Array.isArray(last.parts)) {
    for (const p of last.parts) {
      const fr = isObj(p) ? pick(p, 'functionResponse', 'function_response') : undefined;
      if (isObj(fr)) funcResponse = fr.response ?? {};
    }
  }
  let userText = '';
  for (let i = contents.length - 1; i >= 0; i--) {
    const c = contents[i];
    if (isObj(c) && (c.role === 'user' || c.role === undefined)) {
      const t = partsText(c.parts);
      if (t !== '') {
        userText = t;
        break;
      }
    }
  }
  const gc = pick(body, 'generationConfig', 'generation_config');
  const gen: Obj = isObj(gc) ? gc : {};
  const modalities = pick(gen, 'responseModalities', 'response_modalities');
  const image = Array.isArray(modalities) && modalities.some((m) => typeof m === 'string' && m.toUpperCase() === 'IMAGE');
  const tcRaw = pick(gen, 'thinkingConfig', 'thinking_config');
  const tc: Obj | undefined = isObj(tcRaw) ? tcRaw : undefined;
  const budget = tc ? pick(tc, 'thinkingBudget', 'thinking_budget') : undefined;
  const include = tc ? pick(tc, 'includeThoughts', 'include_thoughts') === true : false;
  const thinks = tc !== undefined && budget !== 0;
  const thoughtText = 'Thinking about: ' + head40(userText);
  const thoughtsTokens = thinks ? tokensOf(thoughtText.length) : 0;

  // function calling
  const toolConfig = pick(body, 'toolConfig', 'tool_config');
  const fcc = isObj(toolConfig) ? pick(toolConfig, 'functionCallingConfig', 'function_calling_config') : undefined;
  const mode = isObj(fcc) ? str(fcc.mode).toUpperCase() : 'AUTO';
  let call: Answer['call'] = undefined;
  if (funcResponse === undefined && mode !== 'NONE' && Array.isArray(body.tools)) {
    const allowed = isObj(fcc) ? pick(fcc, 'allowedFunctionNames', 'allowed_function_names') : undefined;
    outer: for (const t of body.tools) {
      const decls = isObj(t) ? pick(t, 'functionDeclarations', 'function_declarations') : undefined;
      if (!Array.isArray(decls)) continue;
      for (const d of decls) {
        if (!isObj(d) || typeof d.name !== 'string') continue;
        if (Array.isArray(allowed) && allowed.length > 0 && !allowed.includes(d.name)) continue;
        const schema = d.parameters ?? pick(d, 'parametersJsonSchema', 'parameters_json_schema') ?? { type: 'object' };
        call = { name: d.name, args: fillFromSchema(schema) };
        break outer;
      }
    }
  }
  let finishReason = forceMax ? 'MAX_TOKENS' : 'STOP';
  if (call) {
    const argsLen = JSON.stringify(call.args).length;
    const t = tokensOf(call.name.length + argsLen);
    return { thought: include ? thoughtText : undefined, text: undefined, call, image: false, finishReason, candidatesTokens: t, textTokens: t, thoughtsTokens };
  }
  let text = funcResponse !== undefined ? 'tool result: ' + head40(JSON.stringify(funcResponse)) : image ? 'Here is your image.' : 'echo: ' + head40(userText);
  const max = pick(gen, 'maxOutputTokens', 'max_output_tokens');
  if (typeof max === 'number' && max >= 1 && tokensOf(text.length) > max) {
    text = text.slice(0, max * 4);
    finishReason = 'MAX_TOKENS';
  }
  const textTokens = tokensOf(text.length);
  return {
    thought: include && thinks ? thoughtText : undefined,
    text,
    call: undefined,
    image,
    finishReason,
    candidatesTokens: textTokens + (image ? GEMINI_IMAGE_OUTPUT_TOKENS : 0),
    textTokens,
    thoughtsTokens,
  };
}

function usage(c: Count, cached: boolean, a: Answer | undefined): Obj {
  const prompt = tokensOf(c.chars) + c.images * IMAGE_TOKENS;
  const u: Obj = { promptTokenCount: prompt };
  if (a) u.candidatesTokenCount = a.candidatesTokens;
  u.totalTokenCount = prompt + (a ? a.candidatesTokens + a.thoughtsTokens : 0);
  const cachedTokens = cached ? Math.floor(prompt / 2) : 0;
  if (cachedTokens > 0) u.cachedContentTokenCount = cachedTokens;
  u.promptTokensDetails = promptDetails(c);
  if (cachedTokens > 0) u.cacheTokensDetails = [{ modality: 'TEXT', tokenCount: cachedTokens }];
  if (a) {
    const d: Obj[] = [];
    if (a.image) d.push({ modality: 'IMAGE', tokenCount: GEMINI_IMAGE_OUTPUT_TOKENS });
    d.push({ modality: 'TEXT', tokenCount: a.textTokens });
    u.candidatesTokensDetails = d;
    if (a.thoughtsTokens > 0) u.thoughtsTokenCount = a.thoughtsTokens;
  }
  return u;
}

// ---------------------------------------------------------------- plans

function countTokensPlan(body: Obj): Plan {
  const inner = isObj(body.generateContentRequest) ? body.generateContentRequest : body;
  const c = count(inner);
  return {
    status: 200,
    headers: headers(CT_JSON),
    body: JSON.stringify({ totalTokens: tokensOf(c.chars) + c.images * IMAGE_TOKENS, promptTokensDetails: promptDetails(c) }, null, 2) + '\n',
  };
}

export function geminiPlan(ctx: HandlerCtx): Plan {
  const m = /\/models\/([^/:]+):(generateContent|streamGenerateContent|countTokens)$/.exec(ctx.path);
  const model = m ? decodeURIComponent(m[1]) : '';
  const action = m ? m[2] : '';
  const body = ctx.json;
  if (!isObj(body)) return geminiError(400, model, 'Invalid JSON payload received.');
  if (action === 'countTokens') return countTokensPlan(body);
  if (!Array.isArray(body.contents) || body.contents.length === 0) {
    return geminiError(400, model, '* GenerateContentRequest.contents: contents is not specified\n');
  }
  const sc = ctx.scenario.name;
  const errStatus = errorStatus(sc);
  if (errStatus !== undefined) return geminiError(errStatus, model);

  const c = count(body);
  const cached = typeof pick(body, 'cachedContent', 'cached_content') === 'string';
  const a = answer(body, sc === 'length');
  const responseId = idBody('', ctx.seq, 16);
  const withUsage = sc !== 'no-usage';
  const fullUsage = usage(c, cached, a);

  const parts: Obj[] = [];
  if (a.thought !== undefined) parts.push({ text: a.thought, thought: true });
  if (a.call) parts.push({ functionCall: { name: a.call.name, args: a.call.args } });
  if (a.text !== undefined) parts.push({ text: a.text });
  if (a.image) parts.push({ inlineData: { mimeType: 'image/png', data: TINY_PNG_B64 } });

  const stream = action === 'streamGenerateContent';
  if (!stream) {
    const resp: Obj = {
      candidates: [{ content: { parts, role: 'model' }, finishReason: a.finishReason, index: 0 }],
      usageMetadata: withUsage ? fullUsage : undefined,
      modelVersion: model,
      responseId,
    };
    return { status: 200, headers: headers(CT_JSON), body: JSON.stringify(resp, null, 2) + '\n' };
  }

  // stream: one chunk per piece; only the last carries finishReason and the full usage
  const pieces: Obj[][] = [];
  if (a.thought !== undefined) pieces.push([{ text: a.thought, thought: true }]);
  if (a.call) pieces.push([{ functionCall: { name: a.call.name, args: a.call.args } }]);
  if (a.text !== undefined) for (const p of splitDeltas(a.text)) pieces.push([{ text: p }]);
  if (a.image) pieces.push([{ inlineData: { mimeType: 'image/png', data: TINY_PNG_B64 } }]);
  if (pieces.length === 0) pieces.push([{ text: '' }]);
  const partialUsage = usage(c, cached, undefined);
  const chunks = pieces.map((p, i) => {
    const lastChunk = i === pieces.length - 1;
    const cand: Obj = { content: { parts: p, role: 'model' } };
    if (lastChunk) cand.finishReason = a.finishReason;
    cand.index = 0;
    return {
      candidates: [cand],
      usageMetadata: withUsage ? (lastChunk ? fullUsage : partialUsage) : undefined,
      modelVersion: model,
      responseId,
    };
  });
  if (ctx.query.get('alt') !== 'sse') {
    // without alt=sse the stream endpoint answers one JSON array
    return { status: 200, headers: headers(CT_JSON), body: JSON.stringify(chunks, null, 2) + '\n' };
  }
  const events = chunks.map((ch) => 'data: ' + googleJson(ch) + SEP);
  return {
    status: 200,
    headers: headers(CT_SSE),
    events,
    cutAfter: Math.max(1, Math.min(2, events.length - 1)),
    errorFrame: 'data: ' + googleJson(errorObj(500, model)) + SEP,
  };
}
