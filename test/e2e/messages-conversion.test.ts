// What goes upstream on the messages routes (pass-through rule, conversion to chat), what it is billed, and count_tokens.
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { UsageReport } from '../../gateway/ledger/report-types.ts';
import { checkErrorBody, checkMessage, checkMessagesStream, parseSse } from '../support/anthropic-shapes.ts';
import type { TestGateway } from '../support/gateway.ts';
import { PROVIDER_SECRET, startTestGateway } from '../support/gateway.ts';
import { readJson } from '../support/http.ts';

let t: TestGateway;
let claude: Anthropic;
let claudeHistoric: Anthropic;
beforeAll(async () => {
  t = await startTestGateway();
  claude = new Anthropic({ baseURL: `${t.url}/api`, apiKey: t.keys.acme, maxRetries: 0 });
  claudeHistoric = new Anthropic({ baseURL: `${t.url}/api/anthropic`, apiKey: t.keys.acme, maxRetries: 0 });
});
afterAll(async () => t?.close());

type Row = { input: string; output: string; cache_read: string; cache_write: string; cost_points: string; original_cost: string; estimated: boolean; model_id: string; upstream_model: string; stream: boolean; endpoint: string };
async function rows(ids: string[]): Promise<Row[]> {
  await t.gw.ledger.flush();
  const r = await t.gw.store.query<Row>(
    'SELECT input::text, output::text, cache_read::text, cache_write::text, cost_points::text, original_cost::text, estimated, model_id, upstream_model, stream, endpoint FROM usage_events WHERE request_id = ANY($1) ORDER BY array_position($1, request_id)',
    [ids],
  );
  return r.rows;
}
const figures = (r: Row) => ({ input: r.input, output: r.output, cache_read: r.cache_read, cache_write: r.cache_write, cost_points: r.cost_points, original_cost: r.original_cost, estimated: r.estimated, model_id: r.model_id, upstream_model: r.upstream_model });

async function post(path: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${t.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': t.keys.acme, ...headers }, body: JSON.stringify(body) });
}

describe('billing is identical whatever the path', () => {
  it('a converted messages call bills exactly like the same chat call, streamed or not, on both messages paths', async () => {
    const openai = new OpenAI({ baseURL: `${t.url}/api/v1`, apiKey: t.keys.acme, maxRetries: 0 });
    const text = 'Compare the two paths, please, at some length.';
    const chat = await openai.chat.completions.create({ model: 'gpt-4o-mini', max_completion_tokens: 300, messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: text }] }).withResponse();
    const params = { model: 'gpt-4o-mini', max_tokens: 300, system: 'Be brief.', messages: [{ role: 'user' as const, content: text }] };
    const viaApi = await claude.messages.create(params).withResponse();
    const viaHistoric = await claudeHistoric.messages.create(params).withResponse();
    const stream = claude.messages.stream(params);
    const streamed = await stream.finalMessage();
    const ids = [chat.response, viaApi.response, viaHistoric.response, stream.response!].map((r) => r.headers.get('x-tollgate-request-id')!);
    const [c, a, h, s] = await rows(ids);
    expect(figures(a)).toEqual(figures(c));
    expect(figures(h)).toEqual(figures(c));
    expect(figures(s)).toEqual(figures(c));
    expect([c.endpoint, a.endpoint, h.endpoint, s.endpoint]).toEqual(['/api/v1/chat/completions', '/api/v1/messages', '/api/anthropic/v1/messages', '/api/v1/messages']);
    expect(s.stream).toBe(true);
    // And the client was shown the same figures the ledger holds.
    const u = chat.data.usage!;
    for (const m of [viaApi.data, viaHistoric.data, streamed]) {
      expect(m.usage).toMatchObject({ input_tokens: u.prompt_tokens - (u.prompt_tokens_details?.cached_tokens ?? 0), output_tokens: u.completion_tokens, cache_read_input_tokens: 0 });
    }
    expect(Number(a.input)).toBe(viaApi.data.usage.input_tokens);
  });

  it('a pass-through call bills the same on /api and /api/anthropic, streamed or not', async () => {
    const params = { model: 'anthropic/claude', max_tokens: 300, messages: [{ role: 'user' as const, content: 'Same bill on both paths?' }] };
    const a = await claude.messages.create(params).withResponse();
    const h = await claudeHistoric.messages.create(params).withResponse();
    const stream = claudeHistoric.messages.stream(params);
    await stream.finalMessage();
    const [ra, rh, rs] = await rows([a.response, h.response, stream.response!].map((r) => r.headers.get('x-tollgate-request-id')!));
    expect(figures(rh)).toEqual(figures(ra));
    expect(figures(rs)).toEqual(figures(ra));
    expect(Number(ra.input)).toBe(a.data.usage.input_tokens);
  });

  it('the usage report shows exactly the figures of the ledger rows, by model name as sent', async () => {
    await t.gw.ledger.flush();
    const from = new Date(Date.now() - 3600_000).toISOString();
    const to = new Date(Date.now() + 60_000).toISOString();
    const res = await fetch(`${t.url}/api/business/v1/customer/usage?from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}`, { headers: { authorization: `Bearer ${t.keys.acme}` } });
    const report = (await readJson(res)) as UsageReport;
    const sums = await t.gw.store.query<{ client_model: string; n: string; input: string; output: string }>(
      "SELECT client_model, count(*)::text AS n, sum(input)::text AS input, sum(output)::text AS output FROM usage_events WHERE project = 'web' GROUP BY client_model",
    );
    for (const s of sums.rows) {
      const m = report.by_model.find((x) => x.model === s.client_model)!;
      expect(m, s.client_model).toBeTruthy();
      expect([m.request_count, m.billable_prompt_tokens, m.completion_tokens]).toEqual([Number(s.n), Number(s.input), Number(s.output)]);
    }
  });
});

describe('what a converted call sends upstream', () => {
  it('maps system, stop_sequences, metadata.user_id, max_tokens, sampling; rewrites the model; sends only the provider credential', async () => {
    t.upstream.reset();
    // Sampling fields are not in this SDK's types any more; older clients (and Claude Code) still send them.
    const res = await post('/api/v1/messages?beta=true', {
      model: 'openai/gpt-4o-mini',
      max_tokens: 77,
      temperature: 0.3,
      top_p: 0.8,
      top_k: 5,
      stop_sequences: ['END'],
      metadata: { user_id: 'u-7' },
      system: [{ type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } }],
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(res.status).toBe(200);
    const req = t.upstream.requests.at(-1)!;
    expect(req.path).toBe('/v1/chat/completions');
    // Claude Code's ?beta=true is accepted; it means nothing to a chat upstream.
    expect(req.query).toBe('');
    expect(req.json).toEqual({
      model: 'gpt-4o-mini-2024-07-18',
      messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'hi' }],
      max_completion_tokens: 77,
      temperature: 0.3,
      top_p: 0.8,
      stop: ['END'],
      user: 'u-7',
    });
    expect(req.headers.authorization).toBe(`Bearer ${PROVIDER_SECRET}`);
    expect(req.headers['x-api-key']).toBeUndefined();
    expect(req.headers['anthropic-version']).toBeUndefined();
    expect(JSON.stringify(req.headers)).not.toContain(t.keys.acme);
  });

  it('a model that cannot take them gets max_tokens, and neither reasoning_effort nor dropped sampling fields', async () => {
    t.upstream.reset();
    await post('/api/v1/messages', { model: 'openai/legacy', max_tokens: 500, top_p: 0.5, thinking: { type: 'enabled', budget_tokens: 4096 }, messages: [{ role: 'user', content: 'hi' }] });
    expect(t.upstream.requests.at(-1)!.json).toEqual({ model: 'legacy-1', messages: [{ role: 'user', content: 'hi' }], max_tokens: 500 });
    await claude.messages.create({ model: 'openai/reasoner', max_tokens: 500, thinking: { type: 'enabled', budget_tokens: 4096 }, messages: [{ role: 'user', content: 'hi' }] });
    expect(t.upstream.requests.at(-1)!.json).toMatchObject({ model: 'o-reasoner-1', reasoning_effort: 'high', max_completion_tokens: 500 });
  });

  it('several parallel tool calls come back as tool_use blocks in order, streamed and not, and go back as tool messages', async () => {
    scriptParallelTools();
    const tools: Anthropic.Tool[] = [
      { name: 'get_weather', input_schema: { type: 'object', properties: { city: { type: 'string' } } } },
      { name: 'get_time', input_schema: { type: 'object', properties: { tz: { type: 'string' } } } },
    ];
    const params = { model: 'openai/gpt-4o-mini', max_tokens: 300, tools, messages: [{ role: 'user' as const, content: 'Weather and time in Paris?' }] };
    const json = await claude.messages.create(params);
    const stream = claude.messages.stream(params);
    const blocks: string[] = [];
    stream.on('contentBlock', (b) => blocks.push(b.type));
    const streamed = await stream.finalMessage();
    for (const m of [json, streamed]) {
      expect(m.stop_reason).toBe('tool_use');
      expect(m.content).toEqual([
        { type: 'text', text: 'Checking both.' },
        { type: 'tool_use', id: 'call_A', name: 'get_weather', input: { city: 'Paris' } },
        { type: 'tool_use', id: 'call_B', name: 'get_time', input: { tz: 'Europe/Paris' } },
      ]);
      expect(m.usage).toMatchObject({ input_tokens: 56, cache_read_input_tokens: 64, output_tokens: 40 });
    }
    expect(blocks).toEqual(['text', 'tool_use', 'tool_use']);
    const ids = [stream.response!.headers.get('x-tollgate-request-id')!];
    const [row] = await rows(ids);
    expect([row.input, row.cache_read, row.output]).toEqual(['56', '64', '40']);

    t.upstream.reset();
    await claude.messages.create({
      ...params,
      messages: [
        ...params.messages,
        { role: 'assistant', content: json.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_A', content: '18 C' }, { type: 'tool_result', tool_use_id: 'call_B', content: [{ type: 'text', text: '14:05' }] }] },
      ],
    });
    const sent = (t.upstream.requests.at(-1)!.json as { messages: unknown[] }).messages;
    expect(sent.slice(1)).toEqual([
      { role: 'assistant', content: 'Checking both.', tool_calls: [{ id: 'call_A', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }, { id: 'call_B', type: 'function', function: { name: 'get_time', arguments: '{"tz":"Europe/Paris"}' } }] },
      { role: 'tool', tool_call_id: 'call_A', content: '18 C' },
      { role: 'tool', tool_call_id: 'call_B', content: '14:05' },
    ]);
  });

  it('max_tokens and stop_sequence stop reasons are mapped faithfully, streamed and not', async () => {
    const cut = { model: 'openai/gpt-4o-mini', max_tokens: 2, messages: [{ role: 'user' as const, content: 'A long answer would not fit into two tokens' }] };
    expect((await claude.messages.create(cut)).stop_reason).toBe('max_tokens');
    expect((await claude.messages.stream(cut).finalMessage()).stop_reason).toBe('max_tokens');
    const usage = { prompt_tokens: 9, completion_tokens: 3, total_tokens: 12 };
    const head = { id: 'chatcmpl-stop1', created: 1750000000, model: 'vllm-model' };
    t.upstream.nextResponse({ path: '/chat/completions', body: { ...head, object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: 'Done here' }, finish_reason: 'stop', stop_reason: 'END' }], usage } });
    t.upstream.nextResponse({
      path: '/chat/completions',
      chunks: [
        `data: ${JSON.stringify({ ...head, object: 'chat.completion.chunk', choices: [{ index: 0, delta: { role: 'assistant', content: 'Done here' }, finish_reason: null }] })}\n\n`,
        `data: ${JSON.stringify({ ...head, object: 'chat.completion.chunk', choices: [{ index: 0, delta: {}, finish_reason: 'stop', stop_reason: 'END' }] })}\n\n`,
        `data: ${JSON.stringify({ ...head, object: 'chat.completion.chunk', choices: [], usage })}\n\n`,
        'data: [DONE]\n\n',
      ],
    });
    const stop = { model: 'openai/gpt-4o-mini', max_tokens: 50, stop_sequences: ['END'], messages: [{ role: 'user' as const, content: 'Stop at END' }] };
    for (const m of [await claude.messages.create(stop), await claude.messages.stream(stop).finalMessage()]) {
      expect([m.stop_reason, m.stop_sequence]).toEqual(['stop_sequence', 'END']);
    }
  });
});

describe('pass-through to an anthropic upstream', () => {
  it('rewrites only the model, passes anthropic-version and anthropic-beta, and the beta query', async () => {
    t.upstream.reset();
    const body = { model: 'anthropic/claude', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }], top_k: 3, custom_field: { kept: true } };
    const res = await post('/api/v1/messages?beta=true', body, { 'anthropic-version': '2023-06-01', 'anthropic-beta': 'prompt-caching-2024-07-31,context-1m-2025-08-07' });
    expect(res.status).toBe(200);
    expect(checkMessage(await readJson(res))).toEqual([]);
    const req = t.upstream.requests.at(-1)!;
    expect(req.path).toBe('/v1/messages');
    expect(req.query).toBe('beta=true');
    expect(req.json).toEqual({ ...body, model: 'claude-x' });
    expect(req.headers['anthropic-version']).toBe('2023-06-01');
    expect(req.headers['anthropic-beta']).toBe('prompt-caching-2024-07-31,context-1m-2025-08-07');
    expect(req.headers['x-api-key']).toBe(PROVIDER_SECRET);
    expect(req.headers.authorization).toBeUndefined();
  });

  it('defaults anthropic-version when the client sent none, and takes the key as x-api-key or Bearer', async () => {
    t.upstream.reset();
    const viaBearer = await fetch(`${t.url}/api/anthropic/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${t.keys.acme}` },
      body: JSON.stringify({ model: 'anthropic/claude', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(viaBearer.status).toBe(200);
    expect(t.upstream.requests.at(-1)!.headers['anthropic-version']).toBe('2023-06-01');
    expect(t.upstream.requests.at(-1)!.query).toBe('');
  });

  it('the SDK beta client (betas in anthropic-beta) works on both paths', async () => {
    for (const c of [claude, claudeHistoric]) {
      t.upstream.reset();
      const m = await c.beta.messages.create({ model: 'anthropic/claude', max_tokens: 50, betas: ['interleaved-thinking-2025-05-14'], messages: [{ role: 'user', content: 'beta hi' }] });
      expect(m.content[0]).toMatchObject({ type: 'text', text: 'echo: beta hi' });
      expect(t.upstream.requests.at(-1)!.headers['anthropic-beta']).toContain('interleaved-thinking-2025-05-14');
    }
  });

  it('a cache write then a cache read are billed as such (explicit cache)', async () => {
    const params = { model: 'anthropic/claude', max_tokens: 50, system: [{ type: 'text' as const, text: 'A long, cacheable system prompt. '.repeat(20), cache_control: { type: 'ephemeral' as const } }], messages: [{ role: 'user' as const, content: 'cache me' }] };
    const first = await claude.messages.create(params).withResponse();
    const second = await claude.messages.create(params).withResponse();
    expect(first.data.usage.cache_creation_input_tokens).toBeGreaterThan(0);
    expect(second.data.usage.cache_read_input_tokens).toBe(first.data.usage.cache_creation_input_tokens);
    const [w, r] = await rows([first.response, second.response].map((x) => x.headers.get('x-tollgate-request-id')!));
    expect(Number(w.cache_write)).toBe(first.data.usage.cache_creation_input_tokens);
    expect(Number(r.cache_read)).toBe(second.data.usage.cache_read_input_tokens);
    await t.gw.ledger.flush();
    const q = await t.gw.store.query<{ cache_explicit_read: string }>('SELECT cache_explicit_read::text FROM usage_events WHERE request_id = $1', [second.response.headers.get('x-tollgate-request-id')]);
    expect(q.rows[0].cache_explicit_read).toBe(r.cache_read);
  });
});

describe('count_tokens', () => {
  it('passes through for anthropic models on both paths, unbilled', async () => {
    await t.gw.ledger.flush();
    const before = await t.gw.store.query<{ n: string }>('SELECT count(*)::text AS n FROM usage_events');
    t.upstream.reset();
    const params = { model: 'anthropic/claude', system: 'Be brief.', messages: [{ role: 'user' as const, content: 'How many tokens is this?' }] };
    const a = await claude.messages.countTokens(params);
    const h = await claudeHistoric.messages.countTokens(params);
    const beta = await claude.beta.messages.countTokens(params);
    expect(a.input_tokens).toBeGreaterThan(0);
    expect(h).toEqual(a);
    expect(beta).toEqual(a);
    const req = t.upstream.requests[0];
    expect(req.path).toBe('/v1/messages/count_tokens');
    expect(req.json).toMatchObject({ model: 'claude-x' });
    expect(t.upstream.requests[2].headers['anthropic-beta']).toContain('token-counting');
    // Claude Code's form of the call.
    const cc = await post('/api/v1/messages/count_tokens?beta=true', params, { 'anthropic-beta': 'claude-code-20250219' });
    expect(await readJson(cc)).toEqual(a);
    expect(t.upstream.requests[3].query).toBe('beta=true');
    expect(t.upstream.requests[3].headers['anthropic-beta']).toBe('claude-code-20250219');
    await t.gw.ledger.flush();
    const after = await t.gw.store.query<{ n: string }>('SELECT count(*)::text AS n FROM usage_events');
    expect(after.rows[0].n).toBe(before.rows[0].n);
  });

  it('is a clear 400 in the messages shape for a model without the anthropic protocol', async () => {
    const res = await post('/api/v1/messages/count_tokens', { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] });
    expect(res.status).toBe(400);
    const body = await readJson(res);
    expect(checkErrorBody(body)).toEqual([]);
    expect(body.error).toEqual({ type: 'invalid_request_error', message: expect.stringMatching(/only for models served over the anthropic protocol/) });
    await expect(claudeHistoric.messages.countTokens({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] })).rejects.toBeInstanceOf(Anthropic.BadRequestError);
  });

  it('an unreachable upstream is a 502 api_error, not a hang or a 500', async () => {
    const res = await post('/api/anthropic/v1/messages/count_tokens', { model: 'anthropic/unreachable', messages: [{ role: 'user', content: 'x' }] });
    expect(res.status).toBe(502);
    const body = await readJson(res);
    expect(checkErrorBody(body)).toEqual([]);
    expect(body.error.type).toBe('api_error');
    expect(JSON.stringify(body)).not.toContain('127.0.0.1');
  });
});

describe('streams are valid Anthropic event sequences', () => {
  it.each([
    ['pass-through text', 'anthropic/claude', {}],
    ['converted text', 'openai/gpt-4o-mini', {}],
    ['pass-through tools', 'anthropic/claude', { tools: [{ name: 'f', input_schema: { type: 'object', properties: { a: { type: 'string' } }, required: ['a'] } }] }],
    ['converted tools', 'openai/gpt-4o-mini', { tools: [{ name: 'f', input_schema: { type: 'object', properties: { a: { type: 'string' } }, required: ['a'] } }] }],
    ['pass-through thinking', 'anthropic/claude', { thinking: { type: 'enabled', budget_tokens: 1024 } }],
  ])('%s', async (_name, model, extra) => {
    const res = await post('/api/v1/messages', { model, max_tokens: 2000, stream: true, messages: [{ role: 'user', content: 'stream it' }], ...extra });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    expect(checkMessagesStream(parseSse(await res.text()))).toEqual([]);
  });
});

function scriptParallelTools(): void {
  const head = { id: 'chatcmpl-par1', created: 1750000000, model: 'gpt-4o-mini-2024-07-18' };
  const usage = { prompt_tokens: 120, completion_tokens: 40, total_tokens: 160, prompt_tokens_details: { cached_tokens: 64 } };
  t.upstream.nextResponse({
    path: '/chat/completions',
    body: {
      ...head,
      object: 'chat.completion',
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: 'Checking both.',
            tool_calls: [
              { id: 'call_A', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
              { id: 'call_B', type: 'function', function: { name: 'get_time', arguments: '{"tz":"Europe/Paris"}' } },
            ],
          },
          finish_reason: 'tool_calls',
        },
      ],
      usage,
    },
  });
  const chunk = (delta: unknown, finish: string | null = null) => `data: ${JSON.stringify({ ...head, object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
  t.upstream.nextResponse({
    path: '/chat/completions',
    chunks: [
      chunk({ role: 'assistant', content: 'Checking both.' }),
      chunk({ tool_calls: [{ index: 0, id: 'call_A', type: 'function', function: { name: 'get_weather', arguments: '' } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: '"Paris"}' } }] }),
      chunk({ tool_calls: [{ index: 1, id: 'call_B', type: 'function', function: { name: 'get_time', arguments: '{"tz":"Europe/Paris"}' } }] }),
      chunk({}, 'tool_calls'),
      `data: ${JSON.stringify({ ...head, object: 'chat.completion.chunk', choices: [], usage })}\n\n`,
      'data: [DONE]\n\n',
    ],
  });
}
