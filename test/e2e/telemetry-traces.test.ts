// Traces through an in-memory span exporter: every endpoint family yields a server span, a client span per upstream
// attempt and the journal-append span, with the GenAI attributes and usage equal to the ledger row's.
import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI } from '@google/genai';
import { SpanKind } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { TestGateway } from '../support/gateway.ts';
import { startTestGateway } from '../support/gateway.ts';

interface UsageRow {
  input: string;
  output: string;
  cache_read: string;
  cache_write: string;
  cost_points: string;
  organization: string;
  project: string;
  model_id: string;
  client_model: string;
  provider: string;
  upstream_model: string;
  endpoint: string;
}

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT_ID = '00f067aa0ba902b7';

describe('traces', () => {
  let t: TestGateway;
  const exporter = new InMemorySpanExporter();
  let openai: OpenAI;

  beforeAll(async () => {
    t = await startTestGateway({ gateway: { telemetry: { spanExporter: exporter, env: {} } } });
    openai = new OpenAI({ baseURL: `${t.url}/api/v1`, apiKey: t.keys.acme, maxRetries: 0 });
  });
  afterAll(async () => t?.close());
  beforeEach(() => exporter.reset());

  async function rowOf(requestId: string): Promise<UsageRow> {
    await t.gw.ledger.flush();
    const { rows } = await t.gw.store.query<UsageRow>(
      'SELECT input::text, output::text, cache_read::text, cache_write::text, cost_points::text, organization, project, model_id, client_model, provider, upstream_model, endpoint FROM usage_events WHERE request_id = $1',
      [requestId],
    );
    expect(rows).toHaveLength(1);
    return rows[0];
  }

  /** The one request's spans: server, client attempt(s), journal append; all in one trace, children of the server span. */
  function spansOfOneRequest(): { server: ReadableSpan; clients: ReadableSpan[]; journal: ReadableSpan[]; all: ReadableSpan[] } {
    const all = exporter.getFinishedSpans();
    const servers = all.filter((s) => s.kind === SpanKind.SERVER);
    expect(servers).toHaveLength(1);
    const server = servers[0];
    for (const s of all) {
      expect(s.spanContext().traceId).toBe(server.spanContext().traceId);
      if (s !== server) expect(s.parentSpanContext?.spanId).toBe(server.spanContext().spanId);
    }
    return { server, clients: all.filter((s) => s.kind === SpanKind.CLIENT), journal: all.filter((s) => s.name === 'ledger journal append'), all };
  }

  /** Checks the GenAI and tollgate attributes against the ledger row the request produced. */
  async function expectBilledTrace(want: { operation: string; provider: string; requestModel: string; endpoint: string; stream?: boolean }): Promise<{ client: ReadableSpan; server: ReadableSpan; row: UsageRow }> {
    const { server, clients, journal } = spansOfOneRequest();
    expect(clients).toHaveLength(1);
    expect(journal).toHaveLength(1);
    const client = clients[0];
    const requestId = server.attributes['tollgate.request_id'] as string;
    const row = await rowOf(requestId);
    expect(server.name).toMatch(/^POST \/api\//);
    expect(server.attributes).toMatchObject({
      'http.request.method': 'POST',
      'http.response.status_code': 200,
      'tollgate.endpoint': want.endpoint,
      'tollgate.organization': 'acme',
      'tollgate.project': 'web',
      'tollgate.cost_points': row.cost_points,
      'tollgate.model': row.model_id,
      'gen_ai.request.model': want.requestModel,
    });
    expect(server.attributes['tollgate.api_key.prefix']).toBe(t.keys.acme.slice(0, (server.attributes['tollgate.api_key.prefix'] as string).length));
    expect(client.name).toBe(`${want.operation} ${want.requestModel}`);
    expect(client.attributes).toMatchObject({
      'gen_ai.operation.name': want.operation,
      'gen_ai.provider.name': want.provider,
      'gen_ai.request.model': want.requestModel,
      'gen_ai.request.stream': want.stream ?? false,
      'gen_ai.usage.input_tokens': Number(row.input) + Number(row.cache_read) + Number(row.cache_write),
      'gen_ai.usage.output_tokens': Number(row.output),
      'gen_ai.usage.cache_read.input_tokens': Number(row.cache_read),
      'gen_ai.usage.cache_creation.input_tokens': Number(row.cache_write),
      'tollgate.cost_points': row.cost_points,
      'tollgate.provider': row.provider,
      'tollgate.upstream.model': row.upstream_model,
      'http.response.status_code': 200,
      'server.address': '127.0.0.1',
    });
    expect(row.endpoint).toBe(want.endpoint);
    // Spans carry facts, never content: no attribute holds the key.
    expect(JSON.stringify([server.attributes, client.attributes])).not.toContain(t.keys.acme);
    return { client, server, row };
  }

  it('chat: request parameters, response id, model and finish reasons', async () => {
    const { data } = await openai.chat.completions
      .create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Say hello to the tracer' }], max_tokens: 64, temperature: 0.3, top_p: 0.9, seed: 7 })
      .withResponse();
    const { client } = await expectBilledTrace({ operation: 'chat', provider: 'openai', requestModel: 'gpt-4o-mini', endpoint: '/api/v1/chat/completions' });
    expect(client.attributes).toMatchObject({
      'gen_ai.request.max_tokens': 64,
      'gen_ai.request.temperature': 0.3,
      'gen_ai.request.top_p': 0.9,
      'gen_ai.request.seed': 7,
      'gen_ai.response.id': data.id,
      'gen_ai.response.model': data.model,
      'gen_ai.response.finish_reasons': ['stop'],
    });
  });

  it('chat stream: the facts come from the stream, and the client span covers it', async () => {
    const stream = await openai.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Stream hello to the tracer' }], stream: true });
    let id = '';
    for await (const chunk of stream) id = chunk.id;
    const { client } = await expectBilledTrace({ operation: 'chat', provider: 'openai', requestModel: 'gpt-4o-mini', endpoint: '/api/v1/chat/completions', stream: true });
    expect(client.attributes['gen_ai.response.id']).toBe(id);
    expect(client.attributes['gen_ai.response.finish_reasons']).toEqual(['stop']);
  });

  it('messages (anthropic pass-through), JSON and stream', async () => {
    const anthropic = new Anthropic({ baseURL: `${t.url}/api/anthropic`, apiKey: t.keys.acme, maxRetries: 0 });
    const msg = await anthropic.messages.create({ model: 'anthropic/claude', max_tokens: 100, stop_sequences: ['END'], messages: [{ role: 'user', content: 'Hi there' }] });
    const { client } = await expectBilledTrace({ operation: 'chat', provider: 'anthropic', requestModel: 'anthropic/claude', endpoint: '/api/anthropic/v1/messages' });
    expect(client.attributes).toMatchObject({ 'gen_ai.request.max_tokens': 100, 'gen_ai.request.stop_sequences': ['END'], 'gen_ai.response.id': msg.id, 'gen_ai.response.finish_reasons': [msg.stop_reason] });

    exporter.reset();
    const stream = anthropic.messages.stream({ model: 'anthropic/claude', max_tokens: 100, messages: [{ role: 'user', content: 'Stream hi' }] });
    const final = await stream.finalMessage();
    const s = await expectBilledTrace({ operation: 'chat', provider: 'anthropic', requestModel: 'anthropic/claude', endpoint: '/api/anthropic/v1/messages', stream: true });
    expect(s.client.attributes).toMatchObject({ 'gen_ai.response.id': final.id, 'gen_ai.response.model': final.model, 'gen_ai.response.finish_reasons': [final.stop_reason] });
  });

  it('messages converted through chat: the client span names the upstream protocol', async () => {
    const anthropic = new Anthropic({ baseURL: `${t.url}/api`, apiKey: t.keys.acme, maxRetries: 0 });
    await anthropic.messages.create({ model: 'openai/reasoner', max_tokens: 50, messages: [{ role: 'user', content: 'Hi' }] });
    await expectBilledTrace({ operation: 'chat', provider: 'openai', requestModel: 'openai/reasoner', endpoint: '/api/v1/messages' });
  });

  it('unified chat entry over a gemini upstream', async () => {
    const v0 = new OpenAI({ baseURL: `${t.url}/api/v0`, apiKey: t.keys.acme, maxRetries: 0 });
    await v0.chat.completions.create({ model: 'gemini-2.5-flash', messages: [{ role: 'user', content: 'Hello Gemini' }], max_tokens: 32 });
    // The client span describes the upstream call, a Gemini generateContent, whatever protocol the caller spoke.
    const { client } = await expectBilledTrace({ operation: 'generate_content', provider: 'gcp.gemini', requestModel: 'gemini-2.5-flash', endpoint: '/api/v0/chat/completions' });
    expect(client.attributes['gen_ai.request.max_tokens']).toBe(32);
    expect(client.attributes['gen_ai.response.finish_reasons']).toEqual(['STOP']);
  });

  it('responses', async () => {
    const r = await openai.responses.create({ model: 'gpt-5-nano', input: 'Hello responses', max_output_tokens: 200 });
    const { client } = await expectBilledTrace({ operation: 'chat', provider: 'openai', requestModel: 'gpt-5-nano', endpoint: '/api/v1/responses' });
    expect(client.attributes).toMatchObject({ 'gen_ai.request.max_tokens': 200, 'gen_ai.response.id': r.id, 'gen_ai.response.finish_reasons': ['completed'] });
  });

  it('images generations', async () => {
    await openai.images.generate({ model: 'gpt-image-1', prompt: 'a lighthouse', n: 1, size: '1024x1024' });
    const { client } = await expectBilledTrace({ operation: 'generate_content', provider: 'openai', requestModel: 'gpt-image-1', endpoint: '/api/v1/images/generations' });
    expect(client.attributes).toMatchObject({ 'gen_ai.output.type': 'image', 'gen_ai.request.choice.count': 1, 'tollgate.usage.artifacts': 1 });
  });

  it('generateContent through @google/genai', async () => {
    const ai = new GoogleGenAI({ apiKey: t.keys.acme, httpOptions: { baseUrl: `${t.url}/api/v1/gemini`, apiVersion: 'v1beta' } });
    const r = await ai.models.generateContent({ model: 'gemini-2.5-flash-image', contents: 'Draw a cat', config: { temperature: 0.4, maxOutputTokens: 500 } });
    const { client } = await expectBilledTrace({ operation: 'generate_content', provider: 'gcp.gemini', requestModel: 'gemini-2.5-flash-image', endpoint: '/api/v1/gemini/v1beta/models/{model}:generateContent' });
    expect(client.attributes).toMatchObject({ 'gen_ai.request.temperature': 0.4, 'gen_ai.request.max_tokens': 500, 'gen_ai.response.finish_reasons': ['STOP'] });
    expect(r.responseId).toMatch(/./);
    expect(client.attributes).toMatchObject({ 'gen_ai.response.id': r.responseId, 'gen_ai.response.model': r.modelVersion });
  });

  it('usage report: a server span with the key owner and a child span for the query', async () => {
    const res = await fetch(`${t.url}/api/business/v1/customer/usage?from=2020-01-01&to=2020-01-02`, { headers: { authorization: `Bearer ${t.keys.acme}` } });
    expect(res.status).toBe(200);
    const { server, clients, all } = spansOfOneRequest();
    expect(clients).toHaveLength(0);
    expect(server.name).toBe('GET /api/business/v1/customer/usage');
    expect(server.attributes).toMatchObject({ 'tollgate.endpoint': '/api/business/v1/customer/usage', 'tollgate.organization': 'acme', 'tollgate.project': 'web', 'http.response.status_code': 200 });
    expect(all.map((s) => s.name)).toContain('usage report query');
  });

  it('honours the client traceparent and sends upstream the client span context, not the caller one', async () => {
    t.upstream.reset();
    await fetch(`${t.url}/api/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.keys.acme}`, 'content-type': 'application/json', traceparent: `00-${TRACE_ID}-${PARENT_ID}-01`, tracestate: 'vendor=1' },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'trace me' }] }),
    });
    const { server, clients } = spansOfOneRequest();
    expect(server.spanContext().traceId).toBe(TRACE_ID);
    expect(server.parentSpanContext?.spanId).toBe(PARENT_ID);
    const sent = t.upstream.requests.at(-1)!.headers;
    expect(sent.traceparent).toBe(`00-${TRACE_ID}-${clients[0].spanContext().spanId}-01`);
    expect(sent.tracestate).toBe('vendor=1');
  });

  it('failover: one client span per attempt, the failed one marked as an error', async () => {
    await openai.chat.completions.create({ model: 'openai/failover', messages: [{ role: 'user', content: 'fail over' }] });
    const { clients, server } = spansOfOneRequest();
    expect(clients).toHaveLength(2);
    const [failed, ok] = [...clients].sort((a, b) => (a.attributes['tollgate.upstream.attempt'] as number) - (b.attributes['tollgate.upstream.attempt'] as number));
    expect(failed.attributes).toMatchObject({ 'tollgate.provider': 'dead', 'error.type': 'unavailable' });
    expect(failed.status.code).toBe(2);
    expect(ok.attributes).toMatchObject({ 'tollgate.provider': 'fake-openai', 'http.response.status_code': 200 });
    expect(ok.attributes['gen_ai.usage.output_tokens']).toBeGreaterThan(0);
    expect(server.attributes['http.response.status_code']).toBe(200);
  });

  it('an upstream error reply: the client span records the status, the server span its error type', async () => {
    await expect(openai.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: '[fake:error-503] boom' }] })).rejects.toThrow();
    const { clients, server, journal } = spansOfOneRequest();
    expect(journal).toHaveLength(0);
    expect(clients[0].attributes['http.response.status_code']).toBe(503);
    expect(clients[0].status.code).toBe(2);
    expect(server.attributes).toMatchObject({ 'error.type': '503', 'http.response.status_code': 503 });
    expect(server.status.code).toBe(2);
  });
});
