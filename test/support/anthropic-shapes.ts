// JSON Schemas of Anthropic messages wire shapes, written from /work/shared/reference/protocols.md §2.3–§2.6
// (the SDK types quoted there), and a checker for the stream's event grammar. Tests validate every message,
// event and error body the gateway produces on the messages routes against them.
import { Ajv } from 'ajv';
import { createParser } from 'eventsource-parser';
import type { ValidateFunction } from 'ajv';

const int = { type: 'integer', minimum: 0 };
const nullableInt = { type: ['integer', 'null'], minimum: 0 };
const STOP_REASONS = ['end_turn', 'max_tokens', 'stop_sequence', 'tool_use', 'pause_turn', 'refusal', 'model_context_window_exceeded'];
const ERROR_TYPES = ['invalid_request_error', 'authentication_error', 'billing_error', 'permission_error', 'not_found_error', 'request_too_large', 'rate_limit_error', 'api_error', 'timeout_error', 'overloaded_error'];

const usage = {
  type: 'object',
  required: ['input_tokens', 'output_tokens'],
  additionalProperties: false,
  properties: {
    input_tokens: int,
    output_tokens: int,
    cache_creation_input_tokens: nullableInt,
    cache_read_input_tokens: nullableInt,
    cache_creation: { type: ['object', 'null'] },
    server_tool_use: { type: ['object', 'null'] },
    output_tokens_details: { type: ['object', 'null'] },
    service_tier: { type: ['string', 'null'] },
  },
};

const deltaUsage = { ...usage, required: ['output_tokens'] };

const textBlock = { type: 'object', required: ['type', 'text'], additionalProperties: false, properties: { type: { const: 'text' }, text: { type: 'string' }, citations: { type: ['array', 'null'] } } };
const thinkingBlock = { type: 'object', required: ['type', 'thinking', 'signature'], additionalProperties: false, properties: { type: { const: 'thinking' }, thinking: { type: 'string' }, signature: { type: 'string' } } };
// The docs' stream example starts a thinking block without "signature" (reference §2.5): accept both there.
const thinkingStart = { ...thinkingBlock, required: ['type', 'thinking'] };
const redactedBlock = { type: 'object', required: ['type', 'data'], additionalProperties: false, properties: { type: { const: 'redacted_thinking' }, data: { type: 'string' } } };
const toolUseBlock = {
  type: 'object',
  required: ['type', 'id', 'name', 'input'],
  additionalProperties: false,
  properties: { type: { const: 'tool_use' }, id: { type: 'string', minLength: 1 }, name: { type: 'string' }, input: { type: 'object' }, caller: { type: 'object' } },
};

const message = {
  type: 'object',
  required: ['id', 'type', 'role', 'model', 'content', 'stop_reason', 'stop_sequence', 'usage'],
  additionalProperties: false,
  properties: {
    id: { type: 'string', pattern: '^msg_' },
    type: { const: 'message' },
    role: { const: 'assistant' },
    model: { type: 'string', minLength: 1 },
    content: { type: 'array', items: { oneOf: [textBlock, thinkingBlock, redactedBlock, toolUseBlock] } },
    stop_reason: { enum: [...STOP_REASONS, null] },
    stop_sequence: { type: ['string', 'null'] },
    usage,
    container: { type: ['object', 'null'] },
    stop_details: { type: ['object', 'null'] },
  },
};

const errorObject = { type: 'object', required: ['type', 'message'], additionalProperties: false, properties: { type: { enum: ERROR_TYPES }, message: { type: 'string', minLength: 1 } } };

export const errorBodySchema = {
  type: 'object',
  required: ['type', 'error'],
  additionalProperties: false,
  properties: { type: { const: 'error' }, error: errorObject, request_id: { type: 'string' } },
};

const index = { type: 'integer', minimum: 0 };
const event = (type: string, props: Record<string, unknown>, required: string[]) => ({
  type: 'object',
  required: ['type', ...required],
  additionalProperties: false,
  properties: { type: { const: type }, ...props },
});

export const streamEventSchemas: Record<string, unknown> = {
  message_start: event('message_start', { message: { ...message, properties: { ...message.properties, content: { type: 'array', maxItems: 0 }, stop_reason: { const: null } } } }, ['message']),
  content_block_start: event('content_block_start', { index, content_block: { oneOf: [{ ...textBlock, properties: { ...textBlock.properties, text: { const: '' } } }, thinkingStart, redactedBlock, { ...toolUseBlock, properties: { ...toolUseBlock.properties, input: { type: 'object', maxProperties: 0 } } }] } }, ['index', 'content_block']),
  content_block_delta: event(
    'content_block_delta',
    {
      index,
      delta: {
        oneOf: [
          event('text_delta', { text: { type: 'string' } }, ['text']),
          event('input_json_delta', { partial_json: { type: 'string' } }, ['partial_json']),
          event('thinking_delta', { thinking: { type: 'string' } }, ['thinking']),
          event('signature_delta', { signature: { type: 'string' } }, ['signature']),
          event('citations_delta', { citation: { type: 'object' } }, ['citation']),
        ],
      },
    },
    ['index', 'delta'],
  ),
  content_block_stop: event('content_block_stop', { index }, ['index']),
  message_delta: event(
    'message_delta',
    {
      delta: { type: 'object', required: ['stop_reason', 'stop_sequence'], additionalProperties: false, properties: { stop_reason: { enum: STOP_REASONS }, stop_sequence: { type: ['string', 'null'] }, container: { type: ['object', 'null'] }, stop_details: { type: ['object', 'null'] } } },
      usage: deltaUsage,
    },
    ['delta', 'usage'],
  ),
  message_stop: event('message_stop', {}, []),
  ping: event('ping', {}, []),
  error: { ...errorBodySchema, properties: { type: { const: 'error' }, error: errorObject } },
};

const ajv = new Ajv({ allErrors: true, strict: true, allowUnionTypes: true });
const validators = new Map<string, ValidateFunction>(Object.entries(streamEventSchemas).map(([k, s]) => [k, ajv.compile(s as object)]));
const messageValidator = ajv.compile(message);
const errorValidator = ajv.compile(errorBodySchema);

function explain(v: ValidateFunction): string {
  return ajv.errorsText(v.errors, { separator: '; ' });
}

/** Problems of a non-streamed message body ([] when it conforms). */
export function checkMessage(body: unknown): string[] {
  return messageValidator(body) ? [] : [explain(messageValidator)];
}

export function checkErrorBody(body: unknown): string[] {
  return errorValidator(body) ? [] : [explain(errorValidator)];
}

export interface WireEvent {
  event?: string;
  data: string;
}

/**
 * Problems of a whole stream ([] when it conforms): each event's shape, `event:` equal to `data.type`, and the grammar
 * message_start, (block start, deltas of the block's kind, stop with consecutive indices)*, message_delta+, message_stop,
 * with ping anywhere and an error event allowed to end it early. `complete` = it ended with message_stop.
 */
export function checkMessagesStream(events: WireEvent[], opts: { allowError?: boolean } = {}): string[] {
  const problems: string[] = [];
  let phase: 'start' | 'blocks' | 'delta' | 'done' = 'start';
  let open: { index: number; kind: string } | undefined;
  let next = 0;
  for (const [i, ev] of events.entries()) {
    const at = `event ${i} (${ev.event ?? 'no name'})`;
    let data: { type?: string; index?: number; content_block?: { type: string }; delta?: { type: string } };
    try {
      data = JSON.parse(ev.data);
    } catch {
      problems.push(`${at}: data is not JSON`);
      continue;
    }
    if (ev.event !== data.type) problems.push(`${at}: event name differs from data.type ${String(data.type)}`);
    const v = validators.get(ev.event ?? '');
    if (!v) {
      problems.push(`${at}: unknown event`);
      continue;
    }
    if (!v(data)) problems.push(`${at}: ${explain(v)}`);
    if (phase === 'done') problems.push(`${at}: after the end of the stream`);
    switch (ev.event) {
      case 'ping':
        continue;
      case 'error':
        if (!opts.allowError) problems.push(`${at}: unexpected error event`);
        phase = 'done';
        continue;
      case 'message_start':
        if (phase !== 'start') problems.push(`${at}: second message_start`);
        phase = 'blocks';
        continue;
      case 'content_block_start':
        if (phase !== 'blocks') problems.push(`${at}: block outside the content phase`);
        if (open) problems.push(`${at}: block ${open.index} still open`);
        if (data.index !== next) problems.push(`${at}: index ${data.index} where ${next} was due`);
        open = { index: data.index ?? -1, kind: data.content_block?.type ?? '' };
        next++;
        continue;
      case 'content_block_delta': {
        if (!open || data.index !== open.index) {
          problems.push(`${at}: delta for a block that is not open`);
          continue;
        }
        const allowed: Record<string, string[]> = { text: ['text_delta', 'citations_delta'], tool_use: ['input_json_delta'], thinking: ['thinking_delta', 'signature_delta'] };
        if (!(allowed[open.kind] ?? []).includes(data.delta?.type ?? '')) problems.push(`${at}: ${data.delta?.type} in a ${open.kind} block`);
        continue;
      }
      case 'content_block_stop':
        if (!open || data.index !== open.index) problems.push(`${at}: stop for a block that is not open`);
        open = undefined;
        continue;
      case 'message_delta':
        if (phase === 'start') problems.push(`${at}: before message_start`);
        if (open) problems.push(`${at}: block ${open.index} still open`);
        phase = 'delta';
        continue;
      case 'message_stop':
        if (phase !== 'delta') problems.push(`${at}: message_stop without a message_delta before it`);
        phase = 'done';
        continue;
    }
  }
  if (phase !== 'done') problems.push('the stream ended without message_stop or an error event');
  return problems;
}

/** Splits SSE text into events with the same maintained parser the gateway uses. */
export function parseSse(text: string): WireEvent[] {
  const out: WireEvent[] = [];
  const parser = createParser({ onEvent: (ev) => out.push({ event: ev.event, data: ev.data }) });
  parser.feed(text);
  return out;
}
