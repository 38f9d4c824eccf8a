// OpenAI Responses API (reference §3): JSON and the event stream response.created … response.completed.
import {
  IMAGE_TOKENS,
  errorStatus,
  fillFromSchema,
  head40,
  idBody,
  isObj,
  obfuscation,
  splitDeltas,
  splitFragments,
  sseEvent,
  str,
  tokensOf,
} from './common.ts';
import type { HandlerCtx, Obj, Plan } from './common.ts';
import { CT_JSON, CT_SSE, badRequest, openaiError, openaiHeaders } from './openai-chat.ts';

interface Count {
  chars: number;
  images: number;
}

function countContent(content: unknown, acc: Count): void {
  if (typeof content === 'string') {
    acc.chars += content.length;
    return;
  }
  if (!Array.isArray(content)) return;
  for (const p of content) {
    if (!isObj(p)) continue;
    if (p.type === 'input_image' || p.type === 'input_file') acc.images++;
    else if (typeof p.text === 'string') acc.chars += p.text.length;
  }
}

function count(body: Obj): Count {
  const acc: Count = { chars: 0, images: 0 };
  if (typeof body.instructions === 'string') acc.chars += body.instructions.length;
  if (typeof body.input === 'string') acc.chars += body.input.length;
  else if (Array.isArray(body.input)) {
    for (const item of body.input) {
      if (!isObj(item)) continue;
      if (item.type === 'function_call') acc.chars += str(item.name).length + str(item.arguments).length;
      else if (item.type === 'function_call_output') countContent(item.output, acc);
      else countContent(item.content, acc);
    }
  }
  if (Array.isArray(body.tools) && body.tools.length > 0) acc.chars += JSON.stringify(body.tools).length;
  return acc;
}

/** input_tokens of a Responses request: instructions + input text + tools JSON, ceil(chars/4), min 1, + 85/image. */
export function responsesPromptTokens(body: Obj): number {
  const c = count(body);
  return tokensOf(c.chars) + c.images * IMAGE_TOKENS;
}

function lastUserText(input: unknown): string {
  if (typeof input === 'string') return input;
  if (!Array.isArray(input)) return '';
  for (let i = input.length - 1; i >= 0; i--) {
    const item = input[i];
    if (isObj(item) && (item.role === 'user' || (item.type === undefined && item.role === undefined))) {
      if (typeof item.content === 'string') return item.content;
      let out = '';
      if (Array.isArray(item.content)) for (const p of item.content) if (isObj(p) && typeof p.text === 'string') out += p.text;
      return out;
    }
  }
  return '';
}

export function responsesPlan(ctx: HandlerCtx): Plan {
  const body = ctx.json;
  if (!isObj(body)) return badRequest('We could not parse the JSON body of your request.', null, ctx.seq);
  const model = str(body.model);
  if (!model) return badRequest("Missing required parameter: 'model'.", 'model', ctx.seq);
  const sc = ctx.scenario.name;
  const errStatus = errorStatus(sc);
  if (errStatus !== undefined) return openaiError(errStatus, model, ctx.seq);

  const c = count(body);
  const inputTokens = tokensOf(c.chars) + c.images * IMAGE_TOKENS;
  const cached = body.prompt_cache_key != null ? Math.floor(inputTokens / 2) : 0;
  const items = Array.isArray(body.input) ? body.input : [];
  const lastItem = items.length > 0 && isObj(items[items.length - 1]) ? (items[items.length - 1] as Obj) : {};
  const afterTool = lastItem.type === 'function_call_output';
  const fnTools = Array.isArray(body.tools)
    ? body.tools.filter((t): t is Obj => isObj(t) && t.type === 'function' && typeof t.name === 'string')
    : [];
  const respId = idBody('resp_', ctx.seq, 32);
  const itemId = idBody(afterTool || fnTools.length === 0 || body.tool_choice === 'none' ? 'msg_' : 'fc_', ctx.seq, 32);
  const callId = idBody('call_', ctx.seq, 24);

  let kind: 'text' | 'call' = 'text';
  let text = '';
  let fnName = '';
  let fnArgs = '';
  let status = 'completed';
  let incomplete: string | null = null;
  let outputTokens: number;
  if (!afterTool && fnTools.length > 0 && body.tool_choice !== 'none') {
    const wanted = isObj(body.tool_choice) ? str(body.tool_choice.name) : '';
    const tool = fnTools.find((t) => t.name === wanted) ?? fnTools[0];
    kind = 'call';
    fnName = str(tool.name);
    fnArgs = JSON.stringify(fillFromSchema(tool.parameters ?? { type: 'object' }));
    outputTokens = tokensOf(fnName.length + fnArgs.length);
  } else {
    text = afterTool
      ? 'tool result: ' + head40(typeof lastItem.output === 'string' ? lastItem.output : JSON.stringify(lastItem.output ?? ''))
      : 'echo: ' + head40(lastUserText(body.input));
    const max = body.max_output_tokens;
    if ((typeof max === 'number' && max >= 1 && tokensOf(text.length) > max) || sc === 'length') {
      if (typeof max === 'number' && max >= 1) text = text.slice(0, max * 4);
      status = 'incomplete';
      incomplete = 'max_output_tokens';
    }
    outputTokens = tokensOf(text.length);
  }
  const usage =
    sc === 'no-usage'
      ? 'null'
      : '{"input_tokens":' +
        inputTokens +
        ',"input_tokens_details":{"cached_tokens":' +
        cached +
        ',"cache_write_tokens":0},"output_tokens":' +
        outputTokens +
        ',"output_tokens_details":{"reasoning_tokens":0},"total_tokens":' +
        (inputTokens + outputTokens) +
        '}';

  const itemJson = (done: boolean, content: string): string =>
    kind === 'call'
      ? '{"id":"' +
        itemId +
        '","type":"function_call","status":"' +
        (done ? 'completed' : 'in_progress') +
        '","arguments":' +
        JSON.stringify(done ? fnArgs : '') +
        ',"call_id":"' +
        callId +
        '","name":' +
        JSON.stringify(fnName) +
        '}'
      : '{"id":"' +
        itemId +
        '","type":"message","status":"' +
        (done ? (status === 'incomplete' ? 'incomplete' : 'completed') : 'in_progress') +
        '","content":[' +
        content +
        '],"role":"assistant"}';
  const partJson = (t: string): string => '{"type":"output_text","annotations":[],"logprobs":[],"text":' + JSON.stringify(t) + '}';
  const finalItem = itemJson(true, kind === 'text' ? partJson(text) : '');

  const respJson = (st: string, output: string, u: string, inc: string | null): string =>
    '{"id":"' +
    respId +
    '","object":"response","created_at":' +
    ctx.now +
    ',"status":"' +
    st +
    '","background":false,"error":null,"incomplete_details":' +
    (inc ? '{"reason":"' + inc + '"}' : 'null') +
    ',"instructions":' +
    JSON.stringify(typeof body.instructions === 'string' ? body.instructions : null) +
    ',"max_output_tokens":' +
    JSON.stringify(typeof body.max_output_tokens === 'number' ? body.max_output_tokens : null) +
    ',"model":' +
    JSON.stringify(model) +
    ',"output":[' +
    output +
    '],"parallel_tool_calls":' +
    JSON.stringify(body.parallel_tool_calls !== false) +
    ',"previous_response_id":' +
    JSON.stringify(typeof body.previous_response_id === 'string' ? body.previous_response_id : null) +
    ',"prompt_cache_key":' +
    JSON.stringify(typeof body.prompt_cache_key === 'string' ? body.prompt_cache_key : null) +
    ',"reasoning":{"effort":null,"summary":null},"service_tier":"default","store":' +
    JSON.stringify(body.store !== false) +
    ',"temperature":' +
    JSON.stringify(typeof body.temperature === 'number' ? body.temperature : 1) +
    ',"text":{"format":{"type":"text"},"verbosity":"medium"},"tool_choice":' +
    JSON.stringify(body.tool_choice ?? 'auto') +
    ',"tools":' +
    JSON.stringify(Array.isArray(body.tools) ? body.tools : []) +
    ',"top_p":' +
    JSON.stringify(typeof body.top_p === 'number' ? body.top_p : 1) +
    ',"truncation":"disabled","usage":' +
    u +
    ',"user":null,"metadata":' +
    JSON.stringify(isObj(body.metadata) ? body.metadata : {}) +
    '}';

  if (body.stream !== true) {
    return { status: 200, headers: openaiHeaders(CT_JSON, ctx.seq), body: respJson(status, finalItem, usage, incomplete) };
  }

  const events: string[] = [];
  let deltas = 0;
  let cutAfter = 0;
  const ev = (type: string, rest: string): void => {
    events.push(sseEvent(type, '{"type":"' + type + '","sequence_number":' + events.length + rest + '}'));
  };
  const inProgress = respJson('in_progress', '', 'null', null);
  ev('response.created', ',"response":' + inProgress);
  ev('response.in_progress', ',"response":' + inProgress);
  ev('response.output_item.added', ',"output_index":0,"item":' + itemJson(false, ''));
  const ids = ',"item_id":"' + itemId + '","output_index":0';
  if (kind === 'call') {
    for (const frag of splitFragments(fnArgs)) {
      ev('response.function_call_arguments.delta', ids + ',"delta":' + JSON.stringify(frag));
      if (++deltas === 2) cutAfter = events.length;
    }
    ev('response.function_call_arguments.done', ids + ',"name":' + JSON.stringify(fnName) + ',"arguments":' + JSON.stringify(fnArgs));
  } else {
    ev('response.content_part.added', ids + ',"content_index":0,"part":' + partJson(''));
    for (const piece of splitDeltas(text)) {
      ev(
        'response.output_text.delta',
        ids + ',"content_index":0,"delta":' + JSON.stringify(piece) + ',"logprobs":[],"obfuscation":"' + obfuscation(events.length) + '"',
      );
      if (++deltas === 2) cutAfter = events.length;
    }
    ev('response.output_text.done', ids + ',"content_index":0,"text":' + JSON.stringify(text) + ',"logprobs":[]');
    ev('response.content_part.done', ids + ',"content_index":0,"part":' + partJson(text));
  }
  ev('response.output_item.done', ',"output_index":0,"item":' + finalItem);
  const terminal = status === 'incomplete' ? 'response.incomplete' : 'response.completed';
  ev(terminal, ',"response":' + respJson(status, finalItem, usage, incomplete));
  if (cutAfter === 0) cutAfter = events.length - 1;
  return {
    status: 200,
    headers: openaiHeaders(CT_SSE, ctx.seq),
    events,
    cutAfter,
    errorFrame: sseEvent(
      'error',
      '{"type":"error","sequence_number":' +
        cutAfter +
        ',"code":"server_error","message":"The server had an error while processing your request. Sorry about that!","param":null}',
    ),
  };
}
