// The unified chat entry (/api/v0, /api/paas/v4): the official openai SDK, changed only in baseURL, against
// Anthropic-protocol and Gemini-protocol upstreams. Every converted answer and chunk is checked against OpenAI's schema.
import OpenAI from 'openai';
import type { APIError } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectedCost, MINI_ACME } from '../support/expected-cost.ts';
import type { TestGateway } from '../support/gateway.ts';
import { PROVIDER_SECRET, startTestGateway } from '../support/gateway.ts';
import { expectValidChatChunk, expectValidChatCompletion } from '../support/openai-schema.ts';
import { anthropicPromptTokens, geminiPromptTokens, TINY_PNG_B64 } from '../upstream/server.ts';

interface Row {
  input: number;
  output: number;
  cache_read: number;
  cache_write: number;
  reasoning: number;
  artifacts: number;
  estimated: boolean;
  stream: boolean;
  cost_points: string;
  client_model: string;
  endpoint: string;
}

const PNG_URL = `data:image/png;base64,${TINY_PNG_B64}`;
const weather: OpenAI.ChatCompletionTool[] = [
  {
    type: 'function',
    function: { name: 'get_weather', description: 'Weather for a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
  },
];

/** What the ledger must hold for a converted answer, from the usage the client saw (prompt includes cache reads and writes). */
function tokensFromChat(u: OpenAI.CompletionUsage) {
  const cacheRead = u.prompt_tokens_details?.cached_tokens ?? 0;
  const cacheWrite = (u.prompt_tokens_details as { cache_write_tokens?: number } | undefined)?.cache_write_tokens ?? 0;
  return { input: u.prompt_tokens - cacheRead - cacheWrite, cacheRead, cacheWrite, output: u.completion_tokens };
}

let t: TestGateway;
const requestIds: string[] = [];
beforeAll(async () => {
  t = await startTestGateway();
});
afterAll(async () => t?.close());

function sdk(prefix: string): OpenAI {
  return new OpenAI({
    baseURL: `${t.url}${prefix}`,
    apiKey: t.keys.acme,
    maxRetries: 0,
    // Remembers each answer's request id, so every test can find its own ledger row.
    fetch: async (url, init) => {
      const res = await fetch(url, init);
      requestIds.push(res.headers.get('x-tollgate-request-id') ?? '');
      return res;
    },
  });
}

async function rowOf(id: string): Promise<Row | undefined> {
  await t.gw.ledger.flush();
  const r = await t.gw.store.query<Row>(
    'SELECT input::int, output::int, cache_read::int, cache_write::int, reasoning::int, artifacts::int, estimated, stream, cost_points::text, client_model, endpoint FROM usage_events WHERE request_id = $1',
    [id],
  );
  return r.rows[0];
}

const lastRow = () => rowOf(requestIds.at(-1)!);

async function collect(stream: AsyncIterable<OpenAI.ChatCompletionChunk>): Promise<OpenAI.ChatCompletionChunk[]> {
  const chunks: OpenAI.ChatCompletionChunk[] = [];
  for await (const c of stream) {
    expectValidChatChunk(c);
    chunks.push(c);
  }
  return chunks;
}

const UPSTREAMS = [
  { name: 'anthropic', model: 'anthropic/claude', path: '/v1/messages', promptTokens: anthropicPromptTokens },
  { name: 'gemini', model: 'gemini-2.5-flash', path: '/v1beta/models/gemini-2.5-flash:', promptTokens: geminiPromptTokens },
] as const;

describe.each([['/api/v0'], ['/api/paas/v4']])('unified chat through %s', (prefix) => {
  let client: OpenAI;
  beforeAll(() => {
    client = sdk(prefix);
  });

  describe.each(UPSTREAMS)('on a $name upstream', (up) => {
    const lastUpstream = () => {
      const r = t.upstream.requests.at(-1)!;
      expect(r.path.startsWith(up.path)).toBe(true);
      return r;
    };

    it('answers in chat format, bills what the upstream reported, and tells the cost', async () => {
      const { data, response } = await client.chat.completions
        .create({ model: up.model, messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'What is the capital of France?' }] })
        .withResponse();
      expectValidChatCompletion(data);
      expect(data.object).toBe('chat.completion');
      expect(data.choices[0].message.content).toBe('echo: What is the capital of France?');
      expect(data.choices[0].finish_reason).toBe('stop');
      const sent = lastUpstream();
      expect(JSON.stringify(sent.headers)).not.toContain(t.keys.acme);
      expect(sent.headers[up.name === 'anthropic' ? 'x-api-key' : 'x-goog-api-key']).toBe(PROVIDER_SECRET);
      expect(data.usage!.prompt_tokens).toBe(up.promptTokens(sent.json as Record<string, unknown>));
      const row = (await rowOf(response.headers.get('x-tollgate-request-id')!))!;
      const tokens = tokensFromChat(data.usage!);
      expect(row).toMatchObject({ input: tokens.input, output: tokens.output, cache_read: tokens.cacheRead, cache_write: tokens.cacheWrite, estimated: false, client_model: up.model });
      expect(row.endpoint).toBe(`${prefix}/chat/completions`);
      expect(response.headers.get('x-tollgate-cost-points')).toBe(expectedCost(tokens, MINI_ACME).cost);
      expect(row.cost_points).toBe(expectedCost(tokens, MINI_ACME).cost);
    });

    it('streams with the SDK helper: same answer and usage as unstreamed, a usage chunk with empty choices, the same ledger figures', async () => {
      const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Compare streaming and not streaming, please, at some length.' }];
      const { data: plain, response } = await client.chat.completions.create({ model: up.model, messages }).withResponse();
      const stream = client.chat.completions.stream({ model: up.model, messages });
      const chunks: OpenAI.ChatCompletionChunk[] = [];
      stream.on('chunk', (c) => {
        expectValidChatChunk(c);
        chunks.push(c);
      });
      const final = await stream.finalChatCompletion();
      expect(final.choices[0].message.content).toBe(plain.choices[0].message.content);
      expect(final.choices[0].finish_reason).toBe('stop');
      expect(chunks[0].choices[0].delta.role).toBe('assistant');
      const usageChunk = chunks.at(-1)!;
      expect(usageChunk.choices).toEqual([]);
      expect(usageChunk.usage).toEqual(plain.usage);
      expect(chunks.slice(0, -1).every((c) => c.usage === null)).toBe(true);
      const plainRow = (await rowOf(response.headers.get('x-tollgate-request-id')!))!;
      const streamRow = (await lastRow())!;
      expect(streamRow.stream).toBe(true);
      expect({ ...streamRow, stream: false }).toEqual(plainRow);
    });

    it('ends the raw stream with the usage chunk and data: [DONE]', async () => {
      const res = await fetch(`${t.url}${prefix}/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${t.keys.acme}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: up.model, stream: true, messages: [{ role: 'user', content: 'Hello there!' }] }),
      });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toContain('text/event-stream');
      const text = await res.text();
      const frames = text.split('\n\n').filter((f) => f !== '');
      expect(frames.at(-1)).toBe('data: [DONE]');
      const usage = JSON.parse(frames.at(-2)!.slice(6));
      expect(usage.choices).toEqual([]);
      expect(usage.usage.total_tokens).toBe(usage.usage.prompt_tokens + usage.usage.completion_tokens);
      const finish = JSON.parse(frames.at(-3)!.slice(6));
      expect(finish.choices[0]).toEqual({ index: 0, delta: {}, logprobs: null, finish_reason: 'stop' });
    });

    it('calls tools and takes the results back (a full round trip), streamed and not', async () => {
      const question: OpenAI.ChatCompletionMessageParam = { role: 'user', content: 'What is the weather in Paris?' };
      const first = await client.chat.completions.create({ model: up.model, messages: [question], tools: weather });
      expectValidChatCompletion(first);
      expect(first.choices[0].finish_reason).toBe('tool_calls');
      const call = first.choices[0].message.tool_calls![0] as OpenAI.ChatCompletionMessageFunctionToolCall;
      expect(call.type).toBe('function');
      expect(call.function.name).toBe('get_weather');
      expect(JSON.parse(call.function.arguments)).toEqual({ city: 'x' });

      const streamed = await client.chat.completions.stream({ model: up.model, messages: [question], tools: weather }).finalChatCompletion();
      expect(streamed.choices[0].finish_reason).toBe('tool_calls');
      const sCall = streamed.choices[0].message.tool_calls![0] as OpenAI.ChatCompletionMessageFunctionToolCall;
      expect(sCall.function.name).toBe('get_weather');
      expect(JSON.parse(sCall.function.arguments)).toEqual(JSON.parse(call.function.arguments));
      // The same answer gets the same id whichever way it came (Anthropic's own id; Gemini's synthesised from the response id).
      expect(sCall.id).toMatch(up.name === 'anthropic' ? /^toolu_/ : /^call_/);

      const second = await client.chat.completions.create({
        model: up.model,
        tools: weather,
        messages: [question, first.choices[0].message as OpenAI.ChatCompletionMessageParam, { role: 'tool', tool_call_id: call.id, content: '{"temperature":"21C"}' }],
      });
      expectValidChatCompletion(second);
      expect(second.choices[0].finish_reason).toBe('stop');
      expect(second.choices[0].message.content).toContain('tool result: ');
      expect(second.choices[0].message.content).toContain('21C');
      const sent = lastUpstream().json as Record<string, unknown>;
      if (up.name === 'anthropic') {
        const msgs = sent.messages as { role: string; content: Record<string, unknown>[] }[];
        expect(msgs.map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
        expect(msgs[1].content.find((b) => b.type === 'tool_use')).toEqual({ type: 'tool_use', id: call.id, name: 'get_weather', input: { city: 'x' } });
        expect(msgs[2].content).toEqual([{ type: 'tool_result', tool_use_id: call.id, content: '{"temperature":"21C"}' }]);
      } else {
        const contents = sent.contents as { role: string; parts: Record<string, unknown>[] }[];
        expect(contents.map((c) => c.role)).toEqual(['user', 'model', 'user']);
        expect(contents[1].parts).toEqual([{ functionCall: { name: 'get_weather', args: { city: 'x' } } }]);
        expect(contents[2].parts).toEqual([{ functionResponse: { name: 'get_weather', response: { temperature: '21C' } } }]);
      }
    });

    it('takes images: a data URL inline, and the image tokens are billed', async () => {
      const r = await client.chat.completions.create({
        model: up.model,
        messages: [{ role: 'user', content: [{ type: 'text', text: 'What is this?' }, { type: 'image_url', image_url: { url: PNG_URL } }] }],
      });
      expectValidChatCompletion(r);
      const sent = lastUpstream().json as Record<string, unknown>;
      if (up.name === 'anthropic') {
        const content = (sent.messages as { content: unknown[] }[])[0].content;
        expect(content[1]).toEqual({ type: 'image', source: { type: 'base64', media_type: 'image/png', data: TINY_PNG_B64 } });
      } else {
        const parts = (sent.contents as { parts: unknown[] }[])[0].parts;
        expect(parts[1]).toEqual({ inlineData: { mimeType: 'image/png', data: TINY_PNG_B64 } });
      }
      expect(r.usage!.prompt_tokens).toBeGreaterThan(85);
      const row = (await lastRow())!;
      expect(row.input + row.cache_read + row.cache_write).toBe(r.usage!.prompt_tokens);
    });

    it('turns reasoning into reasoning_content, JSON and streamed alike', async () => {
      const params = { model: up.model, reasoning_effort: 'low' as const, messages: [{ role: 'user' as const, content: 'Why is the sky blue?' }] };
      const r = await client.chat.completions.create(params);
      expectValidChatCompletion(r);
      const reasoning = (r.choices[0].message as unknown as { reasoning_content?: string }).reasoning_content;
      expect(reasoning).toBe('Thinking about: Why is the sky blue?');
      const chunks = await collect(await client.chat.completions.create({ ...params, stream: true }));
      const streamed = chunks.map((c) => (c.choices[0]?.delta as { reasoning_content?: string } | undefined)?.reasoning_content ?? '').join('');
      expect(streamed).toBe(reasoning);
      expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe(r.choices[0].message.content);
      const row = (await lastRow())!;
      expect(row.output).toBe(r.usage!.completion_tokens);
      if (up.name === 'gemini') expect(row.reasoning).toBe(r.usage!.completion_tokens_details!.reasoning_tokens);
    });

    it('maps a token limit to finish_reason length', async () => {
      const r = await client.chat.completions.create({ model: up.model, max_tokens: 2, messages: [{ role: 'user', content: 'Tell me everything about the history of Paris' }] });
      expectValidChatCompletion(r);
      expect(r.choices[0].finish_reason).toBe('length');
      const sent = lastUpstream().json as Record<string, unknown>;
      if (up.name === 'anthropic') expect(sent.max_tokens).toBe(2);
      else expect((sent.generationConfig as Record<string, unknown>).maxOutputTokens).toBe(2);
    });

    it('raises the SDK typed error with the upstream message and status, unbilled', async () => {
      const before = requestIds.length;
      const err = await client.chat.completions.create({ model: up.model, messages: [{ role: 'user', content: 'x [fake:error-429]' }] }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(OpenAI.RateLimitError);
      const e = err as APIError;
      expect(e.status).toBe(429);
      expect(e.message).toContain(up.name === 'anthropic' ? 'would exceed the rate limit' : 'exceeded your current quota');
      expect(e.type).toBe('rate_limit_error');
      expect(e.code).toBe('rate_limit_exceeded');
      expect(await rowOf(requestIds[before])).toBeUndefined();

      const e5 = await client.chat.completions.create({ model: up.model, messages: [{ role: 'user', content: 'x [fake:error-503]' }] }).catch((x: unknown) => x);
      expect(e5).toBeInstanceOf(OpenAI.InternalServerError);
      expect((e5 as APIError).status).toBe(503);
    });

    it('ends a stream cut by the upstream with an error the SDK raises, billed with what was reported', async () => {
      const stream = client.chat.completions.stream({ model: up.model, messages: [{ role: 'user', content: 'This stream will be cut short [fake:cut-stream]' }] });
      const chunks: OpenAI.ChatCompletionChunk[] = [];
      stream.on('chunk', (c) => chunks.push(c));
      await expect(stream.finalChatCompletion()).rejects.toBeInstanceOf(OpenAI.APIError);
      expect(chunks.length).toBeGreaterThan(0);
      chunks.forEach(expectValidChatChunk);
      const row = (await lastRow())!;
      expect(row.stream).toBe(true);
      // The input the upstream reported before the cut is billed; the gateway keeps serving.
      expect(row.input).toBeGreaterThan(0);
      const ok = await client.chat.completions.create({ model: up.model, messages: [{ role: 'user', content: 'still there?' }] });
      expect(ok.choices[0].message.content).toBe('echo: still there?');
    });

    it('turns an in-stream upstream error into a chat error event', async () => {
      const err = await client.chat.completions
        .stream({ model: up.model, messages: [{ role: 'user', content: 'boom [fake:mid-stream-error]' }] })
        .finalChatCompletion()
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(OpenAI.APIError);
      expect((err as Error).message).toMatch(up.name === 'anthropic' ? /Overloaded/ : /internal error/);
      expect((await lastRow())!.stream).toBe(true);
    });
  });

  it('returns images a gemini model made in message.images (and counts them in the ledger)', async () => {
    const params = { model: 'gemini-2.5-flash', modalities: ['image', 'text'], messages: [{ role: 'user', content: 'Draw a cat' }] } as unknown as OpenAI.ChatCompletionCreateParamsNonStreaming;
    const r = await client.chat.completions.create(params);
    expectValidChatCompletion(r);
    expect((t.upstream.requests.at(-1)!.json as { generationConfig: unknown }).generationConfig).toEqual({ responseModalities: ['TEXT', 'IMAGE'] });
    const images = (r.choices[0].message as unknown as { images: { image_url: { url: string } }[] }).images;
    expect(images).toEqual([{ type: 'image_url', image_url: { url: PNG_URL } }]);
    expect((await lastRow())!.artifacts).toBe(1);
    const chunks = await collect(await client.chat.completions.create({ ...params, stream: true } as unknown as OpenAI.ChatCompletionCreateParamsStreaming));
    const streamed = chunks.flatMap((c) => (c.choices[0]?.delta as { images?: unknown[] } | undefined)?.images ?? []);
    expect(streamed).toEqual(images);
  });

  it('passes through to an openai upstream when the model has one, even beside anthropic', async () => {
    const { data, response } = await client.chat.completions.create({ model: 'mixed/claude-or-gpt', messages: [{ role: 'user', content: 'hi there' }] }).withResponse();
    expect(t.upstream.requests.at(-1)!.path).toBe('/v1/chat/completions');
    expect(data.id).toMatch(/^chatcmpl-/);
    expect(data.choices[0].message.content).toContain('hi there');
    const row = (await rowOf(response.headers.get('x-tollgate-request-id')!))!;
    expect(row.input + row.cache_read).toBe(data.usage!.prompt_tokens);
    const streamed = await client.chat.completions.stream({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi there' }] }).finalChatCompletion();
    expect(streamed.choices[0].message.content).toBe(data.choices[0].message.content);
  });

  it('normalises an openai-compatible upstream error to the chat shape (all four keys)', async () => {
    t.upstream.nextResponse({ path: '/chat/completions', status: 404, body: { error: { code: '1211', message: 'Model does not exist' } } });
    const err = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.NotFoundError);
    const e = err as APIError;
    expect(e.message).toContain('Model does not exist');
    expect(e.error).toEqual({ message: 'Model does not exist', type: 'invalid_request_error', param: null, code: '1211' });
    t.upstream.nextResponse({ path: '/chat/completions', status: 502, headers: { 'content-type': 'text/html' }, body: '<html>bad gateway</html>' });
    const e2 = (await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] }).catch((x: unknown) => x)) as APIError;
    expect(e2.status).toBe(502);
    expect(e2.error).toMatchObject({ type: 'upstream_error', code: 'upstream_error' });
  });

  it('answers the gateway own errors in the chat shape', async () => {
    const unknown = (await client.chat.completions.create({ model: 'nope/nothing', messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e)) as APIError;
    expect(unknown).toBeInstanceOf(OpenAI.NotFoundError);
    expect(unknown.code).toBe('model_not_found');
    const proto = (await client.chat.completions.create({ model: 'gpt-5-nano', messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e)) as APIError;
    expect(proto).toBeInstanceOf(OpenAI.BadRequestError);
    expect(proto.code).toBe('unsupported_protocol');
    expect(proto.message).toContain('openai, anthropic or gemini');
    // What the upstream protocol cannot take is a 400 before any upstream call.
    const calls = t.upstream.requests.length;
    const n = (await client.chat.completions.create({ model: 'anthropic/claude', n: 2, messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e)) as APIError;
    expect(n).toBeInstanceOf(OpenAI.BadRequestError);
    expect(n.param).toBe('n');
    const badArgs = (await client.chat.completions
      .create({
        model: 'gemini-2.5-flash',
        messages: [
          { role: 'user', content: 'x' },
          { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{not json' } }] },
          { role: 'tool', tool_call_id: 'c1', content: 'r' },
        ],
      })
      .catch((e: unknown) => e)) as APIError;
    expect(badArgs).toBeInstanceOf(OpenAI.BadRequestError);
    expect(badArgs.param).toBe('messages[1].tool_calls[0].function.arguments');
    const orphan = (await client.chat.completions.create({ model: 'gemini-2.5-flash', messages: [{ role: 'tool', tool_call_id: 'zz', content: 'r' }] }).catch((e: unknown) => e)) as APIError;
    expect(orphan).toBeInstanceOf(OpenAI.BadRequestError);
    expect(t.upstream.requests.length).toBe(calls);
  });
});
