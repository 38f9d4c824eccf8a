// Anthropic Messages (reference §2): JSON, the exact stream event order, tools, thinking, prompt caching.
import {
  IMAGE_TOKENS,
  errorStatus,
  fillFromSchema,
  head40,
  idBody,
  isObj,
  splitDeltas,
  splitFragments,
  sseEvent,
  str,
  tokensOf,
  tokensOrZero,
} from './common.ts';
import type { HandlerCtx, HeaderList, Obj, Plan } from './common.ts';

const CT_JSON = 'application/json';
const CT_SSE = 'text/event-stream; charset=utf-8';

const STATIC: HeaderList = [
  ['anthropic-organization-id', '00000000-0000-4000-8000-000000000000'],
  ['anthropic-ratelimit-requests-limit', '4000'],
  ['anthropic-ratelimit-requests-remaining', '3999'],
  ['anthropic-ratelimit-input-tokens-limit', '2000000'],
  ['anthropic-ratelimit-output-tokens-limit', '400000'],
];

function headers(contentType: string, seq: number): HeaderList {
  return [['content-type', contentType], ['request-id', idBody('req_', seq)], ...STATIC];
}

const ERROR_TYPES: Record<number, [string, string]> = {
  400: ['invalid_request_error', 'messages: text content blocks must be non-empty'],
  401: ['authentication_error', 'invalid x-api-key'],
  402: ['billing_error', 'Your credit balance is too low to access the Anthropic API.'],
  403: ['permission_error', 'Your API key does not have permission to use the specified resource.'],
  404: ['not_found_error', 'model: not-a-model'],
  413: ['request_too_large', 'Request exceeds the maximum allowed number of bytes.'],
  429: ['rate_limit_error', 'This request would exceed the rate limit for your organization of 50 requests per minute.'],
  500: ['api_error', 'Internal server error'],
  503: ['api_error', 'Service unavailable'],
  504: ['timeout_error', 'Request timeout'],
  529: ['overloaded_error', 'Overloaded'],
};

export function anthropicError(status: number, seq: number, message?: string, model?: string): Plan {
  const [type, defaultMsg] = ERROR_TYPES[status] ?? ['api_error', 'Internal server error'];
  const msg = message ?? (status === 404 && model ? `model: ${model}` : defaultMsg);
  return {
    status,
    headers: headers(CT_JSON, seq),
    body: JSON.stringify({ type: 'error', error: { type, message: msg }, request_id: idBody('req_', seq) }),
  };
}

const STREAM_ERROR_FRAME = sseEvent('error', '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}');

// ---------------------------------------------------------------- prompt accounting

interface Seg {
  chars: number;
  images: number;
  /** cache_control ttl when this segment is a cache breakpoint */
  cc: string | undefined;
  value: unknown;
}

function ccOf(v: unknown): string | undefined {
  if (isObj(v) && isObj(v.cache_control)) return str(v.cache_control.ttl) || '5m';
  return undefined;
}

function blockSeg(b: unknown): Seg {
  const seg: Seg = { chars: 0, images: 0, cc: ccOf(b), value: b };
  if (typeof b === 'string') {
    seg.chars = b.length;
    return seg;
  }
  if (!isObj(b)) return seg;
  switch (b.type) {
    case 'text':
      seg.chars = str(b.text).length;
      break;
    case 'image':
    case 'document':
      seg.images = 1;
      break;
    case 'tool_use':
    case 'server_tool_use':
      seg.chars = str(b.name).length + JSON.stringify(b.input ?? {}).length;
      break;
    case 'tool_result':
      if (typeof b.content === 'string') seg.chars = b.content.length;
      else if (Array.isArray(b.content)) {
        for (const c of b.content) {
          const s = blockSeg(c);
          seg.chars += s.chars;
          seg.images += s.images;
        }
      }
      break;
    case 'thinking':
      seg.chars = str(b.thinking).length;
      break;
    default:
      break;
  }
  return seg;
}

/** Segments in cache order: tools, system, messages. */
function segments(body: Obj): Seg[] {
  const segs: Seg[] = [];
  if (Array.isArray(body.tools)) {
    for (const t of body.tools) segs.push({ chars: JSON.stringify(t).length, images: 0, cc: ccOf(t), value: t });
  }
  if (typeof body.system === 'string') segs.push({ chars: body.system.length, images: 0, cc: undefined, value: body.system });
  else if (Array.isArray(body.system)) for (const b of body.system) segs.push(blockSeg(b));
  if (Array.isArray(body.messages)) {
    for (const m of body.messages) {
      if (!isObj(m)) continue;
      if (typeof m.content === 'string') segs.push({ chars: m.content.length, images: 0, cc: undefined, value: m.content });
      else if (Array.isArray(m.content)) for (const b of m.content) segs.push(blockSeg(b));
    }
  }
  if (isObj(body.cache_control) && segs.length > 0) {
    // top-level automatic caching: the breakpoint is the last block
    const last = segs[segs.length - 1];
    last.cc = last.cc ?? (str(body.cache_control.ttl) || '5m');
  }
  return segs;
}

/** Total input tokens of a Messages request (before the cache split): ceil(chars/4), min 1, + 85 per image/document. */
export function anthropicPromptTokens(body: Obj): number {
  let chars = 0;
  let images = 0;
  for (const s of segments(body)) {
    chars += s.chars;
    images += s.images;
  }
  return tokensOf(chars) + images * IMAGE_TOKENS;
}

interface InputUsage {
  input: number;
  creation: number;
  read: number;
  creation5m: number;
  creation1h: number;
}

/** Split the prompt into uncached / cache-written / cache-read, remembering written prefixes per server. */
function inputUsage(body: Obj, ctx: HandlerCtx): InputUsage {
  const segs = segments(body);
  let chars = 0;
  let images = 0;
  let lastCc = -1;
  for (let i = 0; i < segs.length; i++) {
    chars += segs[i].chars;
    images += segs[i].images;
    if (segs[i].cc) lastCc = i;
  }
  const total = tokensOf(chars) + images * IMAGE_TOKENS;
  const u: InputUsage = { input: total, creation: 0, read: 0, creation5m: 0, creation1h: 0 };
  if (lastCc < 0) return u;
  let pChars = 0;
  let pImages = 0;
  for (let i = 0; i <= lastCc; i++) {
    pChars += segs[i].chars;
    pImages += segs[i].images;
  }
  const cached = Math.min(total, tokensOrZero(pChars) + pImages * IMAGE_TOKENS);
  const key = str(body.model) + '\u0000' + JSON.stringify(segs.slice(0, lastCc + 1).map((s) => s.value));
  u.input = total - cached;
  if (ctx.state.anthropicCache.has(key)) {
    u.read = cached;
  } else {
    ctx.state.anthropicCache.add(key);
    u.creation = cached;
    if (segs[lastCc].cc === '1h') u.creation1h = cached;
    else u.creation5m = cached;
  }
  return u;
}

// ---------------------------------------------------------------- the answer

type Block =
  | { type: 'thinking'; thinking: string; signature: string }
  | { type: 'text'; text: string }
  | { type: 'tool_use'; id: string; name: string; input: string };

function blocksText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  let out = '';
  for (const b of content) {
    if (isObj(b) && b.type === 'text') out += str(b.text);
  }
  return out;
}

function lastToolResult(content: unknown): string | undefined {
  if (!Array.isArray(content)) return undefined;
  for (let i = content.length - 1; i >= 0; i--) {
    const b = content[i];
    if (isObj(b) && b.type === 'tool_result') return typeof b.content === 'string' ? b.content : blocksText(b.content);
  }
  return undefined;
}

function answer(body: Obj, seq: number, forceMax: boolean): { blocks: Block[]; stop: string; outputTokens: number } {
  const messages = Array.isArray(body.messages) ? body.messages : [];
  const last = messages.length > 0 && isObj(messages[messages.length - 1]) ? (messages[messages.length - 1] as Obj) : {};
  const toolResult = last.role === 'user' ? lastToolResult(last.content) : undefined;
  let userText = '';
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (isObj(m) && m.role === 'user') {
      const t = blocksText(m.content);
      if (t !== '' || lastToolResult(m.content) === undefined) {
        userText = t;
        break;
      }
    }
  }
  const blocks: Block[] = [];
  const thinking = isObj(body.thinking) && (body.thinking.type === 'enabled' || body.thinking.type === 'adaptive');
  if (thinking) {
    blocks.push({
      type: 'thinking',
      thinking: 'Thinking about: ' + head40(toolResult ?? userText),
      signature: Buffer.from('fake-signature:' + idBody('msg_', seq)).toString('base64'),
    });
  }
  const choice = isObj(body.tool_choice) ? str(body.tool_choice.type) : 'auto';
  const tools = Array.isArray(body.tools)
    ? body.tools.filter((t): t is Obj => isObj(t) && typeof t.name === 'string' && isObj(t.input_schema))
    : [];
  let stop = 'end_turn';
  if (toolResult === undefined && tools.length > 0 && choice !== 'none') {
    const wanted = choice === 'tool' && isObj(body.tool_choice) ? str(body.tool_choice.name) : '';
    const tool = tools.find((t) => t.name === wanted) ?? tools[0];
    const name = str(tool.name);
    if (choice === 'auto') blocks.push({ type: 'text', text: `Calling ${name}.` });
    blocks.push({
      type: 'tool_use',
      id: idBody('toolu_', seq, 28),
      name,
      input: JSON.stringify(fillFromSchema(tool.input_schema)),
    });
    stop = 'tool_use';
  } else {
    let text = toolResult !== undefined ? 'tool result: ' + head40(toolResult) : 'echo: ' + head40(userText);
    const max = body.max_tokens;
    if (!thinking && typeof max === 'number' && max >= 1 && tokensOf(text.length) > max) {
      text = text.slice(0, max * 4);
      stop = 'max_tokens';
    }
    blocks.push({ type: 'text', text });
  }
  if (forceMax) stop = 'max_tokens';
  let outputTokens = 0;
  for (const b of blocks) {
    if (b.type === 'text') outputTokens += tokensOf(b.text.length);
    else if (b.type === 'thinking') outputTokens += tokensOf(b.thinking.length);
    else outputTokens += tokensOf(b.name.length + b.input.length);
  }
  return { blocks, stop, outputTokens };
}

function usageJson(u: InputUsage, output: number): string {
  return (
    '{"input_tokens":' +
    u.input +
    ',"cache_creation_input_tokens":' +
    u.creation +
    ',"cache_read_input_tokens":' +
    u.read +
    ',"cache_creation":{"ephemeral_5m_input_tokens":' +
    u.creation5m +
    ',"ephemeral_1h_input_tokens":' +
    u.creation1h +
    '},"output_tokens":' +
    output +
    ',"service_tier":"standard"}'
  );
}

function blockJson(b: Block): string {
  if (b.type === 'text') return '{"type":"text","text":' + JSON.stringify(b.text) + '}';
  if (b.type === 'thinking') {
    return '{"type":"thinking","thinking":' + JSON.stringify(b.thinking) + ',"signature":' + JSON.stringify(b.signature) + '}';
  }
  return '{"type":"tool_use","id":"' + b.id + '","name":' + JSON.stringify(b.name) + ',"input":' + b.input + '}';
}

function validate(body: unknown, seq: number): Plan | Obj {
  if (!isObj(body)) return anthropicError(400, seq, 'There was an issue with the JSON body of your request.');
  if (typeof body.model !== 'string' || body.model === '') return anthropicError(400, seq, 'model: Field required');
  if (!Array.isArray(body.messages)) return anthropicError(400, seq, 'messages: Field required');
  return body;
}

function isPlan(v: Plan | Obj): v is Plan {
  return typeof (v as Plan).status === 'number' && Array.isArray((v as Plan).headers);
}

// ---------------------------------------------------------------- plans

export function anthropicCountTokensPlan(ctx: HandlerCtx): Plan {
  const v = validate(ctx.json, ctx.seq);
  if (isPlan(v)) return v;
  return { status: 200, headers: headers(CT_JSON, ctx.seq), body: '{"input_tokens":' + anthropicPromptTokens(v) + '}' };
}

export function anthropicPlan(ctx: HandlerCtx): Plan {
  const v = validate(ctx.json, ctx.seq);
  if (isPlan(v)) return v;
  const body = v;
  if (typeof body.max_tokens !== 'number') return anthropicError(400, ctx.seq, 'max_tokens: Field required');
  const model = str(body.model);
  const sc = ctx.scenario.name;
  const errStatus = errorStatus(sc);
  if (errStatus !== undefined) return anthropicError(errStatus, ctx.seq, undefined, model);

  const id = idBody('msg_', ctx.seq, 28);
  const { blocks, stop, outputTokens } = answer(body, ctx.seq, sc === 'length');
  const u = inputUsage(body, ctx);
  const withUsage = sc !== 'no-usage';

  if (body.stream !== true) {
    const json =
      '{"id":"' +
      id +
      '","type":"message","role":"assistant","model":' +
      JSON.stringify(model) +
      ',"content":[' +
      blocks.map(blockJson).join(',') +
      '],"stop_reason":"' +
      stop +
      '","stop_sequence":null' +
      (withUsage ? ',"usage":' + usageJson(u, outputTokens) : '') +
      '}';
    return { status: 200, headers: headers(CT_JSON, ctx.seq), body: json };
  }

  const events: string[] = [];
  let deltas = 0;
  let cutAfter = 0;
  const delta = (index: number, d: string): void => {
    events.push(sseEvent('content_block_delta', '{"type":"content_block_delta","index":' + index + ',"delta":' + d + '}'));
    if (++deltas === 2) cutAfter = events.length;
  };
  events.push(
    sseEvent(
      'message_start',
      '{"type":"message_start","message":{"id":"' +
        id +
        '","type":"message","role":"assistant","model":' +
        JSON.stringify(model) +
        ',"content":[],"stop_reason":null,"stop_sequence":null' +
        (withUsage ? ',"usage":' + usageJson(u, 1) : '') +
        '}}',
    ),
  );
  blocks.forEach((b, i) => {
    let start: string;
    if (b.type === 'text') start = '{"type":"text","text":""}';
    else if (b.type === 'thinking') start = '{"type":"thinking","thinking":"","signature":""}';
    else start = '{"type":"tool_use","id":"' + b.id + '","name":' + JSON.stringify(b.name) + ',"input":{}}';
    events.push(sseEvent('content_block_start', '{"type":"content_block_start","index":' + i + ',"content_block":' + start + '}'));
    if (i === 0) events.push(sseEvent('ping', '{"type": "ping"}'));
    if (b.type === 'text') {
      for (const p of splitDeltas(b.text)) delta(i, '{"type":"text_delta","text":' + JSON.stringify(p) + '}');
    } else if (b.type === 'thinking') {
      for (const p of splitDeltas(b.thinking)) delta(i, '{"type":"thinking_delta","thinking":' + JSON.stringify(p) + '}');
      delta(i, '{"type":"signature_delta","signature":' + JSON.stringify(b.signature) + '}');
    } else {
      delta(i, '{"type":"input_json_delta","partial_json":""}');
      for (const p of splitFragments(b.input)) delta(i, '{"type":"input_json_delta","partial_json":' + JSON.stringify(p) + '}');
    }
    events.push(sseEvent('content_block_stop', '{"type":"content_block_stop","index":' + i + '}'));
  });
  events.push(
    sseEvent(
      'message_delta',
      '{"type":"message_delta","delta":{"stop_reason":"' +
        stop +
        '","stop_sequence":null}' +
        (withUsage
          ? ',"usage":{"input_tokens":' +
            u.input +
            ',"cache_creation_input_tokens":' +
            u.creation +
            ',"cache_read_input_tokens":' +
            u.read +
            ',"output_tokens":' +
            outputTokens +
            '}'
          : '') +
        '}',
    ),
  );
  events.push(sseEvent('message_stop', '{"type":"message_stop"}'));
  return {
    status: 200,
    headers: headers(CT_SSE, ctx.seq),
    events,
    cutAfter: cutAfter || events.length - 2,
    errorFrame: STREAM_ERROR_FRAME,
  };
}
