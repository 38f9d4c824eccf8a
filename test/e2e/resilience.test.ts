// Retries, outlier ejection, fallbacks and concurrency limits, driven by the fault-injecting fake upstream.
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SnapshotInput } from '../../gateway/snapshot/schema.ts';
import type { TestGateway } from '../support/gateway.ts';
import { PROVIDER_SECRET, startTestGateway } from '../support/gateway.ts';
import { readJson } from '../support/http.ts';
import { failEveryOther, failNext, rateLimitOnce, streamCut } from '../upstream/faults.ts';

interface Row {
  model_id: string;
  client_model: string;
  provider: string;
  upstream_model: string;
  input: number;
  output: number;
  estimated: boolean;
  attempts: number;
}

// Each scenario has its own target (provider + upstream model), so one scenario's failures never eject another's.
function resilienceWorld(c: SnapshotInput): SnapshotInput {
  const base = c.providers!.find((p) => p.id === 'fake-openai')!.baseUrl;
  const fast = { backoffBaseMs: 1, backoffMaxMs: 5 };
  return {
    ...c,
    providers: [
      ...c.providers!,
      { id: 'flaky', baseUrl: base, apiKey: { value: PROVIDER_SECRET }, timeouts: { connectMs: 2000, firstByteMs: 3000, idleMs: 3000, totalMs: 10000 } },
      { id: 'dead-r', baseUrl: 'http://127.0.0.1:9/v1', apiKey: { value: PROVIDER_SECRET }, timeouts: { connectMs: 500 } },
    ],
    models: [
      ...c.models!,
      { id: 'r/retry', pricingGroup: 'mini', protocols: { openai: [{ provider: 'flaky', model: 'gpt-retry' }] }, routing: { ...fast, ejectAfter: 100 } },
      { id: 'r/leave', pricingGroup: 'mini', protocols: { openai: [{ provider: 'flaky', model: 'gpt-leave' }] }, routing: { ...fast, ejectAfter: 100 } },
      { id: 'r/cap', pricingGroup: 'mini', protocols: { openai: [{ provider: 'flaky', model: 'gpt-cap' }] }, routing: { ...fast, retryAfterCapMs: 500, ejectAfter: 100 } },
      { id: 'r/eject', pricingGroup: 'mini', protocols: { openai: [{ provider: 'flaky', model: 'gpt-eject' }] }, routing: { maxAttempts: 1, ejectAfter: 3, ejectBaseMs: 1500, ejectMaxMs: 60_000 } },
      { id: 'r/ratio', pricingGroup: 'mini', protocols: { openai: [{ provider: 'flaky', model: 'gpt-ratio' }] }, routing: { maxAttempts: 1, ejectAfter: 100, ejectFailurePercent: 50, ejectMinRequests: 10, ejectWindowMs: 60_000, ejectBaseMs: 1500 } },
      { id: 'r/two', pricingGroup: 'mini', protocols: { openai: [{ provider: 'flaky', model: 'gpt-two-a', weight: 1000 }, { provider: 'flaky', model: 'gpt-two-b', weight: 1 }] }, routing: { ...fast, maxAttempts: 2, ejectAfter: 1, ejectBaseMs: 60_000 } },
      { id: 'r/claude-down', pricingGroup: 'mini', protocols: { anthropic: [{ provider: 'dead-r', model: 'claude-x' }] }, routing: { ...fast, maxAttempts: 2, fallbacks: ['r/gpt-fallback'] } },
      { id: 'r/chat-primary', pricingGroup: 'mini', protocols: { openai: [{ provider: 'flaky', model: 'gpt-primary' }] }, routing: { maxAttempts: 1, ejectAfter: 100, fallbacks: ['r/gpt-fallback'] } },
      { id: 'r/gpt-fallback', pricingGroup: 'tiered', protocols: { openai: [{ provider: 'flaky', model: 'gpt-fallback' }] } },
      { id: 'r/stream', pricingGroup: 'mini', protocols: { openai: [{ provider: 'flaky', model: 'gpt-stream' }] }, routing: { ...fast, ejectAfter: 100 } },
      { id: 'r/narrow', pricingGroup: 'mini', protocols: { openai: [{ provider: 'flaky', model: 'gpt-narrow' }] }, routing: { maxConcurrency: 1 } },
      { id: 'r/bad-request', pricingGroup: 'mini', protocols: { openai: [{ provider: 'flaky', model: 'gpt-bad' }] }, routing: fast },
    ],
  };
}

let t: TestGateway;
let admin: string;
beforeAll(async () => {
  t = await startTestGateway({ config: resilienceWorld, gateway: { adminPort: 0, adminHost: '127.0.0.1' } });
  admin = t.gw.adminUrl!;
});
afterAll(async () => t?.close());

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const hello = [{ role: 'user' as const, content: 'hello' }];

function chat(model: string, extra: Record<string, unknown> = {}): Promise<Response> {
  return fetch(`${t.url}/api/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${t.keys.acme}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model, messages: hello, ...extra }),
  });
}

function sentTo(upstreamModel: string): number {
  return t.upstream.requests.filter((r) => (r.json as { model?: string } | undefined)?.model === upstreamModel).length;
}

async function rows(requestId: string | null): Promise<Row[]> {
  await t.gw.ledger.flush();
  const r = await t.gw.store.query<Row>('SELECT model_id, client_model, provider, upstream_model, input::int, output::int, estimated, attempts::int FROM usage_events WHERE request_id = $1', [requestId]);
  return r.rows;
}

async function upstreamState(model: string): Promise<{ state: string; healthy: boolean; retries: number; ejections: number; inFlight: number; attempts: Record<string, number> }> {
  const body = await readJson(await fetch(`${admin}/upstreams`));
  return body.upstreams.find((u: { model: string }) => u.model === model);
}

describe('retries', () => {
  it('a 429 with retry-after is waited out and retried; the client sees one success and one row', async () => {
    rateLimitOnce(t.upstream, 1, '/chat/completions');
    const client = new OpenAI({ baseURL: `${t.url}/api/v1`, apiKey: t.keys.acme, maxRetries: 0 });
    const before = sentTo('gpt-retry');
    const { data, response } = await client.chat.completions.create({ model: 'r/retry', messages: hello }).withResponse();
    expect(data.choices[0].message.content).toBeTruthy();
    expect(sentTo('gpt-retry') - before).toBe(2);
    const r = await rows(response.headers.get('x-tollgate-request-id'));
    expect(r).toHaveLength(1);
    expect(r[0]).toMatchObject({ model_id: 'r/retry', upstream_model: 'gpt-retry', estimated: false, attempts: 2 });
    const s = await upstreamState('gpt-retry');
    expect(s.attempts).toMatchObject({ rate_limited: 1, success: 1 });
    expect(s.retries).toBe(1);
  });

  it('a client that leaves while its retry waits gets no further attempt started (nor billed)', async () => {
    rateLimitOnce(t.upstream, 1, '/chat/completions');
    const before = sentTo('gpt-leave');
    const ac = new AbortController();
    const res = fetch(`${t.url}/api/v1/chat/completions`, {
      method: 'POST',
      signal: ac.signal,
      headers: { authorization: `Bearer ${t.keys.acme}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'r/leave', messages: hello }),
    }).catch(() => undefined);
    // The first attempt got a 429 asking for a second's wait: leave during it.
    await sleep(300);
    ac.abort();
    await res;
    await sleep(1500);
    expect(sentTo('gpt-leave') - before).toBe(1);
  });

  it('a 503 burst shorter than the attempts is absorbed', async () => {
    failNext(t.upstream, 2, 503, { path: '/chat/completions' });
    const before = sentTo('gpt-retry');
    const res = await chat('r/retry');
    expect(res.status).toBe(200);
    expect(sentTo('gpt-retry') - before).toBe(3);
  });

  it('when attempts run out the last upstream answer goes to the client, unbilled', async () => {
    failNext(t.upstream, 3, 502, { path: '/chat/completions' });
    const res = await chat('r/retry');
    expect(res.status).toBe(502);
    expect((await readJson(res)).error.message).toBe('fake upstream failure 502');
    expect(await rows(res.headers.get('x-tollgate-request-id'))).toHaveLength(0);
  });

  it('a retry-after beyond the cap is not waited for: the 429 reaches the client', async () => {
    rateLimitOnce(t.upstream, 30, '/chat/completions');
    const before = sentTo('gpt-cap');
    const res = await chat('r/cap');
    expect(res.status).toBe(429);
    expect(sentTo('gpt-cap') - before).toBe(1);
  });

  it('a 4xx other than 408/429 is never retried', async () => {
    failNext(t.upstream, 1, 400, { path: '/chat/completions', body: { error: { message: 'bad thing', type: 'invalid_request_error', param: null, code: null } } });
    const before = sentTo('gpt-bad');
    const res = await chat('r/bad-request');
    expect(res.status).toBe(400);
    expect(sentTo('gpt-bad') - before).toBe(1);
  });

  it('a retry goes to the next target when there is one', async () => {
    failNext(t.upstream, 1, 503, { path: '/chat/completions' });
    const a = sentTo('gpt-two-a');
    const b = sentTo('gpt-two-b');
    const res = await chat('r/two');
    expect(res.status).toBe(200);
    // The heavy target took the 503 (and, ejectAfter 1, is now ejected); the light one answered.
    expect([sentTo('gpt-two-a') - a, sentTo('gpt-two-b') - b]).toEqual([1, 1]);
    const rid = res.headers.get('x-tollgate-request-id');
    expect((await rows(rid))[0]).toMatchObject({ upstream_model: 'gpt-two-b', attempts: 2 });
    // Weight now goes to the healthy target only.
    for (let i = 0; i < 3; i++) expect((await chat('r/two')).status).toBe(200);
    expect(sentTo('gpt-two-a') - a).toBe(1);
    expect((await upstreamState('gpt-two-a')).state).toBe('ejected');
  });

  it('a stream cut mid-way is not replayed: the client gets what came and an error frame', async () => {
    streamCut(t.upstream, ['data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-stream","choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"},"finish_reason":null}]}\n\n'], '/chat/completions');
    const before = sentTo('gpt-stream');
    const res = await chat('r/stream', { stream: true });
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).toContain('"Hel"');
    expect(text).toMatch(/"error"/);
    expect(sentTo('gpt-stream') - before).toBe(1);
    const r = await rows(res.headers.get('x-tollgate-request-id'));
    expect(r).toHaveLength(1);
    expect(r[0]).toMatchObject({ estimated: true, attempts: 1 });
  });
});

describe('outlier ejection', () => {
  it('a 503 burst ejects the target, a half-open probe fails and ejects it for longer, the next probe recovers it', async () => {
    failNext(t.upstream, 3, 503, { path: '/chat/completions' });
    for (let i = 0; i < 3; i++) expect((await chat('r/eject')).status).toBe(503);
    expect(await upstreamState('gpt-eject')).toMatchObject({ state: 'ejected', healthy: false, ejections: 1 });

    // Ejected: answered at once in the family's shape, without calling the upstream.
    const sent = sentTo('gpt-eject');
    const shed = await chat('r/eject');
    expect(shed.status).toBe(503);
    expect((await readJson(shed)).error).toMatchObject({ type: 'upstream_error', code: 'upstream_unavailable' });
    expect(sentTo('gpt-eject')).toBe(sent);

    // After the cooldown (1.5 s) one probe goes through; it fails, and the cooldown doubles (3 s).
    await sleep(1600);
    failNext(t.upstream, 1, 503, { path: '/chat/completions' });
    expect((await chat('r/eject')).status).toBe(503);
    expect(sentTo('gpt-eject')).toBe(sent + 1);
    expect(await upstreamState('gpt-eject')).toMatchObject({ state: 'ejected', ejections: 2 });
    await sleep(1600);
    expect((await chat('r/eject')).status).toBe(503);
    expect(sentTo('gpt-eject')).toBe(sent + 1);

    // The longer cooldown over, the probe succeeds and the target is healthy again.
    await sleep(1600);
    expect((await chat('r/eject')).status).toBe(200);
    expect(await upstreamState('gpt-eject')).toMatchObject({ state: 'healthy', healthy: true });
    expect((await chat('r/eject')).status).toBe(200);
  });

  it('a failure ratio ejects a target that never fails twice in a row; the probe recovers it with an empty window', async () => {
    // Every other request fails: consecutive ejection (ejectAfter 100) never triggers, the 50 % ratio does at 10.
    failEveryOther(t.upstream, 10, 503, { path: '/chat/completions' });
    const statuses: number[] = [];
    for (let i = 0; i < 9; i++) statuses.push((await chat('r/ratio')).status);
    expect(statuses).toEqual([503, 200, 503, 200, 503, 200, 503, 200, 503]);
    expect(await upstreamState('gpt-ratio')).toMatchObject({ state: 'healthy', consecutiveFailures: 1, window: { requests: 9, failures: 5 } });
    // The tenth attempt succeeds: 5 of 10 failed, but a success never ejects. The next failure makes it 6 of 11.
    expect((await chat('r/ratio')).status).toBe(200);
    expect(await upstreamState('gpt-ratio')).toMatchObject({ state: 'healthy', window: { requests: 10, failures: 5 } });
    failNext(t.upstream, 1, 500, { path: '/chat/completions' });
    expect((await chat('r/ratio')).status).toBe(500);
    expect(await upstreamState('gpt-ratio')).toMatchObject({ state: 'ejected', ejections: 1, ejectionsBy: { ratio: 1, consecutive: 0 }, lastEjectCause: 'ratio', consecutiveFailures: 1 });

    const sent = sentTo('gpt-ratio');
    const shed = await chat('r/ratio');
    expect(shed.status).toBe(503);
    expect((await readJson(shed)).error).toMatchObject({ code: 'upstream_unavailable' });
    expect(sentTo('gpt-ratio')).toBe(sent);

    await sleep(1600);
    expect((await chat('r/ratio')).status).toBe(200);
    expect(sentTo('gpt-ratio')).toBe(sent + 1);
    expect(await upstreamState('gpt-ratio')).toMatchObject({ state: 'healthy', window: { requests: 0, failures: 0 } });
    // The failures from before the ejection are gone: one more failure does not eject it again.
    failNext(t.upstream, 1, 503, { path: '/chat/completions' });
    expect((await chat('r/ratio')).status).toBe(503);
    expect(await upstreamState('gpt-ratio')).toMatchObject({ state: 'healthy', window: { requests: 1, failures: 1 } });
  });

  it('exposes per-upstream metrics', async () => {
    const text = await (await fetch(`${admin}/metrics`)).text();
    expect(text).toMatch(/tollgate_upstream_healthy\{[^}]*tollgate_upstream_model="gpt-eject"[^}]*\} 1/);
    const ejections = (model: string, cause: string) => text.split('\n').find((l) => l.startsWith('tollgate_upstream_ejections_total{') && l.includes(`tollgate_upstream_model="${model}"`) && l.includes(`tollgate_upstream_ejection_cause="${cause}"`))?.split(' ').pop();
    expect(ejections('gpt-eject', 'consecutive')).toBe('2');
    expect(ejections('gpt-ratio', 'ratio')).toBe('1');
    expect(text).toMatch(/tollgate_upstream_attempts_total\{[^}]*tollgate_upstream_model="gpt-retry"[^}]*tollgate_upstream_outcome="rate_limited"[^}]*\} 1/);
    expect(text).not.toContain(PROVIDER_SECRET);
  });
});

describe('fallbacks', () => {
  it('a messages call whose anthropic model is down falls back to an openai-only model through the converter', async () => {
    const client = new Anthropic({ baseURL: `${t.url}/api`, apiKey: t.keys.acme, maxRetries: 0 });
    const before = sentTo('gpt-fallback');
    const { data, response } = await client.messages.create({ model: 'r/claude-down', max_tokens: 50, messages: [{ role: 'user', content: 'hello' }] }).withResponse();
    expect(data.type).toBe('message');
    expect(data.content[0]).toMatchObject({ type: 'text' });
    expect(sentTo('gpt-fallback') - before).toBe(1);
    const r = await rows(response.headers.get('x-tollgate-request-id'));
    expect(r).toHaveLength(1);
    // The client's model is what it asked for; the row says which model and upstream answered.
    expect(r[0]).toMatchObject({ client_model: 'r/claude-down', model_id: 'r/gpt-fallback', provider: 'flaky', upstream_model: 'gpt-fallback', estimated: false, attempts: 3 });
  });

  it('a chat call whose model answers 503 falls back to the next model; the row counts both attempts', async () => {
    failNext(t.upstream, 1, 503, { path: '/chat/completions' });
    const before = [sentTo('gpt-primary'), sentTo('gpt-fallback')];
    const res = await chat('r/chat-primary');
    expect(res.status).toBe(200);
    expect([sentTo('gpt-primary') - before[0], sentTo('gpt-fallback') - before[1]]).toEqual([1, 1]);
    const [row] = await rows(res.headers.get('x-tollgate-request-id'));
    expect(row).toMatchObject({ client_model: 'r/chat-primary', model_id: 'r/gpt-fallback', upstream_model: 'gpt-fallback', attempts: 2 });
    // Every slot was given back.
    expect((await upstreamState('gpt-primary')).inFlight).toBe(0);
    expect((await upstreamState('gpt-fallback')).inFlight).toBe(0);
  });

  it('the same over a stream', async () => {
    const client = new Anthropic({ baseURL: `${t.url}/api`, apiKey: t.keys.acme, maxRetries: 0 });
    const stream = client.messages.stream({ model: 'r/claude-down', max_tokens: 50, messages: [{ role: 'user', content: 'hello' }] });
    const msg = await stream.finalMessage();
    expect(msg.content[0]).toMatchObject({ type: 'text' });
  });
});

// Billing under retries and fallbacks: which attempt can carry upstream spend, and where its row goes. Retries and
// fallbacks happen only on answers without usage (errors, connect failures, timeouts); the paths below are the ones
// where the provider did work on an attempt that is not retried, each with the row it leaves.
describe('billing: no upstream spend without a row', () => {
  interface FullRow extends Row {
    cost_points: string;
    detail: { failedAttempt?: string; unbilledCostPoints?: string } | null;
  }
  async function fullRows(requestId: string | null): Promise<FullRow[]> {
    await t.gw.ledger.flush();
    const r = await t.gw.store.query<FullRow>('SELECT model_id, client_model, provider, upstream_model, input::int, output::int, estimated, attempts::int, cost_points::text, detail FROM usage_events WHERE request_id = $1', [requestId]);
    return r.rows;
  }
  const fallbackUntouched = () => {
    const before = sentTo('gpt-fallback');
    return () => expect(sentTo('gpt-fallback') - before).toBe(0);
  };

  it('a stream cut after tokens on a model with fallbacks is not replayed on the fallback: one row, the cut attempt, estimated', async () => {
    streamCut(t.upstream, ['data: {"id":"c2","object":"chat.completion.chunk","created":1,"model":"gpt-primary","choices":[{"index":0,"delta":{"role":"assistant","content":"Part"},"finish_reason":null}]}\n\n'], '/chat/completions');
    const untouched = fallbackUntouched();
    const res = await chat('r/chat-primary', { stream: true });
    expect(await res.text()).toContain('"Part"');
    untouched();
    const r = await fullRows(res.headers.get('x-tollgate-request-id'));
    expect(r).toHaveLength(1);
    expect(r[0]).toMatchObject({ model_id: 'r/chat-primary', upstream_model: 'gpt-primary', estimated: true, attempts: 1 });
    expect(r[0].detail?.failedAttempt).toBeUndefined();
  });

  it('a 200 whose body breaks off after the headers is a 502, not a fallback (the provider may have billed it once already)', async () => {
    t.upstream.nextResponse({ path: '/chat/completions', status: 200, headers: { 'content-type': 'application/json' }, chunks: ['{"id":"x","object":"chat.completion","choices":['], abort: true });
    const untouched = fallbackUntouched();
    const res = await chat('r/chat-primary');
    expect(res.status).toBe(502);
    untouched();
    // Nothing the provider reported arrived, so there is no usage to record (docs/routing.md says so).
    expect(await fullRows(res.headers.get('x-tollgate-request-id'))).toHaveLength(0);
  });

  it('a 200 whose body is not valid JSON but states usage: 502 to the client, and a row with the reported tokens, cost 0, flagged as a failed attempt', async () => {
    // Converting route (messages over chat): the body is parsed whole, fails, and its usage member is still read.
    const broken = '{"id":"chatcmpl-x","object":"chat.completion","created":1,"model":"gpt-fallback","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]<!-- proxy -->,"usage":{"prompt_tokens":17,"completion_tokens":5,"total_tokens":22}}';
    t.upstream.nextResponse({ path: '/chat/completions', status: 200, headers: { 'content-type': 'application/json' }, body: broken });
    const before = sentTo('gpt-fallback');
    const client = new Anthropic({ baseURL: `${t.url}/api`, apiKey: t.keys.acme, maxRetries: 0 });
    const err = await client.messages.create({ model: 'r/gpt-fallback', max_tokens: 50, messages: [{ role: 'user', content: 'hello' }] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.APIError);
    expect((err as InstanceType<typeof Anthropic.APIError>).status).toBe(502);
    expect(sentTo('gpt-fallback') - before).toBe(1); // not retried either
    const rid = (err as InstanceType<typeof Anthropic.APIError>).headers?.get('x-tollgate-request-id') ?? null;
    const r = await fullRows(rid);
    expect(r).toHaveLength(1);
    expect(r[0]).toMatchObject({ model_id: 'r/gpt-fallback', upstream_model: 'gpt-fallback', input: 17, output: 5, estimated: false, cost_points: '0', attempts: 1 });
    expect(r[0].detail).toMatchObject({ failedAttempt: 'upstream_invalid_response' });
    expect(Number(r[0].detail!.unbilledCostPoints)).toBeGreaterThan(0);
  });

  it('a 200 that is not JSON and states no usage: 502, no row (nothing the provider reported)', async () => {
    t.upstream.nextResponse({ path: '/chat/completions', status: 200, headers: { 'content-type': 'text/html' }, body: '<html>bad gateway</html>' });
    const untouched = fallbackUntouched();
    const res = await chat('r/chat-primary');
    expect(res.status).toBe(502);
    untouched();
    expect(await fullRows(res.headers.get('x-tollgate-request-id'))).toHaveLength(0);
  });
});

describe('concurrency limit', () => {
  it('a target at its limit sheds the next request with 503 in the family shape', async () => {
    const slow = chat('r/narrow', { metadata: { fake: 'slow-first-byte', delay_ms: '1000' } });
    // Wait until the gateway holds it in flight (no fixed sleep: the machine may be slow).
    for (let i = 0; i < 200 && (await upstreamState('gpt-narrow'))?.inFlight !== 1; i++) await sleep(10);
    const shed = await chat('r/narrow');
    expect(shed.status).toBe(503);
    expect((await readJson(shed)).error.message).toMatch(/concurrency limit/);
    expect((await slow).status).toBe(200);
    expect((await chat('r/narrow')).status).toBe(200);
  });
});
