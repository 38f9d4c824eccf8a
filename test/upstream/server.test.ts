import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createParser } from 'eventsource-parser';
import type { EventSourceMessage } from 'eventsource-parser';
import OpenAI, { toFile } from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI } from '@google/genai';
import {
  IMAGE_TOKENS,
  TINY_PNG,
  anthropicPromptTokens,
  chatPromptTokens,
  geminiPromptTokens,
  responsesPromptTokens,
  startFakeUpstream,
  tokensOf,
} from './server.ts';
import type { FakeUpstream } from './server.ts';
import { FIXTURES, readFixture, renderFixture } from './fixtures.ts';

// ---------------------------------------------------------------- helpers

type Json = Record<string, unknown>;

let fake: FakeUpstream;

beforeAll(async () => {
  fake = await startFakeUpstream();
});
afterAll(async () => {
  await fake.close();
});
beforeEach(() => {
  fake.reset();
});

async function post(path: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(fake.url + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer sk-provider', ...headers },
    body: JSON.stringify(body),
  });
}

async function postBytes(path: string, body: unknown): Promise<{ status: number; headers: Headers; bytes: Buffer }> {
  const r = await post(path, body);
  return { status: r.status, headers: r.headers, bytes: Buffer.from(await r.arrayBuffer()) };
}

/** Parse SSE bytes delivered in the given pieces with a real SSE parser (UTF-8 decoded incrementally). */
function parseSse(bytes: Buffer, cuts: number[]): EventSourceMessage[] {
  const events: EventSourceMessage[] = [];
  const parser = createParser({ onEvent: (e) => events.push(e) });
  const dec = new TextDecoder();
  let prev = 0;
  for (const c of [...cuts, bytes.length]) {
    parser.feed(dec.decode(bytes.subarray(prev, c), { stream: true }));
    prev = c;
  }
  parser.feed(dec.decode());
  return events;
}

function simplify(events: EventSourceMessage[]): { event: string | undefined; data: string }[] {
  return events.map((e) => ({ event: e.event, data: e.data }));
}

/** Every 2-piece split, byte-by-byte, and 200 seeded random multi-piece splits must parse identically. */
function expectSplitInvariant(bytes: Buffer): EventSourceMessage[] {
  const whole = simplify(parseSse(bytes, []));
  expect(whole.length).toBeGreaterThan(0);
  for (let i = 1; i < bytes.length; i++) expect(simplify(parseSse(bytes, [i]))).toEqual(whole);
  const all: number[] = [];
  for (let i = 1; i < bytes.length; i++) all.push(i);
  expect(simplify(parseSse(bytes, all))).toEqual(whole);
  let seed = 12345;
  const rnd = (): number => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed / 0x7fffffff;
  };
  for (let k = 0; k < 200; k++) {
    const cuts = new Set<number>();
    const n = 1 + Math.floor(rnd() * 12);
    for (let j = 0; j < n; j++) cuts.add(1 + Math.floor(rnd() * (bytes.length - 1)));
    expect(simplify(parseSse(bytes, [...cuts].sort((a, b) => a - b)))).toEqual(whole);
  }
  return parseSse(bytes, []);
}

const WEATHER_PARAMS = {
  type: 'object',
  properties: { city: { type: 'string' }, days: { type: 'integer' }, unit: { type: 'string' } },
  required: ['city', 'days'],
};
const CHAT_TOOLS = [{ type: 'function', function: { name: 'get_weather', description: 'weather', parameters: WEATHER_PARAMS } }];

// ---------------------------------------------------------------- OpenAI chat

describe('openai chat completions', () => {
  const base = { model: 'gpt-4o-mini', messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hello, héllo 世界! What is up?' }] };

  it('answers deterministically with realistic usage and headers, and records the request', async () => {
    const r = await post('/v1/chat/completions', base);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('application/json');
    expect(r.headers.get('x-request-id')).toMatch(/^req_/);
    expect(r.headers.get('openai-processing-ms')).toBeTruthy();
    const j = (await r.json()) as Json;
    const choice = (j.choices as Json[])[0];
    expect(choice.message).toMatchObject({ role: 'assistant', content: 'echo: Hello, héllo 世界! What is up?' });
    expect(choice.finish_reason).toBe('stop');
    const chars = 'Be brief.'.length + 'Hello, héllo 世界! What is up?'.length;
    expect(j.usage).toEqual({
      prompt_tokens: Math.ceil(chars / 4),
      completion_tokens: tokensOf('echo: Hello, héllo 世界! What is up?'.length),
      total_tokens: Math.ceil(chars / 4) + tokensOf('echo: Hello, héllo 世界! What is up?'.length),
      prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
    });
    expect(fake.requests).toHaveLength(1);
    const rec = fake.requests[0];
    expect(rec.method).toBe('POST');
    expect(rec.path).toBe('/v1/chat/completions');
    expect(rec.headers.authorization).toBe('Bearer sk-provider');
    expect(rec.json).toEqual(base);
    expect(rec.body.toString()).toBe(JSON.stringify(base));
  });

  it('reports cached tokens for prompt_cache_key, 85 tokens per image, and truncates at max_completion_tokens', async () => {
    const cached = (await (await post('/v1/chat/completions', { ...base, prompt_cache_key: 'k1' })).json()) as Json;
    const pt = chatPromptTokens(base);
    expect((cached.usage as Json).prompt_tokens).toBe(pt);
    expect(((cached.usage as Json).prompt_tokens_details as Json).cached_tokens).toBe(Math.floor(pt / 2));

    const img = {
      model: 'gpt-4o-mini',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Two pictures' },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
            { type: 'image_url', image_url: { url: 'https://example.com/a.png' } },
          ],
        },
      ],
    };
    const ij = (await (await post('/v1/chat/completions', img)).json()) as Json;
    expect((ij.usage as Json).prompt_tokens).toBe(tokensOf('Two pictures'.length) + 2 * IMAGE_TOKENS);

    const lj = (await (await post('/v1/chat/completions', { ...base, max_completion_tokens: 2 })).json()) as Json;
    expect((lj.choices as Json[])[0].finish_reason).toBe('length');
    expect((lj.usage as Json).completion_tokens).toBe(2);
  });

  it('calls the first tool with arguments from required properties, and answers text after a tool message', async () => {
    const j = (await (await post('/v1/chat/completions', { ...base, tools: CHAT_TOOLS })).json()) as Json;
    const choice = (j.choices as Json[])[0];
    expect(choice.finish_reason).toBe('tool_calls');
    const msg = choice.message as Json;
    expect(msg.content).toBeNull();
    const tc = (msg.tool_calls as Json[])[0];
    expect(tc).toMatchObject({ type: 'function', function: { name: 'get_weather' } });
    expect(JSON.parse((tc.function as Json).arguments as string)).toEqual({ city: 'x', days: 0 });

    const follow = {
      ...base,
      tools: CHAT_TOOLS,
      messages: [
        ...base.messages,
        { role: 'assistant', content: null, tool_calls: [tc] },
        { role: 'tool', tool_call_id: tc.id, content: '{"temp":21}' },
      ],
    };
    const j2 = (await (await post('/v1/chat/completions', follow)).json()) as Json;
    const c2 = (j2.choices as Json[])[0];
    expect(c2.finish_reason).toBe('stop');
    expect((c2.message as Json).content).toBe('tool result: {"temp":21}');
  });

  for (const variant of ['text', 'tools'] as const) {
    it(`streams (${variant}) byte-faithfully: parses for any split, usage equals the JSON usage`, async () => {
      const req = { ...base, ...(variant === 'tools' ? { tools: CHAT_TOOLS } : {}), prompt_cache_key: 'p' };
      const json = (await (await post('/v1/chat/completions', req)).json()) as Json;
      const s = await postBytes('/v1/chat/completions', { ...req, stream: true, stream_options: { include_usage: true } });
      expect(s.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
      const text = s.bytes.toString('utf8');
      expect(text.endsWith('\n\ndata: [DONE]\n\n')).toBe(true);
      const events = expectSplitInvariant(s.bytes);
      expect(events.at(-1)!.data).toBe('[DONE]');
      const chunks = events.slice(0, -1).map((e) => JSON.parse(e.data) as Json);
      for (const c of chunks) {
        expect(c.object).toBe('chat.completion.chunk');
        expect(c.id).toBe(chunks[0].id);
        expect('usage' in c).toBe(true);
      }
      const first = (chunks[0].choices as Json[])[0];
      expect((first.delta as Json).role).toBe('assistant');
      const finish = chunks.at(-2)!;
      expect((finish.choices as Json[])[0]).toMatchObject({ delta: {}, finish_reason: variant === 'tools' ? 'tool_calls' : 'stop' });
      expect(finish.usage).toBeNull();
      const last = chunks.at(-1)!;
      expect(last.choices).toEqual([]);
      expect(last.usage).toEqual(json.usage);
      if (variant === 'tools') {
        const tcs = chunks.flatMap((c) => ((c.choices as Json[])[0]?.delta as Json | undefined)?.tool_calls as Json[] | undefined ?? []);
        expect(tcs[0]).toMatchObject({ index: 0, type: 'function', function: { name: 'get_weather', arguments: '' } });
        expect(tcs[0].id).toMatch(/^call_/);
        expect(tcs.length).toBeGreaterThan(2);
        const args = tcs.map((t) => (t.function as Json).arguments).join('');
        const jsonCall = ((((json.choices as Json[])[0].message as Json).tool_calls as Json[])[0].function as Json);
        expect(args).toBe(jsonCall.arguments);
        expect(JSON.parse(args)).toEqual({ city: 'x', days: 0 });
      } else {
        const content = chunks.map((c) => ((c.choices as Json[])[0]?.delta as Json | undefined)?.content ?? '').join('');
        expect(content).toBe(((json.choices as Json[])[0].message as Json).content);
        expect(chunks.length).toBeGreaterThan(4);
      }
    });
  }

  it('omits the usage key entirely without include_usage', async () => {
    const s = await postBytes('/v1/chat/completions', { ...base, stream: true });
    const events = parseSse(s.bytes, []);
    expect(events.at(-1)!.data).toBe('[DONE]');
    for (const e of events.slice(0, -1)) {
      const c = JSON.parse(e.data) as Json;
      expect('usage' in c).toBe(false);
      expect(c.choices).not.toEqual([]);
    }
  });

  it('scenario error-400/429/500 return the recorded OpenAI error shapes', async () => {
    const r400 = await post('/v1/chat/completions', { ...base, metadata: { fake: 'error-400' } });
    expect(r400.status).toBe(400);
    expect(await r400.text()).toBe(
      '{"error":{"code":"unsupported_parameter","message":"Unsupported parameter: \'max_tokens\' is not supported with this model. Use \'max_completion_tokens\' instead.","param":"max_tokens","type":"invalid_request_error"}}',
    );
    const r429 = await post('/v1/chat/completions', { ...base, metadata: { fake: 'error-429' } });
    expect(r429.status).toBe(429);
    expect(((await r429.json()) as Json).error).toMatchObject({ code: 'rate_limit_exceeded', param: null });
    const r500 = await post('/v1/chat/completions', { ...base, metadata: { fake: 'error-500' } });
    expect(r500.status).toBe(500);
    expect(((await r500.json()) as Json).error).toMatchObject({ type: 'server_error', code: null });
    // the marker form works too (for protocols without metadata)
    const m = await post('/v1/chat/completions', { model: 'm', messages: [{ role: 'user', content: 'hi [fake:error-429]' }] });
    expect(m.status).toBe(429);
  });

  it('scenario slow-first-byte delays the headers by metadata.delay_ms', async () => {
    const t0 = performance.now();
    const r = await post('/v1/chat/completions', { ...base, metadata: { fake: 'slow-first-byte', delay_ms: 300 } });
    expect(performance.now() - t0).toBeGreaterThanOrEqual(290);
    expect(r.status).toBe(200);
  });

  it('scenario cut-stream ends abruptly after 2 content chunks, without usage or [DONE]', async () => {
    const r = await post('/v1/chat/completions', { ...base, stream: true, stream_options: { include_usage: true }, metadata: { fake: 'cut-stream' } });
    expect(r.status).toBe(200);
    const parts: Buffer[] = [];
    const reader = r.body!.getReader();
    let failed = false;
    try {
      while (true) {
        const { done, value } = await reader.read();
        if (done) break;
        parts.push(Buffer.from(value));
      }
    } catch {
      failed = true;
    }
    expect(failed).toBe(true);
    const events = parseSse(Buffer.concat(parts), []);
    expect(events).toHaveLength(3);
    const chunks = events.map((e) => JSON.parse(e.data) as Json);
    expect(chunks.map((c) => ((c.choices as Json[])[0].delta as Json).content)).toEqual(['', 'echo:', ' Hello,']);
    expect(chunks.every((c) => c.usage === null)).toBe(true);
  });

  it('scenario no-usage drops usage; mid-stream-error sends an error event', async () => {
    const j = (await (await post('/v1/chat/completions', { ...base, metadata: { fake: 'no-usage' } })).json()) as Json;
    expect('usage' in j).toBe(false);
    const s = await postBytes('/v1/chat/completions', { ...base, stream: true, stream_options: { include_usage: true }, metadata: { fake: 'no-usage' } });
    const ev = parseSse(s.bytes, []);
    expect(ev.at(-1)!.data).toBe('[DONE]');
    expect(ev.slice(0, -1).every((e) => (JSON.parse(e.data) as Json).usage === null)).toBe(true);
    const m = await postBytes('/v1/chat/completions', { ...base, stream: true, metadata: { fake: 'mid-stream-error' } });
    const me = parseSse(m.bytes, []);
    expect(JSON.parse(me.at(-1)!.data)).toMatchObject({ error: { type: 'server_error' } });
  });

  it('scenario stall sends headers then nothing', async () => {
    const ac = new AbortController();
    const r = await fetch(fake.url + '/v1/chat/completions', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...base, stream: true, metadata: { fake: 'stall' } }),
      signal: ac.signal,
    });
    expect(r.status).toBe(200);
    const reader = r.body!.getReader();
    const res = await Promise.race([reader.read().then(() => 'data'), new Promise((resolve) => setTimeout(() => resolve('silence'), 300))]);
    expect(res).toBe('silence');
    ac.abort();
  });

  it('nextResponse scripts status, headers, body and raw SSE chunks with delays', async () => {
    fake.nextResponse({ status: 503, headers: { 'retry-after': '2' }, body: { error: { message: 'busy' } } });
    const r1 = await post('/v1/chat/completions', base);
    expect(r1.status).toBe(503);
    expect(r1.headers.get('retry-after')).toBe('2');
    expect(await r1.json()).toEqual({ error: { message: 'busy' } });

    fake.nextResponse({ path: '/v1/messages', body: 'not for chat' });
    fake.nextResponse({ chunks: ['data: {"a":1}\n\n', { data: 'data: [DONE]\n\n', delayMs: 120 }] });
    const t0 = performance.now();
    const r2 = await post('/v1/chat/completions', base);
    expect(r2.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(await r2.text()).toBe('data: {"a":1}\n\ndata: [DONE]\n\n');
    expect(performance.now() - t0).toBeGreaterThanOrEqual(110);
    const r3 = await post('/v1/messages', {});
    expect(await r3.text()).toBe('not for chat');
    // queue is empty again: normal answers resume
    expect((await post('/v1/chat/completions', base)).status).toBe(200);
  });

  it('works with the official openai SDK: create, stream() with tools, finalChatCompletion()', async () => {
    const client = new OpenAI({ apiKey: 'sk-sdk', baseURL: fake.url + '/v1', maxRetries: 0 });
    const c = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hi SDK' }] });
    expect(c.choices[0].message.content).toBe('echo: Hi SDK');
    expect(c.usage?.prompt_tokens).toBe(tokensOf('Hi SDK'.length));
    expect(fake.requests[0].headers.authorization).toBe('Bearer sk-sdk');

    const stream = client.chat.completions.stream({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'Weather in Paris?' }],
      tools: [{ type: 'function', function: { name: 'get_weather', parameters: WEATHER_PARAMS } }],
      stream_options: { include_usage: true },
    });
    const final = await stream.finalChatCompletion();
    const tc = final.choices[0].message.tool_calls![0];
    expect(tc.type).toBe('function');
    if (tc.type !== 'function') throw new Error('unreachable');
    expect(tc.function.name).toBe('get_weather');
    expect(JSON.parse(tc.function.arguments)).toEqual({ city: 'x', days: 0 });
    expect(final.choices[0].finish_reason).toBe('tool_calls');
    expect(final.usage?.total_tokens).toBeGreaterThan(0);

    const textStream = client.chat.completions.stream({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Stream me' }] });
    let deltas = '';
    textStream.on('content', (d) => {
      deltas += d;
    });
    const tf = await textStream.finalChatCompletion();
    expect(tf.choices[0].message.content).toBe('echo: Stream me');
    expect(deltas).toBe('echo: Stream me');

    await expect(
      client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }], metadata: { fake: 'error-429' } }),
    ).rejects.toBeInstanceOf(OpenAI.RateLimitError);
  });
});

// ---------------------------------------------------------------- Anthropic

describe('anthropic messages', () => {
  const tool = { name: 'get_weather', description: 'weather', input_schema: WEATHER_PARAMS };
  const base = { model: 'claude-sonnet-4-5', max_tokens: 1024, messages: [{ role: 'user', content: 'Hello Claude, héllo 世界' }] };

  it('follows the event order of reference §2.5 and stream usage equals JSON usage', async () => {
    for (const extra of [{}, { tools: [tool] }, { thinking: { type: 'enabled', budget_tokens: 1024 }, tools: [tool] }]) {
      const req = { ...base, ...extra };
      const json = (await (await post('/v1/messages', req)).json()) as Json;
      const s = await postBytes('/v1/messages', { ...req, stream: true });
      expect(s.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
      const events = expectSplitInvariant(s.bytes);
      for (const e of events) expect((JSON.parse(e.data) as Json).type).toBe(e.event);
      const names = events.map((e) => e.event);
      expect(names[0]).toBe('message_start');
      expect(names.at(-2)).toBe('message_delta');
      expect(names.at(-1)).toBe('message_stop');
      expect(names).toContain('ping');
      const start = (JSON.parse(events[0].data) as Json).message as Json;
      const delta = JSON.parse(events.at(-2)!.data) as Json;
      const ju = json.usage as Json;
      expect(start.usage).toMatchObject({
        input_tokens: ju.input_tokens,
        cache_creation_input_tokens: ju.cache_creation_input_tokens,
        cache_read_input_tokens: ju.cache_read_input_tokens,
        output_tokens: 1,
      });
      expect((delta.usage as Json).output_tokens).toBe(ju.output_tokens);
      expect((delta.delta as Json).stop_reason).toBe(json.stop_reason);
      // block starts/stops pair up by index
      const starts = events.filter((e) => e.event === 'content_block_start').map((e) => (JSON.parse(e.data) as Json).index);
      const stops = events.filter((e) => e.event === 'content_block_stop').map((e) => (JSON.parse(e.data) as Json).index);
      expect(starts).toEqual(stops);
      expect(starts).toHaveLength((json.content as Json[]).length);
    }
  });

  it('computes cache creation then cache read for cache_control prefixes; count_tokens matches', async () => {
    const req = {
      ...base,
      system: [{ type: 'text', text: 'Long stable instructions. '.repeat(40), cache_control: { type: 'ephemeral' } }],
    };
    const total = anthropicPromptTokens(req);
    const u1 = ((await (await post('/v1/messages', req)).json()) as Json).usage as Json;
    const u2 = ((await (await post('/v1/messages', req)).json()) as Json).usage as Json;
    expect(u1.cache_creation_input_tokens).toBeGreaterThan(0);
    expect(u1.cache_read_input_tokens).toBe(0);
    expect(u1.cache_creation).toEqual({ ephemeral_5m_input_tokens: u1.cache_creation_input_tokens, ephemeral_1h_input_tokens: 0 });
    expect(u2.cache_creation_input_tokens).toBe(0);
    expect(u2.cache_read_input_tokens).toBe(u1.cache_creation_input_tokens);
    expect((u1.input_tokens as number) + (u1.cache_creation_input_tokens as number)).toBe(total);
    expect((u2.input_tokens as number) + (u2.cache_read_input_tokens as number)).toBe(total);
    const ct = (await (await post('/v1/messages/count_tokens', req)).json()) as Json;
    expect(ct).toEqual({ input_tokens: total });
  });

  it('returns errors in the Anthropic shape', async () => {
    const r = await post('/v1/messages', { ...base, metadata: { fake: 'error-529' } });
    expect(r.status).toBe(529);
    const j = (await r.json()) as Json;
    expect(j).toMatchObject({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } });
    expect(j.request_id).toMatch(/^req_/);
    const bad = await post('/v1/messages', { model: 'claude', messages: [] });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as Json).error).toMatchObject({ type: 'invalid_request_error' });
  });

  it('works with @anthropic-ai/sdk: create and stream().finalMessage() with tools and thinking', async () => {
    const client = new Anthropic({ apiKey: 'sk-ant-sdk', baseURL: fake.url, maxRetries: 0 });
    const m = await client.messages.create({ model: 'claude-sonnet-4-5', max_tokens: 256, messages: [{ role: 'user', content: 'Hi SDK' }] });
    expect(m.content).toEqual([{ type: 'text', text: 'echo: Hi SDK' }]);
    expect(m.usage.input_tokens).toBe(tokensOf('Hi SDK'.length));
    // @anthropic-ai/sdk 1.12 sends the apiKey as a bearer token (older SDKs: x-api-key) and its own version date
    const h = fake.requests[0].headers;
    expect(h['x-api-key'] ?? h.authorization).toMatch(/^(Bearer )?sk-ant-sdk$/);
    expect(h['anthropic-version']).toMatch(/^\d{4}-\d{2}-\d{2}$/);

    const stream = client.messages.stream({
      model: 'claude-sonnet-4-5',
      max_tokens: 4096,
      thinking: { type: 'enabled', budget_tokens: 2048 },
      tools: [{ name: 'get_weather', input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } }],
      messages: [{ role: 'user', content: 'Weather in Paris?' }],
    });
    const final = await stream.finalMessage();
    expect(final.stop_reason).toBe('tool_use');
    expect(final.content.map((b) => b.type)).toEqual(['thinking', 'text', 'tool_use']);
    const th = final.content[0];
    if (th.type !== 'thinking') throw new Error('unreachable');
    expect(th.thinking).toBe('Thinking about: Weather in Paris?');
    expect(th.signature.length).toBeGreaterThan(10);
    const tu = final.content[2];
    if (tu.type !== 'tool_use') throw new Error('unreachable');
    expect(tu.input).toEqual({ city: 'x' });
    expect(final.usage.output_tokens).toBeGreaterThan(1);

    await expect(
      client.messages.create({ model: 'claude', max_tokens: 5, messages: [{ role: 'user', content: '[fake:error-429]' }] }),
    ).rejects.toBeInstanceOf(Anthropic.RateLimitError);
  });
});

// ---------------------------------------------------------------- Gemini

describe('gemini generateContent', () => {
  const base = { contents: [{ role: 'user', parts: [{ text: 'Why is the sky blue? héllo 世界' }] }] };

  it('streams with \\r\\n\\r\\n framing, parses for any split, and the last usage equals the JSON usage', async () => {
    for (const extra of [{}, { generationConfig: { thinkingConfig: { thinkingBudget: 512, includeThoughts: true } } }]) {
      const req = { ...base, ...extra };
      const json = (await (await post('/v1beta/models/gemini-2.5-flash:generateContent', req)).json()) as Json;
      const s = await postBytes('/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse', req);
      expect(s.headers.get('content-type')).toBe('text/event-stream');
      const text = s.bytes.toString('utf8');
      expect(text.split('\r\n\r\n').filter(Boolean).every((b) => b.startsWith('data: '))).toBe(true);
      expect(text.includes('\n\n')).toBe(false);
      const events = expectSplitInvariant(s.bytes);
      const chunks = events.map((e) => JSON.parse(e.data) as Json);
      expect(chunks.at(-1)!.usageMetadata).toEqual(json.usageMetadata);
      expect(((chunks.at(-1)!.candidates as Json[])[0]).finishReason).toBe('STOP');
      expect((json.usageMetadata as Json).promptTokenCount).toBe(geminiPromptTokens(req));
    }
  });

  it('returns inline PNG image parts for IMAGE modality, function calls for tools, Google-shaped errors', async () => {
    const img = (await (
      await post('/v1beta/models/gemini-2.5-flash-image:generateContent', { ...base, generationConfig: { responseModalities: ['TEXT', 'IMAGE'] } })
    ).json()) as Json;
    const parts = (((img.candidates as Json[])[0].content as Json).parts as Json[]);
    const inline = parts.find((p) => p.inlineData)!.inlineData as Json;
    expect(inline.mimeType).toBe('image/png');
    expect(Buffer.from(inline.data as string, 'base64').equals(TINY_PNG)).toBe(true);
    expect((img.usageMetadata as Json).candidatesTokensDetails).toContainEqual({ modality: 'IMAGE', tokenCount: 1290 });

    const fc = (await (
      await post('/v1beta/models/gemini-2.5-flash:generateContent', {
        ...base,
        tools: [{ functionDeclarations: [{ name: 'get_weather', parameters: { type: 'OBJECT', properties: { city: { type: 'STRING' } }, required: ['city'] } }] }],
      })
    ).json()) as Json;
    expect((((fc.candidates as Json[])[0].content as Json).parts as Json[])[0]).toEqual({ functionCall: { name: 'get_weather', args: { city: 'x' } } });

    const e = await post('/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse', {
      contents: [{ role: 'user', parts: [{ text: '[fake:error-429]' }] }],
    });
    expect(e.status).toBe(429);
    expect(((await e.json()) as Json).error).toMatchObject({ code: 429, status: 'RESOURCE_EXHAUSTED' });
  });

  it('works with @google/genai: generateContent and generateContentStream', async () => {
    const ai = new GoogleGenAI({ apiKey: 'g-key', httpOptions: { baseUrl: fake.url, apiVersion: 'v1beta' } });
    const r = await ai.models.generateContent({ model: 'gemini-2.5-flash', contents: 'Hi SDK' });
    expect(r.text).toBe('echo: Hi SDK');
    expect(r.usageMetadata?.promptTokenCount).toBe(tokensOf('Hi SDK'.length));
    expect(fake.requests[0].path).toBe('/v1beta/models/gemini-2.5-flash:generateContent');
    expect(fake.requests[0].headers['x-goog-api-key']).toBe('g-key');

    let text = '';
    let lastUsage: unknown;
    for await (const chunk of await ai.models.generateContentStream({ model: 'gemini-2.5-flash', contents: 'Stream me please' })) {
      text += chunk.text ?? '';
      lastUsage = chunk.usageMetadata;
    }
    expect(text).toBe('echo: Stream me please');
    expect(lastUsage).toMatchObject({ promptTokenCount: tokensOf('Stream me please'.length), candidatesTokenCount: tokensOf(text.length) });
    expect(fake.requests[1].query).toBe('alt=sse');

    const img = await ai.models.generateContent({
      model: 'gemini-2.5-flash-image',
      contents: 'Draw a cat',
      config: { responseModalities: ['TEXT', 'IMAGE'] },
    });
    expect(img.data).toBe(TINY_PNG.toString('base64'));
  });
});

// ---------------------------------------------------------------- Responses

describe('openai responses', () => {
  it('streams response.created … response.completed with sequence numbers; usage equals JSON usage', async () => {
    for (const extra of [{}, { tools: [{ type: 'function', name: 'get_weather', parameters: WEATHER_PARAMS }] }]) {
      const req = { model: 'gpt-4.1', input: 'Hello responses héllo 世界', prompt_cache_key: 'x', ...extra };
      const json = (await (await post('/v1/responses', req)).json()) as Json;
      expect((json.usage as Json).input_tokens).toBe(responsesPromptTokens(req));
      const s = await postBytes('/v1/responses', { ...req, stream: true });
      const events = expectSplitInvariant(s.bytes);
      const datas = events.map((e) => JSON.parse(e.data) as Json);
      datas.forEach((d, i) => {
        expect(d.type).toBe(events[i].event);
        expect(d.sequence_number).toBe(i);
      });
      expect(datas[0].type).toBe('response.created');
      expect(datas.at(-1)!.type).toBe('response.completed');
      expect((datas.at(-1)!.response as Json).usage).toEqual(json.usage);
      const noIds = (o: unknown): string => JSON.stringify(o).replace(/"(id|call_id)":"[^"]*"/g, '');
      expect(noIds((datas.at(-1)!.response as Json).output)).toBe(noIds(json.output));
    }
  });

  it('works with the openai SDK: responses.create and responses.stream', async () => {
    const client = new OpenAI({ apiKey: 'sk-sdk', baseURL: fake.url + '/v1', maxRetries: 0 });
    const r = await client.responses.create({ model: 'gpt-4.1', input: 'Hi SDK' });
    expect(r.output_text).toBe('echo: Hi SDK');
    expect(r.usage?.input_tokens).toBe(tokensOf('Hi SDK'.length));
    const stream = client.responses.stream({ model: 'gpt-4.1', input: 'Stream SDK' });
    let deltas = '';
    stream.on('response.output_text.delta', (e) => {
      deltas += e.delta;
    });
    const final = await stream.finalResponse();
    expect(final.output_text).toBe('echo: Stream SDK');
    expect(deltas).toBe('echo: Stream SDK');
    const fc = await client.responses.create({
      model: 'gpt-4.1',
      input: 'weather?',
      tools: [{ type: 'function', name: 'get_weather', parameters: WEATHER_PARAMS, strict: false }],
    });
    expect(fc.output[0]).toMatchObject({ type: 'function_call', name: 'get_weather', arguments: '{"city":"x","days":0}' });
  });
});

// ---------------------------------------------------------------- Images

describe('images', () => {
  it('works with the openai SDK images.generate and reports usage', async () => {
    const client = new OpenAI({ apiKey: 'sk-sdk', baseURL: fake.url + '/v1', maxRetries: 0 });
    const r = await client.images.generate({ model: 'gpt-image-1', prompt: 'an otter', n: 2, quality: 'low' });
    expect(r.data).toHaveLength(2);
    expect(Buffer.from(r.data![0].b64_json!, 'base64').equals(TINY_PNG)).toBe(true);
    expect(r.usage).toMatchObject({ input_tokens: tokensOf('an otter'.length), output_tokens: 2 * 272 });
  });

  it('streams partial_images events then completed with usage', async () => {
    const s = await postBytes('/v1/images/generations', { model: 'gpt-image-1', prompt: 'otter', stream: true, partial_images: 2 });
    const events = expectSplitInvariant(s.bytes);
    expect(events.map((e) => e.event)).toEqual([
      'image_generation.partial_image',
      'image_generation.partial_image',
      'image_generation.completed',
    ]);
    expect((JSON.parse(events[2].data) as Json).usage).toMatchObject({ output_tokens: 1056 + 200 });
  });

  it('parses multipart edits with several images (image[] fields) via the SDK', async () => {
    const client = new OpenAI({ apiKey: 'sk-sdk', baseURL: fake.url + '/v1', maxRetries: 0 });
    const a = await toFile(TINY_PNG, 'a.png', { type: 'image/png' });
    const b = await toFile(TINY_PNG, 'b.png', { type: 'image/png' });
    const r = await client.images.edit({ model: 'gpt-image-1', image: [a, b], prompt: 'merge them' });
    expect(r.usage).toMatchObject({ input_tokens_details: { text_tokens: tokensOf('merge them'.length), image_tokens: 2 * IMAGE_TOKENS } });
    expect(String(fake.requests[0].headers['content-type'])).toMatch(/^multipart\/form-data/);
    expect(fake.requests[0].json).toBeUndefined();
  });

  it('serves the Ark v3 images shape', async () => {
    const j = (await (
      await post('/api/v3/images/generations', {
        model: 'doubao-seedream-4-0-250828',
        prompt: 'a lighthouse',
        size: '2K',
        sequential_image_generation: 'auto',
        sequential_image_generation_options: { max_images: 2 },
      })
    ).json()) as Json;
    expect(j.usage).toEqual({ generated_images: 2, output_tokens: 32768, total_tokens: 32768 });
    const item = (j.data as Json[])[0];
    expect(item.size).toBe('2048x2048');
    const png = await fetch(item.url as string);
    expect(Buffer.from(await png.arrayBuffer()).equals(TINY_PNG)).toBe(true);
    const s = await postBytes('/api/v3/images/generations', { model: 'seedream', prompt: 'x', stream: true });
    const ev = expectSplitInvariant(s.bytes);
    expect(ev.map((e) => e.event)).toEqual(['image_generation.partial_succeeded', 'image_generation.completed', undefined]);
    expect(ev.at(-1)!.data).toBe('[DONE]');
  });
});

// ---------------------------------------------------------------- fixtures

describe('fixtures under test/fixtures', () => {
  for (const def of FIXTURES) {
    it(`${def.name}.${def.ext} is exactly what the fake emits`, async () => {
      const { bytes } = await renderFixture(def);
      expect(bytes.toString('utf8')).toBe((await readFixture(def)).toString('utf8'));
    });
  }
});
