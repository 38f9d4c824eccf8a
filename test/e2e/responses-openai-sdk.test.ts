// POST /api/v1/responses through the official openai SDK: pass-through JSON and SSE byte for byte, exact billing, chat-style errors.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { UsageReport } from '../../gateway/ledger/report-types.ts';
import { expectedCost, MINI_ACME, sumDecimals } from '../support/expected-cost.ts';
import type { TestGateway } from '../support/gateway.ts';
import { PROVIDER_SECRET, startTestGateway } from '../support/gateway.ts';
import { readJson } from '../support/http.ts';
import { FIXTURE_DIR } from '../upstream/fixtures.ts';

let t: TestGateway;
let client: OpenAI;
const from = new Date(Date.now() - 60_000).toISOString();
/** Usage of every answer the gateway billed, as the SDK saw it. */
const billed: OpenAI.Responses.ResponseUsage[] = [];

const tokensOf = (u: OpenAI.Responses.ResponseUsage) => ({
  input: u.input_tokens - u.input_tokens_details.cached_tokens,
  cacheRead: u.input_tokens_details.cached_tokens,
  output: u.output_tokens,
});

beforeAll(async () => {
  t = await startTestGateway();
  client = new OpenAI({ baseURL: `${t.url}/api/v1`, apiKey: t.keys.acme, maxRetries: 0 });
});
afterAll(async () => t?.close());

async function ledgerRow(requestId: string) {
  await t.gw.ledger.flush();
  const r = await t.gw.store.query<{ input: string; output: string; cache_read: string; cost_points: string; stream: boolean; estimated: boolean; endpoint: string; client_model: string }>(
    'SELECT input::text, output::text, cache_read::text, cost_points::text, stream, estimated, endpoint, client_model FROM usage_events WHERE request_id = $1',
    [requestId],
  );
  return r.rows[0];
}

async function lastRequestId(): Promise<string> {
  await t.gw.ledger.flush();
  const r = await t.gw.store.query<{ request_id: string }>('SELECT request_id FROM usage_events ORDER BY occurred_at DESC LIMIT 1');
  return r.rows[0].request_id;
}

describe('responses.create', () => {
  it('answers, tells the cost in headers, and bills input, cache read and output exactly', async () => {
    const { data, response } = await client.responses.create({ model: 'gpt-5-nano', instructions: 'Be brief.', input: 'What is the capital of France?' }).withResponse();
    expect(data.object).toBe('response');
    expect(data.status).toBe('completed');
    expect(data.output_text).toBe('echo: What is the capital of France?');
    const cost = response.headers.get('x-tollgate-cost-points')!;
    expect(cost).toBe(expectedCost(tokensOf(data.usage!), MINI_ACME).cost);
    const row = await ledgerRow(response.headers.get('x-tollgate-request-id')!);
    expect(row).toMatchObject({ endpoint: '/api/v1/responses', client_model: 'gpt-5-nano', stream: false, estimated: false, cost_points: cost });
    billed.push(data.usage!);
  });

  it('bills cached input at the cache-read price', async () => {
    const { data, response } = await client.responses.create({ model: 'openai/gpt-5-nano', input: 'A prompt long enough to have half of it cached by the fake upstream.', prompt_cache_key: 'k1' }).withResponse();
    const cached = data.usage!.input_tokens_details.cached_tokens;
    expect(cached).toBeGreaterThan(0);
    const row = await ledgerRow(response.headers.get('x-tollgate-request-id')!);
    expect(row.cache_read).toBe(String(cached));
    expect(row.input).toBe(String(data.usage!.input_tokens - cached));
    expect(response.headers.get('x-tollgate-cost-points')).toBe(expectedCost(tokensOf(data.usage!), MINI_ACME).cost);
    billed.push(data.usage!);
  });

  it('passes the body through with only the model rewritten, under the provider credential', async () => {
    t.upstream.reset();
    const tools: OpenAI.Responses.FunctionTool[] = [{ type: 'function', name: 'get_weather', description: 'Weather', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }, strict: true }];
    const r = await client.responses.create({ model: 'gpt-5-nano', input: [{ role: 'user', content: 'Weather in Paris?' }], tools, temperature: 0.2, store: false, metadata: { team: 'web' } });
    expect(r.output[0].type).toBe('function_call');
    const seen = t.upstream.requests.at(-1)!;
    expect(seen.path).toBe('/v1/responses');
    expect(seen.json).toEqual({ model: 'gpt-5-nano-2025-08-07', input: [{ role: 'user', content: 'Weather in Paris?' }], tools, temperature: 0.2, store: false, metadata: { team: 'web' } });
    expect(seen.headers.authorization).toBe(`Bearer ${PROVIDER_SECRET}`);
    expect(JSON.stringify(seen.headers)).not.toContain(t.keys.acme);
    billed.push(r.usage!);
  });

  it('returns the upstream JSON byte for byte', async () => {
    const bytes = readFileSync(join(FIXTURE_DIR, 'responses/text.json'));
    t.upstream.nextResponse({ path: '/responses', headers: { 'content-type': 'application/json' }, body: bytes });
    const res = await fetch(`${t.url}/api/v1/responses`, { method: 'POST', headers: { authorization: `Bearer ${t.keys.acme}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'gpt-5-nano', input: 'x' }) });
    expect(res.status).toBe(200);
    expect(Buffer.from(await res.arrayBuffer()).equals(bytes)).toBe(true);
    const usage = JSON.parse(bytes.toString()).usage as OpenAI.Responses.ResponseUsage;
    expect(res.headers.get('x-tollgate-cost-points')).toBe(expectedCost(tokensOf(usage), MINI_ACME).cost);
    billed.push(usage);
  });
});

describe('responses.stream', () => {
  it('the SDK helper gets response.created first and response.completed last; the ledger has the final usage', async () => {
    const stream = client.responses.stream({ model: 'gpt-5-nano', input: 'Stream me a sentence about gateways.' });
    const types: string[] = [];
    let text = '';
    stream.on('event', (e) => types.push(e.type));
    stream.on('response.output_text.delta', (e) => (text += e.delta));
    const final = await stream.finalResponse();
    expect(types[0]).toBe('response.created');
    expect(types.at(-1)).toBe('response.completed');
    expect(types).toContain('response.output_text.delta');
    expect(text).toBe(final.output_text);
    const row = await ledgerRow(await lastRequestId());
    expect(row).toMatchObject({ stream: true, estimated: false, output: String(final.usage!.output_tokens), cost_points: expectedCost(tokensOf(final.usage!), MINI_ACME).cost });
    billed.push(final.usage!);
  });

  it('streams a function call', async () => {
    const stream = client.responses.stream({
      model: 'gpt-5-nano',
      input: 'Weather in Oslo?',
      tools: [{ type: 'function', name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }, strict: true }],
    });
    const final = await stream.finalResponse();
    const call = final.output.find((o) => o.type === 'function_call') as OpenAI.Responses.ResponseFunctionToolCall;
    expect(call.name).toBe('get_weather');
    expect(JSON.parse(call.arguments)).toHaveProperty('city');
    billed.push(final.usage!);
  });

  it('relays the upstream SSE byte for byte', async () => {
    const bytes = readFileSync(join(FIXTURE_DIR, 'responses/text-stream.sse'));
    // Split mid-event so the gateway sees events straddling chunk boundaries.
    t.upstream.nextResponse({ path: '/responses', headers: { 'content-type': 'text/event-stream; charset=utf-8' }, chunks: [bytes.subarray(0, 333), bytes.subarray(333, 1200), bytes.subarray(1200)] });
    const res = await fetch(`${t.url}/api/v1/responses`, { method: 'POST', headers: { authorization: `Bearer ${t.keys.acme}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'gpt-5-nano', input: 'x', stream: true }) });
    expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(Buffer.from(await res.arrayBuffer()).equals(bytes)).toBe(true);
    const completed = bytes
      .toString()
      .split('\n')
      .find((l) => l.startsWith('data: {"type":"response.completed"'))!;
    const usage = JSON.parse(completed.slice(6)).response.usage as OpenAI.Responses.ResponseUsage;
    const row = await ledgerRow(res.headers.get('x-tollgate-request-id')!);
    expect(row.cost_points).toBe(expectedCost(tokensOf(usage), MINI_ACME).cost);
    billed.push(usage);
  });

  it('an upstream error event mid-stream reaches the SDK as an APIError', async () => {
    const stream = client.responses.stream({ model: 'gpt-5-nano', input: 'Say something long [fake:mid-stream-error]' });
    let text = '';
    stream.on('response.output_text.delta', (e) => (text += e.delta));
    await expect(stream.finalResponse()).rejects.toThrow(/server had an error/);
    // No terminal event: the output is estimated from the text deltas the SDK got (UTF-8 bytes / 4), flagged.
    const row = await ledgerRow(await lastRequestId());
    expect(Buffer.byteLength(text)).toBeGreaterThan(0);
    expect(row).toMatchObject({ estimated: true, output: String(Math.ceil(Buffer.byteLength(text) / 4)) });
  });

  it('a stream that ends cleanly without its terminal event gets an error event the SDK raises', async () => {
    const bytes = readFileSync(join(FIXTURE_DIR, 'responses/text-stream.sse'));
    t.upstream.nextResponse({ path: '/responses', headers: { 'content-type': 'text/event-stream; charset=utf-8' }, chunks: [bytes.subarray(0, bytes.indexOf('event: response.completed'))] });
    const stream = client.responses.stream({ model: 'gpt-5-nano', input: 'x' });
    await expect(stream.finalResponse()).rejects.toThrow(/ended the stream before its final event/);
  });

  it('a stream the upstream cuts ends with an error event the SDK raises', async () => {
    const stream = client.responses.stream({ model: 'gpt-5-nano', input: 'Say something long [fake:cut-stream]' });
    await expect(stream.finalResponse()).rejects.toThrow(/the upstream stream broke/i);
  });
});

describe('responses errors, chat-style', () => {
  it('a model without the responses protocol is a 400 naming the model', async () => {
    const err = await client.responses.create({ model: 'gpt-4o-mini', input: 'hi' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    const e = err as InstanceType<typeof OpenAI.BadRequestError>;
    expect(e.status).toBe(400);
    expect(e.code).toBe('unsupported_protocol');
    expect(e.type).toBe('invalid_request_error');
    expect(e.message).toContain('gpt-4o-mini');
  });

  it.each([
    ['no key', undefined, { model: 'gpt-5-nano', input: 'x' }, 401, 'invalid_api_key'],
    ['an unknown model', 'acme', { model: 'nope/nothing', input: 'x' }, 404, 'model_not_found'],
    ['a missing model', 'acme', { input: 'x' }, 400, 'invalid_request'],
    ['a private model the org may not use', 'globex', { model: 'secret/internal', input: 'x' }, 404, 'model_not_found'],
  ] as const)('%s', async (_name, who, body, status, code) => {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (who) headers.authorization = `Bearer ${t.keys[who]}`;
    const res = await fetch(`${t.url}/api/v1/responses`, { method: 'POST', headers, body: JSON.stringify(body) });
    expect(res.status).toBe(status);
    const b = await readJson(res);
    expect(b.error.code).toBe(code);
    expect(Object.keys(b.error).sort()).toEqual(['code', 'message', 'param', 'type']);
  });

  it('malformed JSON is a 400 in the chat shape', async () => {
    const res = await fetch(`${t.url}/api/v1/responses`, { method: 'POST', headers: { authorization: `Bearer ${t.keys.acme}`, 'content-type': 'application/json' }, body: '{"model":' });
    expect(res.status).toBe(400);
    expect((await readJson(res)).error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_request' });
  });

  it('an upstream error comes back with its status and body, unbilled', async () => {
    await t.gw.ledger.flush();
    const before = (await t.gw.store.query<{ n: string }>('SELECT count(*)::text AS n FROM usage_events')).rows[0].n;
    const err = await client.responses.create({ model: 'gpt-5-nano', input: 'x', metadata: { fake: 'error-429' } }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.RateLimitError);
    await t.gw.ledger.flush();
    expect((await t.gw.store.query<{ n: string }>('SELECT count(*)::text AS n FROM usage_events')).rows[0].n).toBe(before);
  });
});

describe('usage report', () => {
  it('shows exactly the points and tokens of every billed answer', async () => {
    await t.gw.ledger.flush();
    const to = new Date(Date.now() + 60_000).toISOString();
    const res = await fetch(`${t.url}/api/business/v1/customer/usage?from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}`, { headers: { authorization: `Bearer ${t.keys.acme}` } });
    const report = (await res.json()) as UsageReport;
    // The three error-path streams above are billed too (estimated); take them from the ledger, the rest from what the SDK saw.
    const estimated = await t.gw.store.query<{ input: string; output: string; cost_points: string }>("SELECT input::text, output::text, cost_points::text FROM usage_events WHERE project = 'web' AND estimated");
    expect(estimated.rows).toHaveLength(3);
    const expected = sumDecimals([...billed.map((u) => expectedCost(tokensOf(u), MINI_ACME).cost), ...estimated.rows.map((r) => expectedCost({ input: Number(r.input), output: Number(r.output) }, MINI_ACME).cost)]);
    expect(report.totals.cost_points).toBe(expected);
    expect(report.totals.request_count).toBe(billed.length + estimated.rows.length);
    const sum = (f: (u: OpenAI.Responses.ResponseUsage) => number) => billed.reduce((a, u) => a + f(u), 0);
    const estOut = estimated.rows.reduce((a, r) => a + Number(r.output), 0);
    expect(report.totals.completion_tokens).toBe(sum((u) => u.output_tokens) + estOut);
    expect(report.totals.cached_tokens).toBe(sum((u) => u.input_tokens_details.cached_tokens));
    expect(report.totals.cache_explicit_read_tokens).toBe(0);
  });
});
