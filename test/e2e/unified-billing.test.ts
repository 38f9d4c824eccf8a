// docs/contract.md: usage, pricing on the unified chat entry: the meter reads the upstream protocol's own usage, so one answer bills the same
// through pass-through or conversion, streamed or not; cache reads and writes count into prompt_tokens as OpenAI counts them.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectedCost, MINI_ACME } from '../support/expected-cost.ts';
import type { TestGateway } from '../support/gateway.ts';
import { startTestGateway } from '../support/gateway.ts';
import { readJson } from '../support/http.ts';

interface Row {
  input: number;
  output: number;
  cache_read: number;
  cache_write: number;
  reasoning: number;
  cost_points: string;
  original_cost: string;
  estimated: boolean;
}

let t: TestGateway;
let v0: OpenAI;
beforeAll(async () => {
  t = await startTestGateway();
  v0 = new OpenAI({ baseURL: `${t.url}/api/v0`, apiKey: t.keys.acme, maxRetries: 0 });
});
afterAll(async () => t?.close());

async function row(id: string): Promise<Row> {
  await t.gw.ledger.flush();
  const r = await t.gw.store.query<Row>(
    'SELECT input::int, output::int, cache_read::int, cache_write::int, reasoning::int, cost_points::text, original_cost::text, estimated FROM usage_events WHERE request_id = $1',
    [id],
  );
  expect(r.rows).toHaveLength(1);
  return r.rows[0];
}

async function streamedRow(prefix: string, body: Record<string, unknown>): Promise<{ row: Row; text: string }> {
  const res = await fetch(`${t.url}${prefix}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${t.keys.acme}`, 'content-type': 'application/json' },
    body: JSON.stringify({ ...body, stream: true }),
  });
  const text = await res.text();
  return { row: await row(res.headers.get('x-tollgate-request-id')!), text };
}

describe('an anthropic upstream', () => {
  // A prompt long enough to cache, marked as a breakpoint the way OpenRouter and LiteLLM clients do on chat parts.
  const system = { role: 'system', content: [{ type: 'text', text: 'You are a meticulous assistant. '.repeat(20), cache_control: { type: 'ephemeral' } }] };
  const messages = [system, { role: 'user', content: 'Summarise the rules.' }] as OpenAI.ChatCompletionMessageParam[];

  it('shows a cache write and then a cache read inside prompt_tokens, and bills each dimension at its price', async () => {
    const first = await v0.chat.completions.create({ model: 'anthropic/claude', messages }).withResponse();
    const u1 = first.data.usage! as OpenAI.CompletionUsage & { prompt_tokens_details: { cached_tokens: number; cache_write_tokens?: number } };
    const r1 = await row(first.response.headers.get('x-tollgate-request-id')!);
    expect(r1.cache_write).toBeGreaterThan(0);
    expect(u1.prompt_tokens_details.cache_write_tokens).toBe(r1.cache_write);
    expect(u1.prompt_tokens).toBe(r1.input + r1.cache_write);

    const second = await v0.chat.completions.create({ model: 'anthropic/claude', messages }).withResponse();
    const u2 = second.data.usage!;
    const r2 = await row(second.response.headers.get('x-tollgate-request-id')!);
    expect(r2.cache_read).toBe(r1.cache_write);
    expect(u2.prompt_tokens_details!.cached_tokens).toBe(r2.cache_read);
    // The same prompt, counted the same way whether it was written to or read from the cache.
    expect(u2.prompt_tokens).toBe(u1.prompt_tokens);
    expect(r2.cost_points).toBe(expectedCost({ input: r2.input, output: r2.output, cacheRead: r2.cache_read }, MINI_ACME).cost);
  });

  it('bills the same answer alike through the messages pass-through, the conversion, streamed and not', async () => {
    // The cache is warm from the test above: every call below reads it.
    const converted = await v0.chat.completions.create({ model: 'anthropic/claude', messages }).withResponse();
    const viaChat = await row(converted.response.headers.get('x-tollgate-request-id')!);
    const upstreamBody = { ...(t.upstream.requests.at(-1)!.json as Record<string, unknown>), model: 'anthropic/claude' };
    const native = await fetch(`${t.url}/api/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': t.keys.acme, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      body: JSON.stringify(upstreamBody),
    });
    expect(native.status).toBe(200);
    const nativeBody = await readJson(native);
    const viaMessages = await row(native.headers.get('x-tollgate-request-id')!);
    expect(viaMessages).toEqual(viaChat);
    expect(viaChat.cache_read).toBeGreaterThan(0);
    // What the chat client was shown adds up to what the Anthropic client was shown.
    const u = converted.data.usage!;
    const n = nativeBody.usage;
    expect(u.prompt_tokens).toBe(n.input_tokens + n.cache_read_input_tokens + n.cache_creation_input_tokens);
    expect(u.completion_tokens).toBe(n.output_tokens);

    const chatStream = await streamedRow('/api/v0/chat/completions', { model: 'anthropic/claude', messages });
    const messagesStream = await streamedRow('/api/v1/messages', upstreamBody);
    expect(chatStream.text.endsWith('data: [DONE]\n\n')).toBe(true);
    expect(messagesStream.text).toContain('event: message_stop');
    expect(chatStream.row).toEqual(viaChat);
    expect(messagesStream.row).toEqual(viaChat);
  });
});

describe('a gemini upstream', () => {
  it('is billed by the text rule from usageMetadata, streamed or not (docs/contract.md, pricing)', async () => {
    const body = { model: 'gemini-2.5-flash', reasoning_effort: 'low', messages: [{ role: 'user', content: 'Why is the sky blue?' }] };
    const plain = await v0.chat.completions.create(body as OpenAI.ChatCompletionCreateParamsNonStreaming).withResponse();
    const r = await row(plain.response.headers.get('x-tollgate-request-id')!);
    // The upstream's own answer, asked again directly: the ledger follows its usageMetadata, not our chat rendering of it.
    const sent = t.upstream.requests.at(-1)!;
    const direct = await fetch(`${t.upstream.url}${sent.path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: sent.body });
    const meta = (await readJson(direct)).usageMetadata;
    const expected = { input: meta.promptTokenCount - (meta.cachedContentTokenCount ?? 0), cacheRead: meta.cachedContentTokenCount ?? 0, output: meta.candidatesTokenCount + (meta.thoughtsTokenCount ?? 0) };
    expect(meta.thoughtsTokenCount).toBeGreaterThan(0);
    expect(r).toMatchObject({ input: expected.input, cache_read: expected.cacheRead, output: expected.output, reasoning: meta.thoughtsTokenCount, estimated: false });
    expect(r.cost_points).toBe(expectedCost(expected, MINI_ACME).cost);
    expect(plain.response.headers.get('x-tollgate-cost-points')).toBe(r.cost_points);
    const s = await streamedRow('/api/paas/v4/chat/completions', body);
    expect(s.row).toEqual(r);
  });
});

describe('an openai upstream', () => {
  it('bills /api/v0 exactly as /api/v1 (both pass through)', async () => {
    const body = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Same question twice, please.' }] };
    const a = await v0.chat.completions.create(body as OpenAI.ChatCompletionCreateParamsNonStreaming).withResponse();
    const v1 = new OpenAI({ baseURL: `${t.url}/api/v1`, apiKey: t.keys.acme, maxRetries: 0 });
    const b = await v1.chat.completions.create(body as OpenAI.ChatCompletionCreateParamsNonStreaming).withResponse();
    expect(await row(a.response.headers.get('x-tollgate-request-id')!)).toEqual(await row(b.response.headers.get('x-tollgate-request-id')!));
    const s = await streamedRow('/api/v0/chat/completions', body);
    expect(s.row).toEqual(await row(a.response.headers.get('x-tollgate-request-id')!));
  });
});
