// /metrics on the admin port after a mixed run (every endpoint family, two organizations, streams, failover and error
// paths): parsed with a Prometheus text parser, the token and cost series equal the ledger's totals.
import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI } from '@google/genai';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestGateway } from '../support/gateway.ts';
import { startTestGateway } from '../support/gateway.ts';
import { labelSets, scrape, sumHistogram, sumValues } from '../support/prometheus.ts';

interface Totals {
  organization: string;
  model_id: string;
  input: string;
  output: string;
  cost: string;
  n: string;
}

const chat = (content: string) => ({ messages: [{ role: 'user' as const, content }] });

describe('/metrics after a mixed run', () => {
  let t: TestGateway;
  const statuses: number[] = [];
  let streams = 0;
  const overheadHeaders: { overhead: number; elapsed: number }[] = [];
  let apiMetricsStatus = 0;

  beforeAll(async () => {
    t = await startTestGateway({ gateway: { adminPort: 0, adminHost: '127.0.0.1', telemetry: { env: {} } } });
    const acme = new OpenAI({ baseURL: `${t.url}/api/v1`, apiKey: t.keys.acme, maxRetries: 0 });
    const globex = new OpenAI({ baseURL: `${t.url}/api/v1`, apiKey: t.keys.globex, maxRetries: 0 });
    const anthropic = new Anthropic({ baseURL: `${t.url}/api/anthropic`, apiKey: t.keys.acme, maxRetries: 0 });
    const v0 = new OpenAI({ baseURL: `${t.url}/api/v0`, apiKey: t.keys.acme, maxRetries: 0 });
    const genai = new GoogleGenAI({ apiKey: t.keys.acme, httpOptions: { baseUrl: `${t.url}/api/v1/gemini`, apiVersion: 'v1beta' } });
    const ok = () => statuses.push(200);

    for (const content of ['one', 'two words', 'three more words']) {
      const started = performance.now();
      const { response } = await acme.chat.completions.create({ model: 'gpt-4o-mini', ...chat(content) }).withResponse();
      overheadHeaders.push({ overhead: Number(response.headers.get('x-tollgate-overhead-ms')), elapsed: performance.now() - started });
      ok();
    }
    await globex.chat.completions.create({ model: 'gpt-4o-mini', ...chat('globex asks') }).then(ok);
    await globex.chat.completions.create({ model: 'openai/failover', ...chat('globex fails over') }).then(ok);
    await acme.chat.completions.create({ model: 'openai/tiered', ...chat('a tiered prompt that is long enough to pass the first tier bound') }).then(ok);
    for await (const _ of await acme.chat.completions.create({ model: 'gpt-4o-mini', stream: true, ...chat('stream me please') })) void _;
    ok();
    streams++;
    await anthropic.messages.create({ model: 'anthropic/claude', max_tokens: 50, ...chat('hello claude') }).then(ok);
    await anthropic.messages.stream({ model: 'anthropic/claude', max_tokens: 50, ...chat('stream claude') }).finalMessage();
    ok();
    streams++;
    await acme.responses.create({ model: 'gpt-5-nano', input: 'responses please' }).then(ok);
    await acme.images.generate({ model: 'gpt-image-1', prompt: 'a red kite' }).then(ok);
    await genai.models.generateContent({ model: 'gemini-2.5-flash-image', contents: 'draw a kite' }).then(ok);
    await v0.chat.completions.create({ model: 'gemini-2.5-flash', ...chat('unified over gemini') }).then(ok);

    // Error paths: none of them is billed.
    const fail = async (p: Promise<unknown>) => {
      const err = (await p.then(() => undefined, (e: unknown) => e)) as { status?: number } | undefined;
      statuses.push(err?.status ?? 0);
    };
    await fail(new OpenAI({ baseURL: `${t.url}/api/v1`, apiKey: 'sk_live_nope', maxRetries: 0 }).chat.completions.create({ model: 'gpt-4o-mini', ...chat('x') }));
    await fail(acme.chat.completions.create({ model: 'no/such-model', ...chat('x') }));
    await fail(acme.chat.completions.create({ model: 'gpt-4o-mini', ...chat('[fake:error-503] upstream down') }));
    await fail(acme.chat.completions.create({ model: 'openai/unreachable', ...chat('nobody home') }));
    // Metrics are not served on the API port.
    apiMetricsStatus = (await fetch(`${t.url}/metrics`)).status;
    statuses.push(apiMetricsStatus);
    await t.gw.ledger.flush();
  });
  afterAll(async () => t?.close());

  async function ledgerTotals(): Promise<Totals[]> {
    const { rows } = await t.gw.store.query<Totals>(
      `SELECT organization, model_id, sum(input + cache_read + cache_write)::text AS input, sum(output)::text AS output,
              sum(cost_points)::text AS cost, count(*)::text AS n
         FROM usage_events GROUP BY organization, model_id ORDER BY 1, 2`,
    );
    return rows;
  }

  it('serves Prometheus text on the admin port only', async () => {
    const { text } = await scrape(t.gw.adminUrl!);
    expect(text).toContain('# TYPE gen_ai_client_token_usage histogram');
    expect(apiMetricsStatus).toBe(404);
    expect((await fetch(`${t.gw.adminUrl}/other`)).status).toBe(404);
  });

  it('token usage equals the ledger, per model and token type', async () => {
    const { metrics } = await scrape(t.gw.adminUrl!);
    const totals = await ledgerTotals();
    expect(totals.length).toBeGreaterThanOrEqual(9);
    const byModel = new Map<string, { input: number; output: number; n: number }>();
    for (const r of totals) {
      const m = byModel.get(r.model_id) ?? { input: 0, output: 0, n: 0 };
      m.input += Number(r.input);
      m.output += Number(r.output);
      m.n += Number(r.n);
      byModel.set(r.model_id, m);
    }
    for (const [model, want] of byModel) {
      expect(sumHistogram(metrics, 'gen_ai_client_token_usage', 'sum', { gen_ai_request_model: model, gen_ai_token_type: 'input' }), `${model} input`).toBe(want.input);
      expect(sumHistogram(metrics, 'gen_ai_client_token_usage', 'sum', { gen_ai_request_model: model, gen_ai_token_type: 'output' }), `${model} output`).toBe(want.output);
      expect(sumHistogram(metrics, 'gen_ai_client_token_usage', 'count', { gen_ai_request_model: model, gen_ai_token_type: 'output' }), `${model} rows`).toBe(want.n);
    }
    // No series for a model the ledger has not billed.
    for (const l of labelSets(metrics, 'gen_ai_client_token_usage')) expect(byModel.has(l.gen_ai_request_model)).toBe(true);
  });

  it('cost points equal the ledger per organization and model (float sum of exact decimals)', async () => {
    const { metrics } = await scrape(t.gw.adminUrl!);
    const totals = await ledgerTotals();
    let total = 0;
    for (const r of totals) {
      const got = sumValues(metrics, 'tollgate_cost_points_total', { tollgate_organization: r.organization, gen_ai_request_model: r.model_id });
      expect(got, `${r.organization} ${r.model_id}`).toBeCloseTo(Number(r.cost), 12);
      total += Number(r.cost);
    }
    expect(total).toBeGreaterThan(0);
    expect(sumValues(metrics, 'tollgate_cost_points_total')).toBeCloseTo(total, 12);
    expect(labelSets(metrics, 'tollgate_cost_points_total').map((l) => l.tollgate_organization)).toContain('globex');
  });

  it('counts requests by endpoint and status, and upstream errors by provider and kind', async () => {
    const { metrics } = await scrape(t.gw.adminUrl!);
    expect(sumValues(metrics, 'tollgate_requests_total')).toBe(statuses.length);
    for (const status of new Set(statuses)) {
      expect(sumValues(metrics, 'tollgate_requests_total', { http_response_status_code: String(status) }), `status ${status}`).toBe(statuses.filter((s) => s === status).length);
    }
    expect(statuses).toEqual(expect.arrayContaining([401, 404, 503, 502]));
    expect(sumValues(metrics, 'tollgate_requests_total', { tollgate_endpoint: '/api/v1/chat/completions', http_response_status_code: '200' })).toBe(7);
    expect(sumValues(metrics, 'tollgate_requests_total', { tollgate_endpoint: '/api/v1/gemini/v1beta/models/{model}:generateContent' })).toBe(1);
    expect(sumValues(metrics, 'tollgate_upstream_errors_total', { tollgate_provider: 'fake-openai', error_type: '503' })).toBe(1);
    expect(sumValues(metrics, 'tollgate_upstream_errors_total', { tollgate_provider: 'dead', error_type: 'unavailable' })).toBe(2);
  });

  it('durations, time to first token, time per output token and overhead', async () => {
    const { metrics } = await scrape(t.gw.adminUrl!);
    // Every request that resolved a model (all but the 401, the unknown model and the unrouted /metrics).
    const resolved = statuses.length - 3;
    expect(sumHistogram(metrics, 'gen_ai_server_request_duration', 'count')).toBe(resolved);
    expect(sumHistogram(metrics, 'gen_ai_server_request_duration', 'count', { http_response_status_code: '502', error_type: 'unavailable' })).toBe(1);
    expect(sumHistogram(metrics, 'tollgate_gateway_overhead', 'count')).toBe(resolved);
    expect(sumHistogram(metrics, 'gen_ai_server_time_to_first_token', 'count')).toBe(streams);
    expect(sumHistogram(metrics, 'gen_ai_server_time_per_output_token', 'count')).toBe(streams);
    const overhead = sumHistogram(metrics, 'tollgate_gateway_overhead', 'sum');
    const duration = sumHistogram(metrics, 'gen_ai_server_request_duration', 'sum');
    expect(overhead).toBeGreaterThan(0);
    expect(overhead).toBeLessThan(duration);
    // The header on JSON answers: the gateway's own time, less than what the client waited.
    for (const h of overheadHeaders) {
      expect(h.overhead).toBeGreaterThan(0);
      expect(h.overhead).toBeLessThan(h.elapsed);
    }
  });

  it('ledger queue, journal, commits and the snapshot', async () => {
    const { metrics } = await scrape(t.gw.adminUrl!);
    const rows = (await ledgerTotals()).reduce((a, r) => a + Number(r.n), 0);
    expect(sumValues(metrics, 'tollgate_ledger_queue_depth')).toBe(0);
    expect(sumValues(metrics, 'tollgate_ledger_journal_size')).toBe(0);
    expect(sumValues(metrics, 'tollgate_ledger_ready')).toBe(1);
    expect(sumHistogram(metrics, 'tollgate_ledger_batch_size', 'sum')).toBe(rows);
    expect(sumHistogram(metrics, 'tollgate_ledger_commit_duration', 'count')).toBeGreaterThan(0);
    const snapshot = t.gw.holder.current!;
    expect(labelSets(metrics, 'tollgate_snapshot_info')).toEqual([{ tollgate_snapshot_version: snapshot.version }]);
    expect(sumValues(metrics, 'tollgate_snapshot_generation')).toBe(snapshot.generation);
    expect(sumValues(metrics, 'tollgate_snapshot_age')).toBeGreaterThanOrEqual(0);
  });

  it('process health: RSS, heap, event-loop delay, open fds and GC time', async () => {
    // Some garbage and a few turns of the loop, so GC and the delay histogram have something to say.
    for (let i = 0; i < 50; i++) {
      void Array.from({ length: 10_000 }, (_, k) => ({ k }));
      await new Promise((r) => setTimeout(r, 2));
    }
    const { metrics } = await scrape(t.gw.adminUrl!);
    const rss = sumValues(metrics, 'process_memory_usage');
    expect(rss).toBeGreaterThan(20 * 2 ** 20);
    expect(rss).toBeLessThan(64 * 2 ** 30);
    expect(sumValues(metrics, 'v8js_memory_heap_used')).toBeGreaterThan(0);
    expect(sumValues(metrics, 'v8js_memory_heap_used')).toBeLessThan(sumValues(metrics, 'v8js_memory_heap_limit'));
    const p50 = sumValues(metrics, 'nodejs_eventloop_delay_p50');
    const p99 = sumValues(metrics, 'nodejs_eventloop_delay_p99');
    expect(p50).toBeGreaterThan(0);
    expect(p99).toBeGreaterThanOrEqual(p50);
    expect(sumValues(metrics, 'process_open_file_descriptor_count')).toBeGreaterThan(3);
    expect(sumValues(metrics, 'v8js_gc_time_total')).toBeGreaterThan(0);
  });
});
