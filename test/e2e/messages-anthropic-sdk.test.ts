// The official @anthropic-ai/sdk on both messages base URLs, against an anthropic-protocol model (pass-through) and an
// openai-only model (converted through chat): create and stream agree, every wire byte is a valid Anthropic shape.
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkMessage, checkMessagesStream, parseSse } from '../support/anthropic-shapes.ts';
import { expectedCost, MINI_ACME } from '../support/expected-cost.ts';
import type { TestGateway } from '../support/gateway.ts';
import { startTestGateway } from '../support/gateway.ts';

const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
const weather: Anthropic.Tool = {
  name: 'get_weather',
  description: 'Weather for a city',
  input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

/** Every response the SDK received, with its raw bytes (the SDK parses one copy, the test keeps the other). */
interface Wire {
  status: number;
  contentType: string;
  requestId: string | null;
  text: Promise<string>;
}

function recordingFetch(log: Wire[]): typeof fetch {
  return async (input, init) => {
    const res = await fetch(input, init);
    if (!res.body) return res;
    const [mine, theirs] = res.body.tee();
    log.push({ status: res.status, contentType: res.headers.get('content-type') ?? '', requestId: res.headers.get('x-tollgate-request-id'), text: new Response(mine).text() });
    return new Response(theirs, { status: res.status, statusText: res.statusText, headers: res.headers });
  };
}

/** The raw bytes of the last response, checked against the Anthropic shapes. */
async function lastWireIsValid(log: Wire[], kind: 'json' | 'sse'): Promise<string> {
  const w = log.at(-1)!;
  const text = await w.text;
  if (kind === 'sse') {
    expect(w.contentType).toContain('text/event-stream');
    expect(checkMessagesStream(parseSse(text))).toEqual([]);
  } else {
    expect(w.contentType).toContain('application/json');
    expect(checkMessage(JSON.parse(text))).toEqual([]);
  }
  return text;
}

/** What a finished message says, without the fields that legitimately differ per call (ids). */
function comparable(m: Anthropic.Message) {
  return {
    model: m.model,
    // Tool ids and thinking signatures are minted per upstream message.
    content: m.content.map((b) => (b.type === 'tool_use' ? { type: b.type, name: b.name, input: b.input } : b.type === 'thinking' ? { type: b.type, thinking: b.thinking } : b)),
    stop_reason: m.stop_reason,
    stop_sequence: m.stop_sequence,
    usage: { input_tokens: m.usage.input_tokens, output_tokens: m.usage.output_tokens, cache_read_input_tokens: m.usage.cache_read_input_tokens ?? 0 },
  };
}

let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway();
});
afterAll(async () => t?.close());

const combos: [string, string, 'pass-through' | 'converted'][] = [
  ['/api', 'anthropic/claude', 'pass-through'],
  ['/api/anthropic', 'anthropic/claude', 'pass-through'],
  ['/api', 'openai/gpt-4o-mini', 'converted'],
  ['/api/anthropic', 'openai/gpt-4o-mini', 'converted'],
];

describe.each(combos)('messages on %s with %s (%s)', (base, model, how) => {
  const log: Wire[] = [];
  let client: Anthropic;
  beforeAll(() => {
    client = new Anthropic({ baseURL: `${t.url}${base}`, apiKey: t.keys.acme, maxRetries: 0, fetch: recordingFetch(log) });
  });

  async function createAndStream(params: Anthropic.MessageCreateParamsNonStreaming): Promise<{ json: Anthropic.Message; streamed: Anthropic.Message; texts: string[]; ids: string[] }> {
    const { data: json, response } = await client.messages.create(params).withResponse();
    await lastWireIsValid(log, 'json');
    // The cost header is the exact price of the usage the client was shown.
    expect(response.headers.get('x-tollgate-cost-points')).toBe(expectedCost({ input: json.usage.input_tokens, output: json.usage.output_tokens, cacheRead: json.usage.cache_read_input_tokens ?? 0 }, MINI_ACME).cost);
    const stream = client.messages.stream(params);
    const texts: string[] = [];
    stream.on('text', (d) => texts.push(d));
    const streamed = await stream.finalMessage();
    await lastWireIsValid(log, 'sse');
    const ids = [response.headers.get('x-tollgate-request-id')!, log.at(-1)!.requestId!];
    expect(comparable(streamed)).toEqual(comparable(json));
    return { json, streamed, texts, ids };
  }

  it('text: create and stream give the same answer, usage and stop reason', async () => {
    const { json, texts } = await createAndStream({ model, max_tokens: 200, system: 'Be brief.', messages: [{ role: 'user', content: 'Say hello to the gateway' }] });
    expect(json.content).toEqual([{ type: 'text', text: 'echo: Say hello to the gateway' }]);
    expect(json.stop_reason).toBe('end_turn');
    expect(json.id).toMatch(/^msg_/);
    expect(json.usage.input_tokens).toBeGreaterThan(0);
    expect(texts.join('')).toBe('echo: Say hello to the gateway');
  });

  it('tools: a full round trip, tool_use then tool_result, streamed and not', async () => {
    const ask: Anthropic.MessageParam = { role: 'user', content: 'Weather in Paris?' };
    const first = await createAndStream({ model, max_tokens: 300, tools: [weather], messages: [ask] });
    expect(first.json.stop_reason).toBe('tool_use');
    const call = first.streamed.content.find((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use')!;
    expect(call).toMatchObject({ name: 'get_weather', input: { city: expect.any(String) } });
    const second = await createAndStream({
      model,
      max_tokens: 300,
      tools: [weather],
      messages: [ask, { role: 'assistant', content: first.streamed.content }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: 'Sunny, 21 C' }] }],
    });
    expect(second.json.stop_reason).toBe('end_turn');
    expect(second.json.content).toEqual([{ type: 'text', text: 'tool result: Sunny, 21 C' }]);
    if (how === 'converted') {
      const sent = t.upstream.requests.at(-1)!.json as { messages: Record<string, unknown>[] };
      expect(sent.messages.at(-2)).toMatchObject({ role: 'assistant', tool_calls: [{ id: call.id, function: { name: 'get_weather' } }] });
      expect(sent.messages.at(-1)).toEqual({ role: 'tool', tool_call_id: call.id, content: 'Sunny, 21 C' });
    }
  });

  it('images: base64 and url sources reach the upstream and are counted', async () => {
    t.upstream.reset();
    const { json } = await createAndStream({
      model,
      max_tokens: 200,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What are these?' },
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } },
            { type: 'image', source: { type: 'url', url: 'https://example.com/cat.png' } },
          ],
        },
      ],
    });
    // The fake counts 85 tokens per image in either protocol.
    expect(json.usage.input_tokens).toBeGreaterThan(170);
    const sent = t.upstream.requests.at(-1)!.json as { messages: { content: unknown }[] };
    if (how === 'converted') {
      expect(sent.messages[0].content).toEqual([
        { type: 'text', text: 'What are these?' },
        { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } },
        { type: 'image_url', image_url: { url: 'https://example.com/cat.png' } },
      ]);
    } else {
      expect((sent.messages[0].content as { type: string }[]).map((b) => b.type)).toEqual(['text', 'image', 'image']);
    }
  });

  it('thinking: thinking blocks come back first, streamed and not', async () => {
    if (how === 'converted') scriptReasoningAnswers(t);
    const { json, streamed } = await createAndStream({ model, max_tokens: 4000, thinking: { type: 'enabled', budget_tokens: 2048 }, messages: [{ role: 'user', content: 'What is 27 * 453?' }] });
    expect(json.content.map((b) => b.type)).toEqual(['thinking', 'text']);
    expect((json.content[0] as Anthropic.ThinkingBlock).thinking.length).toBeGreaterThan(0);
    expect(streamed.content[0]).toMatchObject({ type: 'thinking', thinking: (json.content[0] as Anthropic.ThinkingBlock).thinking });
    if (how === 'converted') {
      const sent = t.upstream.requests.at(-1)!.json as Record<string, unknown>;
      expect(sent.reasoning_effort).toBe('medium');
      expect(sent.thinking).toBeUndefined();
      expect(sent.stream_options).toEqual({ include_usage: true });
    }
  });

  it('the stream and the JSON answer are billed the same, to the token and the last decimal', async () => {
    const { ids } = await createAndStream({ model, max_tokens: 200, messages: [{ role: 'user', content: 'Bill me twice, once streamed' }] });
    await t.gw.ledger.flush();
    const rows = await t.gw.store.query<{ stream: boolean; input: string; output: string; cache_read: string; cost_points: string; estimated: boolean; endpoint: string; client_model: string }>(
      'SELECT stream, input::text, output::text, cache_read::text, cost_points::text, estimated, endpoint, client_model FROM usage_events WHERE request_id = ANY($1) ORDER BY stream',
      [ids],
    );
    expect(rows.rows).toHaveLength(2);
    const [plain, streamed] = rows.rows;
    expect(streamed.stream).toBe(true);
    expect({ ...streamed, stream: false }).toEqual(plain);
    expect(plain.estimated).toBe(false);
    expect(plain.client_model).toBe(model);
    expect(plain.endpoint).toBe(`${base === '/api' ? '/api/v1' : '/api/anthropic/v1'}/messages`);
  });
});

/** A reasoning chat upstream (the fake has none): the same answer once as JSON, once as a stream. */
function scriptReasoningAnswers(tg: TestGateway): void {
  const usage = { prompt_tokens: 14, completion_tokens: 42, total_tokens: 56, prompt_tokens_details: { cached_tokens: 0 }, completion_tokens_details: { reasoning_tokens: 30 } };
  const head = { id: 'chatcmpl-think1', created: 1750000000, model: 'gpt-4o-mini-2024-07-18' };
  tg.upstream.nextResponse({
    path: '/chat/completions',
    body: { ...head, object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: '27 × 453 = 12,231', reasoning_content: '27 * 453 = 12231' }, finish_reason: 'stop' }], usage },
  });
  const chunk = (choices: unknown[], u: unknown = null) => `data: ${JSON.stringify({ ...head, object: 'chat.completion.chunk', choices, usage: u })}\n\n`;
  tg.upstream.nextResponse({
    path: '/chat/completions',
    chunks: [
      chunk([{ index: 0, delta: { role: 'assistant', content: '', reasoning_content: '27 * 453' }, finish_reason: null }]),
      chunk([{ index: 0, delta: { reasoning_content: ' = 12231' }, finish_reason: null }]),
      chunk([{ index: 0, delta: { content: '27 × 453' }, finish_reason: null }]),
      chunk([{ index: 0, delta: { content: ' = 12,231' }, finish_reason: 'stop' }]),
      chunk([], usage),
      'data: [DONE]\n\n',
    ],
  });
}
