// Rate limits and budgets seen through the official SDKs: each family's 429, the rate-limit headers on success,
// the openai SDK's retry after retry-after, no retry on a spent budget, and refused requests never sent upstream.
import { readFileSync } from 'node:fs';
import Anthropic from '@anthropic-ai/sdk';
import { ApiError, GoogleGenAI } from '@google/genai';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateApiKey } from '../../gateway/auth/api-key.ts';
import { compileSnapshot } from '../../gateway/snapshot/runtime.ts';
import type { SnapshotInput } from '../../gateway/snapshot/schema.ts';
import { snapshotSchema } from '../../gateway/snapshot/schema.ts';
import type { TestGateway } from '../support/gateway.ts';
import { startTestGateway } from '../support/gateway.ts';

let t: TestGateway;
const keys = { retry: generateApiKey(), anth: generateApiKey(), gem: generateApiKey(), budget: generateApiKey(), compat: generateApiKey(), stream: generateApiKey() };

beforeAll(async () => {
  t = await startTestGateway();
  const config = JSON.parse(readFileSync(t.configPath, 'utf8')) as SnapshotInput;
  const add = (id: keyof typeof keys, project: string, extra: Record<string, unknown>) => config.apiKeys!.push({ id: `lim-${id}`, hash: keys[id].hash, prefix: keys[id].prefix, organization: 'acme', project, ...extra });
  add('retry', 'retry', { limits: { rpm: 6 } });
  add('anth', 'anth', { limits: { rpm: 1, tpm: 100000 } });
  add('gem', 'gem', { limits: { rpm: 1 } });
  add('budget', 'budget', { budget: { total: '0.000001' } });
  add('compat', 'compat', { limits: { models: [{ model: 'gpt-4o-mini', rpm: 1 }] } });
  add('stream', 'stream', { limits: { rpm: 60, tpm: 100000 } });
  t.gw.holder.set(compileSnapshot(snapshotSchema.parse(config)));
});
afterAll(async () => t?.close());

const chat = { model: 'gpt-4o-mini', messages: [{ role: 'user' as const, content: 'Hi' }] };
const upstreamCalls = () => t.upstream.requests.length;

describe('limits through the official SDKs', () => {
  it('openai: x-ratelimit-* on success; a 429 rate_limit_error with retry-after that the SDK waits out and retries', async () => {
    const client = new OpenAI({ baseURL: `${t.url}/api/v1`, apiKey: keys.retry.key, maxRetries: 0 });
    const first = await client.chat.completions.create(chat).withResponse();
    expect(first.response.headers.get('x-ratelimit-limit-requests')).toBe('6');
    expect(first.response.headers.get('x-ratelimit-remaining-requests')).toBe('5');
    expect(first.response.headers.get('x-ratelimit-reset-requests')).toBe('10s');
    // Six per minute: a burst of 11 more at once finds 5 left (one every 10 s refills, far slower than the burst).
    const before = upstreamCalls();
    const burst = await Promise.all(Array.from({ length: 11 }, () => client.chat.completions.create(chat).then(() => 'ok', (e: unknown) => e)));
    expect(burst.filter((r) => r === 'ok')).toHaveLength(5);
    expect(upstreamCalls() - before).toBe(5);
    const err = burst.find((r) => r !== 'ok');
    expect(err).toBeInstanceOf(OpenAI.RateLimitError);
    const rle = err as InstanceType<typeof OpenAI.RateLimitError>;
    expect(rle.status).toBe(429);
    expect(rle.type).toBe('rate_limit_error');
    expect(rle.code).toBe('rate_limited');
    expect(Number(rle.headers?.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(Number(rle.headers?.get('retry-after'))).toBeLessThanOrEqual(10);
    // The 429 names the limit too, with nothing left.
    expect(rle.headers?.get('x-ratelimit-limit-requests')).toBe('6');
    expect(rle.headers?.get('x-ratelimit-remaining-requests')).toBe('0');
    // The SDK's own retry: it reads retry-after(-ms), waits, and the second attempt is admitted.
    const attempts: { status: number; retryAfter: string | null }[] = [];
    const retrying = new OpenAI({
      baseURL: `${t.url}/api/v1`,
      apiKey: keys.retry.key,
      maxRetries: 3,
      fetch: async (url, init) => {
        const r = await fetch(url, init);
        attempts.push({ status: r.status, retryAfter: r.headers.get('retry-after') });
        return r;
      },
    });
    const ok = await retrying.chat.completions.create(chat);
    expect(ok.choices[0].message.content).toBeTruthy();
    expect(attempts[0].status).toBe(429);
    expect(attempts[0].retryAfter).not.toBeNull();
    expect(attempts.at(-1)!.status).toBe(200);
    expect(attempts.length).toBeLessThanOrEqual(3);
  });

  it('anthropic: anthropic-ratelimit-* on success; RateLimitError (rate_limit_error) when refused', async () => {
    const client = new Anthropic({ baseURL: `${t.url}/api`, apiKey: keys.anth.key, maxRetries: 0 });
    const params = { model: 'anthropic/claude', max_tokens: 16, messages: [{ role: 'user' as const, content: 'Hi' }] };
    const first = await client.messages.create(params).withResponse();
    expect(first.response.headers.get('anthropic-ratelimit-requests-limit')).toBe('1');
    expect(first.response.headers.get('anthropic-ratelimit-requests-remaining')).toBe('0');
    expect(first.response.headers.get('anthropic-ratelimit-requests-reset')).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(first.response.headers.get('anthropic-ratelimit-tokens-limit')).toBe('100000');
    expect(first.response.headers.get('x-ratelimit-limit-requests')).toBeNull();
    const err = await client.messages.create(params).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.RateLimitError);
    const e = err as InstanceType<typeof Anthropic.RateLimitError>;
    expect((e.error as { error: { type: string } }).error.type).toBe('rate_limit_error');
    expect(e.headers?.get('retry-after')).toBe('60');
    expect(e.headers?.get('anthropic-ratelimit-requests-limit')).toBe('1');
    expect(e.headers?.get('anthropic-ratelimit-requests-remaining')).toBe('0');
    expect(e.headers?.get('anthropic-ratelimit-tokens-limit')).toBe('100000');
  });

  it('gemini: RESOURCE_EXHAUSTED through @google/genai', async () => {
    const ai = new GoogleGenAI({ apiKey: keys.gem.key, httpOptions: { baseUrl: `${t.url}/api/v1/gemini`, apiVersion: 'v1beta' } });
    const contents = [{ role: 'user', parts: [{ text: 'Hi' }] }];
    await ai.models.generateContent({ model: 'gemini-2.5-flash-image', contents });
    const err = await ai.models.generateContent({ model: 'gemini-2.5-flash-image', contents }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).status).toBe(429);
    expect(JSON.parse((err as ApiError).message)).toMatchObject({ error: { code: 429, status: 'RESOURCE_EXHAUSTED' } });
  });

  it('compat (v3): per-model limit in the compat shape; another model is not limited', async () => {
    const send = (model: string) => fetch(`${t.url}/api/v3/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${keys.compat.key}`, 'content-type': 'application/json' }, body: JSON.stringify({ ...chat, model }) });
    expect((await send('gpt-4o-mini')).status).toBe(200);
    const refused = await send('gpt-4o-mini');
    expect(refused.status).toBe(429);
    expect(await refused.json()).toMatchObject({ error: { code: 'rate_limited', type: 'TooManyRequests' } });
    expect((await send('openai/tiered')).status).toBe(200);
  });

  it('a spent budget: insufficient_quota, not retried by the SDK, never sent upstream; usage report and limits still answer', async () => {
    let attempts = 0;
    const client = new OpenAI({
      baseURL: `${t.url}/api/v1`,
      apiKey: keys.budget.key,
      maxRetries: 2,
      fetch: (url, init) => {
        attempts++;
        return fetch(url, init);
      },
    });
    await client.chat.completions.create(chat); // admitted under budget, charged beyond it
    const before = upstreamCalls();
    attempts = 0;
    const err = await client.chat.completions.create(chat).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.RateLimitError);
    expect((err as InstanceType<typeof OpenAI.RateLimitError>).code).toBe('insufficient_quota');
    expect((err as InstanceType<typeof OpenAI.RateLimitError>).type).toBe('insufficient_quota');
    expect(attempts).toBe(1);
    expect(upstreamCalls()).toBe(before);
    const auth = { authorization: `Bearer ${keys.budget.key}` };
    const usage = await fetch(`${t.url}/api/business/v1/customer/usage?from=${new Date(Date.now() - 86_400_000).toISOString()}&to=${new Date(Date.now() + 86_400_000).toISOString()}`, { headers: auth });
    expect(usage.status).toBe(200);
    const limits = await fetch(`${t.url}/api/business/v1/customer/limits`, { headers: auth });
    expect(limits.status).toBe(200);
    const view = (await limits.json()) as { key: string; backend: string; budgets: { scope: string; period: string; points: string; spent: string; remaining: string }[] };
    expect(view).toMatchObject({ key: 'lim-budget', backend: 'memory' });
    expect(view.budgets).toHaveLength(1);
    expect(view.budgets[0]).toMatchObject({ scope: 'key', period: 'total', points: '0.000001', remaining: '0' });
    // The ledger's exact charge, not an estimate.
    await t.gw.ledger.flush();
    const rows = await t.gw.store.query<{ cost_points: string }>("SELECT cost_points::text AS cost_points FROM usage_events WHERE api_key_id = 'lim-budget'");
    expect(rows.rows).toHaveLength(1);
    expect(Number(view.budgets[0].spent)).toBe(Number(rows.rows[0].cost_points));
    expect(view.budgets[0].spent).toBe(rows.rows[0].cost_points.includes('.') ? rows.rows[0].cost_points.replace(/0+$/, '').replace(/\.$/, '') : rows.rows[0].cost_points);
  });

  it('a streamed answer carries the rate-limit headers too (sent with the headers of the stream)', async () => {
    const client = new OpenAI({ baseURL: `${t.url}/api/v1`, apiKey: keys.stream.key, maxRetries: 0 });
    const r = await client.chat.completions.create({ ...chat, stream: true }).withResponse();
    for await (const chunk of r.data) void chunk;
    expect(r.response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(r.response.headers.get('x-ratelimit-limit-requests')).toBe('60');
    expect(r.response.headers.get('x-ratelimit-remaining-requests')).toBe('59');
    expect(r.response.headers.get('x-ratelimit-limit-tokens')).toBe('100000');
    expect(r.response.headers.get('x-tollgate-request-id')).toBeTruthy();
  });

  it('a key without limits gets no rate-limit headers', async () => {
    const client = new OpenAI({ baseURL: `${t.url}/api/v1`, apiKey: t.keys.acme, maxRetries: 0 });
    const r = await client.chat.completions.create(chat).withResponse();
    expect(r.response.headers.get('x-ratelimit-limit-requests')).toBeNull();
  });
});
