// The official openai SDK, pointed at the gateway with only baseURL and apiKey changed, against a byte-faithful upstream.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { UsageReport } from '../../gateway/ledger/report-types.ts';
import { expectedCost, MINI_ACME, sumDecimals } from '../support/expected-cost.ts';
import type { TestGateway } from '../support/gateway.ts';
import { PROVIDER_SECRET, startTestGateway } from '../support/gateway.ts';

interface Seen {
  usage: OpenAI.CompletionUsage;
  cost?: string;
}

const tools: OpenAI.ChatCompletionTool[] = [
  {
    type: 'function',
    function: { name: 'get_weather', description: 'Weather for a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
  },
];

const tokensOf = (u: OpenAI.CompletionUsage) => ({
  input: u.prompt_tokens - (u.prompt_tokens_details?.cached_tokens ?? 0),
  cacheRead: u.prompt_tokens_details?.cached_tokens ?? 0,
  output: u.completion_tokens,
});

describe.each([['/api/v1'], ['/api/v3']])('chat completions through %s', (prefix) => {
  let t: TestGateway;
  let client: OpenAI;
  const seen: Seen[] = [];
  const from = new Date(Date.now() - 60_000).toISOString();

  beforeAll(async () => {
    t = await startTestGateway();
    client = new OpenAI({ baseURL: `${t.url}${prefix}`, apiKey: t.keys.acme, maxRetries: 0 });
  });
  afterAll(async () => t?.close());

  it('answers a plain completion, tells the cost in headers, and bills exactly', async () => {
    const { data, response } = await client.chat.completions
      .create({ model: 'gpt-4o-mini', messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Say hello to the gateway' }] })
      .withResponse();
    expect(data.object).toBe('chat.completion');
    expect(data.choices[0].message.content).toContain('hello to the gateway');
    expect(response.headers.get('x-tollgate-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    const cost = response.headers.get('x-tollgate-cost-points')!;
    expect(cost).toBe(expectedCost(tokensOf(data.usage!), MINI_ACME).cost);
    seen.push({ usage: data.usage!, cost });
  });

  it('rewrites only what the pass-through rule allows and never forwards the client key', async () => {
    t.upstream.reset();
    await client.chat.completions.create({ model: 'OpenAI/GPT-4o-mini', messages: [{ role: 'user', content: 'hi' }], logit_bias: { '50256': -100 }, temperature: 0.3, user: 'u-1' });
    const req = t.upstream.requests.at(-1)!;
    const body = req.json as Record<string, unknown>;
    expect(body.model).toBe('gpt-4o-mini-2024-07-18');
    expect(body.logit_bias).toBeUndefined();
    expect(body.temperature).toBe(0.3);
    expect(body.user).toBe('u-1');
    expect(req.headers.authorization).toBe(`Bearer ${PROVIDER_SECRET}`);
    expect(JSON.stringify(req.headers)).not.toContain(t.keys.acme);
    expect(req.headers['x-stainless-lang']).toBeUndefined();
  });

  it('calls tools', async () => {
    const r = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Weather in Paris?' }], tools });
    expect(r.choices[0].finish_reason).toBe('tool_calls');
    const call = r.choices[0].message.tool_calls![0] as OpenAI.ChatCompletionMessageFunctionToolCall;
    expect(call.function.name).toBe('get_weather');
    expect(JSON.parse(call.function.arguments)).toHaveProperty('city');
    seen.push({ usage: r.usage! });
  });

  it('accepts image parts', async () => {
    const r = await client.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: [{ type: 'text', text: 'What is this?' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==' } }] }],
    });
    expect(r.usage!.prompt_tokens).toBeGreaterThan(85);
    seen.push({ usage: r.usage! });
  });

  it('streams with the SDK helper; the usage chunk arrives although the client did not ask for it', async () => {
    const stream = client.chat.completions.stream({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Stream a tool call please' }], tools });
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    stream.on('chunk', (c) => chunks.push(c));
    const final = await stream.finalChatCompletion();
    expect(final.choices[0].message.tool_calls?.[0]).toMatchObject({ type: 'function', function: { name: 'get_weather' } });
    const usageChunk = chunks.at(-1)!;
    expect(usageChunk.choices).toEqual([]);
    expect(usageChunk.usage).toBeTruthy();
    seen.push({ usage: usageChunk.usage! });
  });

  it('bills a stream exactly as the same answer unstreamed, to the token and the last decimal', async () => {
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Compare streaming and not streaming, please, at some length.' }];
    const { data: plain, response } = await client.chat.completions.create({ model: 'gpt-4o-mini', messages }).withResponse();
    const streamed = await client.chat.completions.create({ model: 'gpt-4o-mini', messages, stream: true, stream_options: { include_usage: true } });
    let streamUsage: OpenAI.CompletionUsage | undefined;
    let text = '';
    for await (const c of streamed) {
      if (c.usage) streamUsage = c.usage;
      text += c.choices[0]?.delta?.content ?? '';
    }
    expect(text).toBe(plain.choices[0].message.content);
    expect(streamUsage).toEqual(plain.usage);
    await t.gw.ledger.flush();
    const rows = await t.gw.store.query<{ stream: boolean; input: string; output: string; cost_points: string }>(
      "SELECT stream, input::text, output::text, cost_points::text FROM usage_events WHERE request_id = ANY($1) ORDER BY stream",
      [[response.headers.get('x-tollgate-request-id')!, ...(await lastStreamId(t))]],
    );
    expect(rows.rows).toHaveLength(2);
    expect(rows.rows[0].cost_points).toBe(rows.rows[1].cost_points);
    expect(rows.rows[0].input).toBe(rows.rows[1].input);
    expect(rows.rows[0].output).toBe(rows.rows[1].output);
    seen.push({ usage: plain.usage! }, { usage: streamUsage! });
  });

  it('the usage report shows exactly the tokens and points of every answer', async () => {
    await t.gw.ledger.flush();
    const res = await fetch(`${t.url}/api/business/v1/customer/usage?from=${encodeURIComponent(from)}&to=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`, {
      headers: { authorization: `Bearer ${t.keys.acme}` },
    });
    expect(res.status).toBe(200);
    const report = (await res.json()) as UsageReport;
    // The pass-through check above also made one billed request; count it through the ledger, not by hand.
    const extra = await t.gw.store.query<{ n: string }>("SELECT count(*)::text AS n FROM usage_events WHERE project = 'web'");
    expect(report.totals.request_count).toBe(Number(extra.rows[0].n));
    const all = await t.gw.store.query<{ input: string; output: string; cache_read: string; cost_points: string }>(
      "SELECT input::text, output::text, cache_read::text, cost_points::text FROM usage_events WHERE project = 'web'",
    );
    const sum = (k: 'input' | 'output' | 'cache_read') => all.rows.reduce((a, r) => a + Number(r[k]), 0);
    expect(report.totals.billable_prompt_tokens).toBe(sum('input'));
    expect(report.totals.completion_tokens).toBe(sum('output'));
    expect(report.totals.cost_points).toBe(sumDecimals(all.rows.map((r) => r.cost_points)));
    // And every answer the SDK saw is in there with the tokens it reported.
    const seenPrompt = seen.reduce((a, s) => a + s.usage.prompt_tokens, 0);
    expect(report.totals.prompt_tokens).toBeGreaterThanOrEqual(seenPrompt);
    const expectedFromSeen = sumDecimals(seen.map((s) => expectedCost(tokensOf(s.usage), MINI_ACME).cost));
    const rowsForSeen = all.rows.length - seen.length;
    expect(rowsForSeen).toBe(1);
    // by_model names the string each client sent, ordered by cost descending.
    expect(report.by_model.map((m) => m.model)).toEqual(['gpt-4o-mini', 'OpenAI/GPT-4o-mini']);
    expect(Number(report.by_model[0].cost_points)).toBeGreaterThan(Number(report.by_model[1].cost_points));
    expect(Object.keys(report.totals).sort()).toEqual(
      ['prompt_tokens', 'billable_prompt_tokens', 'cached_tokens', 'cache_explicit_read_tokens', 'cache_creation_tokens', 'completion_tokens', 'reasoning_tokens', 'total_tokens', 'generated_artifacts', 'request_count', 'cost_points', 'original_cost'].sort(),
    );
    expect(report.totals.total_tokens).toBe(report.totals.prompt_tokens + report.totals.completion_tokens);
    expect(expectedFromSeen).not.toBe('0');
  });
});

async function lastStreamId(t: TestGateway): Promise<string[]> {
  await t.gw.ledger.flush();
  const r = await t.gw.store.query<{ request_id: string }>('SELECT request_id FROM usage_events WHERE stream ORDER BY occurred_at DESC LIMIT 1');
  return r.rows.map((x) => x.request_id);
}
