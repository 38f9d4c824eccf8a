// Every error the gateway raises on the chat path, in each family's shape (docs/contract.md, errors), none a 500, none leaking a secret.
import { readFileSync } from 'node:fs';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readJson } from '../support/http.ts';
import { expectMatchesOpenApi } from '../support/openapi.ts';
import type { TestGateway } from '../support/gateway.ts';
import { PROVIDER_SECRET, startTestGateway } from '../support/gateway.ts';

let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway({ maxBodyBytes: 64 * 1024 });
});
afterAll(async () => t?.close());

interface Call {
  key?: string;
  body?: unknown;
  raw?: string;
}

async function post(prefix: string, c: Call): Promise<{ status: number; body: Record<string, unknown>; text: string; headers: Headers }> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (c.key) headers.authorization = `Bearer ${c.key}`;
  const res = await fetch(`${t.url}${prefix}/chat/completions`, { method: 'POST', headers, body: c.raw ?? JSON.stringify(c.body) });
  const text = await res.text();
  return { status: res.status, body: JSON.parse(text), text, headers: res.headers };
}

const msg = [{ role: 'user', content: 'hello' }];
const COMPAT_TYPES: Record<number, string> = { 400: 'BadRequest', 401: 'Unauthorized', 403: 'Forbidden', 404: 'NotFound', 413: 'BadRequest', 502: 'BadGateway', 504: 'GatewayTimeout' };

const cases: [string, () => Call, number, string, string][] = [
  ['no key', () => ({ body: { model: 'gpt-4o-mini', messages: msg } }), 401, 'invalid_request_error', 'invalid_api_key'],
  ['a wrong key', () => ({ key: 'sk_live_' + 'x'.repeat(43), body: { model: 'gpt-4o-mini', messages: msg } }), 401, 'invalid_request_error', 'invalid_api_key'],
  ['garbage key', () => ({ key: 'not-a-key', body: { model: 'gpt-4o-mini', messages: msg } }), 401, 'invalid_request_error', 'invalid_api_key'],
  ['a revoked key', () => ({ key: t.keys.revoked, body: { model: 'gpt-4o-mini', messages: msg } }), 401, 'invalid_request_error', 'invalid_api_key'],
  ['an expired key', () => ({ key: t.keys.expired, body: { model: 'gpt-4o-mini', messages: msg } }), 401, 'invalid_request_error', 'invalid_api_key'],
  ['an unknown model', () => ({ key: t.keys.acme, body: { model: 'nope/nothing', messages: msg } }), 404, 'invalid_request_error', 'model_not_found'],
  ['a private model the org may not use', () => ({ key: t.keys.globex, body: { model: 'secret/internal', messages: msg } }), 404, 'invalid_request_error', 'model_not_found'],
  ['a public model the org may not use', () => ({ key: t.keys.globex, body: { model: 'anthropic/claude', messages: msg } }), 403, 'permission_error', 'model_not_permitted'],
  ['a model without the openai protocol', () => ({ key: t.keys.acme, body: { model: 'anthropic/claude', messages: msg } }), 400, 'invalid_request_error', 'unsupported_protocol'],
  ['malformed JSON', () => ({ key: t.keys.acme, raw: '{"model": "gpt-4o-mini", "messages": [' }), 400, 'invalid_request_error', 'invalid_request'],
  ['a JSON array body', () => ({ key: t.keys.acme, raw: '[1,2]' }), 400, 'invalid_request_error', 'invalid_request'],
  ['a missing model', () => ({ key: t.keys.acme, body: { messages: msg } }), 400, 'invalid_request_error', 'invalid_request'],
  ['a non-string model', () => ({ key: t.keys.acme, body: { model: 42, messages: msg } }), 400, 'invalid_request_error', 'invalid_request'],
  ['missing messages', () => ({ key: t.keys.acme, body: { model: 'gpt-4o-mini' } }), 400, 'invalid_request_error', 'invalid_request'],
  ['a duplicate model key', () => ({ key: t.keys.acme, raw: '{"model":"gpt-4o-mini","messages":[{"role":"user","content":"x"}],"model":"openai/tiered"}' }), 400, 'invalid_request_error', 'invalid_request'],
  ['a body over the limit', () => ({ key: t.keys.acme, body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x'.repeat(70 * 1024) }] } }), 413, 'invalid_request_error', 'REQUEST_TOO_LARGE'],
  ['an unreachable upstream', () => ({ key: t.keys.acme, body: { model: 'openai/unreachable', messages: msg } }), 502, 'upstream_error', 'upstream_unavailable'],
  ['an upstream that never answers in time', () => ({ key: t.keys.acme, body: { model: 'openai/slow', messages: msg, metadata: { fake: 'slow-first-byte', delay_ms: '1500' } } }), 504, 'upstream_error', 'upstream_timeout'],
];

describe.each([
  ['/api/v1', 'chat'],
  ['/api/v3', 'compat'],
])('%s errors', (prefix, family) => {
  it.each(cases)('%s', async (_name, call, status, type, code) => {
    const r = await post(prefix, call());
    expect(r.status).toBe(status);
    const err = r.body.error as Record<string, unknown>;
    expect(err.code).toBe(code);
    expect(typeof err.message).toBe('string');
    if (family === 'chat') {
      expect(err.type).toBe(type);
      expect(Object.keys(err).sort()).toEqual(['code', 'message', 'param', 'type']);
    } else {
      // The compat (Ark) shape: same keys, HTTP-style type names, param as a string.
      expect(Object.keys(err).sort()).toEqual(['code', 'message', 'param', 'type']);
      expect(err.type).toBe(COMPAT_TYPES[status]);
      expect(typeof err.param).toBe('string');
    }
    expect(r.headers.get('content-type')).toContain('application/json');
    expectMatchesOpenApi('POST', `${prefix}/chat/completions`, r.status, r.body, r.headers.get('content-type') ?? undefined);
    expect(r.text).not.toContain(PROVIDER_SECRET);
    expect(r.text).not.toContain(t.keys.acme);
    expect(r.text).not.toContain('127.0.0.1');
    expect(r.text).not.toMatch(/at .*\.ts:\d+/);
  });
});

describe('upstream answers', () => {
  it('an upstream error passes through with its status and body, unbilled', async () => {
    const before = await t.gw.store.query<{ n: string }>('SELECT count(*)::text AS n FROM usage_events');
    const r = await post('/api/v1', { key: t.keys.acme, body: { model: 'gpt-4o-mini', messages: msg, metadata: { fake: 'error-429' } } });
    expect(r.status).toBe(429);
    expect((r.body.error as Record<string, unknown>).type).toBeDefined();
    await t.gw.ledger.flush();
    const after = await t.gw.store.query<{ n: string }>('SELECT count(*)::text AS n FROM usage_events');
    expect(after.rows[0].n).toBe(before.rows[0].n);
  });

  it('fails over to the next upstream when the first cannot be reached', async () => {
    const r = await post('/api/v1', { key: t.keys.acme, body: { model: 'openai/failover', messages: msg } });
    expect(r.status).toBe(200);
    expect(r.headers.get('x-tollgate-cost-points')).toMatch(/^\d+(\.\d+)?$/);
  });

  it('the SDK raises its typed errors with our message and status', async () => {
    const client = new OpenAI({ baseURL: `${t.url}/api/v1`, apiKey: t.keys.globex, maxRetries: 0 });
    await expect(client.chat.completions.create({ model: 'anthropic/claude', messages: [{ role: 'user', content: 'x' }] })).rejects.toBeInstanceOf(OpenAI.PermissionDeniedError);
    await expect(client.chat.completions.create({ model: 'nope', messages: [{ role: 'user', content: 'x' }] })).rejects.toMatchObject({ status: 404, code: 'model_not_found' });
    const anon = new OpenAI({ baseURL: `${t.url}/api/v1`, apiKey: 'sk-wrong', maxRetries: 0 });
    await expect(anon.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] })).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
  });

  it('a stream whose upstream stops talking ends with an error event the SDK raises, and is billed', async () => {
    const client = new OpenAI({ baseURL: `${t.url}/api/v1`, apiKey: t.keys.acme, maxRetries: 0 });
    const stream = await client.chat.completions.create({ model: 'openai/slow', messages: [{ role: 'user', content: 'stall please' }], stream: true, metadata: { fake: 'stall' } });
    await expect(async () => {
      for await (const _ of stream) void _;
    }).rejects.toThrow(/timed out/);
  });

  it('the server keeps serving after all of the above', async () => {
    const r = await post('/api/v1', { key: t.keys.acme, body: { model: 'gpt-4o-mini', messages: msg } });
    expect(r.status).toBe(200);
  });
});

describe('models', () => {
  const ids = async (key?: string) => {
    const res = await fetch(`${t.url}/api/v1/models`, { headers: key ? { authorization: `Bearer ${key}` } : {} });
    return { status: res.status, body: await readJson(res) };
  };

  it('lists public models without a key', async () => {
    const r = await ids();
    expect(r.status).toBe(200);
    expect(r.body.object).toBe('list');
    // Exactly the public models of the test world, whatever other suites add to it.
    const config = JSON.parse(readFileSync(t.configPath, 'utf8')) as { models: { id: string; public?: boolean }[] };
    const publicIds = config.models.filter((m) => m.public).map((m) => m.id).sort();
    expect(publicIds).toContain('openai/gpt-4o-mini');
    expect(publicIds).not.toContain('secret/internal');
    expect(r.body.data.map((m: { id: string }) => m.id).sort()).toEqual(publicIds);
    expect(r.body.data[0]).toEqual({ id: 'openai/gpt-4o-mini', object: 'model', created: 1721172741, owned_by: 'system' });
  });

  it('lists what the key organization may use, public or not', async () => {
    const globex = (await ids(t.keys.globex)).body.data.map((m: { id: string }) => m.id);
    expect(globex.every((id: string) => id.startsWith('openai/'))).toBe(true);
    expect(globex).toContain('openai/tiered');
    expect(globex).not.toContain('secret/internal');
    const acme = (await ids(t.keys.acme)).body.data.map((m: { id: string }) => m.id);
    expect(acme).toContain('secret/internal');
  });

  it('the SDK lists models', async () => {
    const client = new OpenAI({ baseURL: `${t.url}/api/v1`, apiKey: t.keys.globex, maxRetries: 0 });
    const list = [];
    for await (const m of client.models.list()) list.push(m.id);
    expect(list).toContain('openai/gpt-4o-mini');
  });

  it('a bad key is refused chat-style', async () => {
    const r = await ids('sk_live_nope');
    expect(r.status).toBe(401);
    expect(r.body.error.code).toBe('invalid_api_key');
  });
});

describe('usage report parameters', () => {
  const report = async (qs: string, key: string = t.keys.acme) => {
    const res = await fetch(`${t.url}/api/business/v1/customer/usage${qs}`, { headers: key ? { authorization: `Bearer ${key}` } : {} });
    return { status: res.status, type: res.headers.get('content-type'), body: await readJson(res) };
  };

  it.each([
    ['', 400, ['from', 'to']],
    ['?from=2026-01-01', 400, ['to']],
    ['?from=yesterday&to=2026-01-02', 400, ['from']],
    ['?from=2026-02-31&to=2026-03-02', 400, ['from']],
    ['?from=2026-01-02&to=2026-01-01', 422, ['to']],
    ['?from=2025-01-01&to=2026-01-03', 422, ['to']],
  ])('%s → %i naming %j', async (qs, status, names) => {
    const r = await report(qs);
    expect(r.status).toBe(status);
    expect(r.type).toContain('application/problem+json');
    expect(r.body).toMatchObject({ status, type: expect.stringMatching(/^https:\/\//), title: expect.any(String), detail: expect.any(String) });
    expect(r.body.errors.map((e: { location: string }) => e.location)).toEqual(names.map((n) => `query.${n}`));
    for (const e of r.body.errors) expect(Object.keys(e).sort()).toEqual(['location', 'message', 'value']);
  });

  it('names the location, the message and the value sent', async () => {
    const r = await report('?from=yesterday&to=2026-01-02');
    expect(r.body.errors).toEqual([{ location: 'query.from', message: 'must be an RFC 3339 timestamp (2026-01-31T00:00:00Z) or a date (2026-01-31)', value: 'yesterday' }]);
  });

  it('the report names its schema and the key\'s project', async () => {
    const r = await report('?from=2026-01-01&to=2026-01-02');
    expect(r.body.$schema).toBe('https://tollgate.dev/schemas/usage-report.json');
    expect(r.body.project_id).toBe('web');
    expect(Object.keys(r.body).sort()).toEqual(['$schema', 'by_model', 'from', 'project_id', 'to', 'totals']);
  });

  it('accepts a range of exactly 366 days and RFC 3339 offsets', async () => {
    expect((await report('?from=2024-01-01&to=2025-01-01')).status).toBe(200);
    expect((await report('?from=2026-01-01T00:00:00%2B02:00&to=2026-01-01T10:00:00Z')).status).toBe(200);
  });

  it('without a key: 401 problem details', async () => {
    const r = await report('?from=2026-01-01&to=2026-01-02', '');
    expect(r.status).toBe(401);
    expect(r.type).toContain('application/problem+json');
  });

  it('an empty range reports zeros with every field present', async () => {
    const r = await report('?from=2001-01-01&to=2001-01-02');
    expect(r.body.totals).toMatchObject({ request_count: 0, cost_points: '0', original_cost: '0', prompt_tokens: 0 });
    expect(r.body.by_model).toEqual([]);
  });
});
