// A running gateway against its own OpenAPI document: GET /openapi.json, every documented API-port route answers
// (never 404), and real answers (models, usage report, limits, a chat completion, each family's errors) validate
// against the document with expectMatchesOpenApi.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateApiKey } from '../../gateway/auth/api-key.ts';
import type { OpenApiDocument } from '../../gateway/openapi/document.ts';
import { PUBLIC_ROUTES } from '../../gateway/openapi/public-routes.ts';
import { compileSnapshot } from '../../gateway/snapshot/runtime.ts';
import type { SnapshotInput } from '../../gateway/snapshot/schema.ts';
import { snapshotSchema } from '../../gateway/snapshot/schema.ts';
import type { TestGateway } from '../support/gateway.ts';
import { startTestGateway } from '../support/gateway.ts';
import { TINY_PNG } from '../upstream/server.ts';
import { expectMatchesOpenApi, fetchMatchingOpenApi } from '../support/openapi.ts';

let t: TestGateway;
const limited = generateApiKey();
beforeAll(async () => {
  t = await startTestGateway();
  // A key with limits and budgets, so the limits view has entries of every kind to validate.
  const config = JSON.parse(readFileSync(t.configPath, 'utf8')) as SnapshotInput;
  config.apiKeys!.push({ id: 'openapi-limited', hash: limited.hash, prefix: limited.prefix, organization: 'acme', project: 'limited', limits: { rpm: 100, models: [{ model: 'gpt-4o-mini', tpm: 100000 }] }, budget: { day: '5', total: '10', softPercent: 80 } });
  t.gw.holder.set(compileSnapshot(snapshotSchema.parse(config)));
});
afterAll(async () => t?.close());

const json = (key: string | undefined, body: unknown, extra: Record<string, string> = {}): RequestInit => ({
  method: 'POST',
  headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}), ...extra },
  body: JSON.stringify(body),
});
const get = (key?: string): RequestInit => ({ headers: key ? { authorization: `Bearer ${key}` } : {} });

/** A concrete URL path for a documented path: parameters filled with values the test world knows. */
function concrete(docPath: string): string {
  return docPath.replace('{model}', docPath.includes('/gemini/') ? 'gemini-2.5-flash-image' : 'openai/gpt-4o-mini');
}

describe('GET /openapi.json', () => {
  it('serves the document, itself valid against its own declaration', async () => {
    const { status, body, headers } = await fetchMatchingOpenApi(`${t.url}/openapi.json`);
    expect(status).toBe(200);
    expect(headers.get('content-type')).toMatch(/^application\/json/);
    const doc = body as OpenApiDocument;
    expect(doc.openapi).toBe('3.1.0');
    expect(Object.keys(doc.paths)).toContain('/api/v1/chat/completions');
  });

  it('every documented API-port route answers something other than 404, in its declared shape', async () => {
    for (const r of PUBLIC_ROUTES) {
      const path = concrete(r.docPath ?? r.path);
      const init: RequestInit = r.method === 'GET' ? get() : json(undefined, {});
      const res = await fetch(`${t.url}${path}`, { ...init, method: r.method });
      const text = await res.text();
      expect(res.status, `${r.method} ${path}: ${text}`).not.toBe(404);
      // Without a key: 200 where none is needed, else 401 in the route's error family.
      expectMatchesOpenApi(r.method, path, res.status, JSON.parse(text), res.headers.get('content-type') ?? undefined);
    }
  });
});

describe('real answers validate against the document', () => {
  it('models: the list with and without a key, one model, and an unknown one', async () => {
    expect((await fetchMatchingOpenApi(`${t.url}/api/v1/models`)).status).toBe(200);
    const withKey = await fetchMatchingOpenApi(`${t.url}/api/v1/models`, get(t.keys.acme));
    expect((withKey.body as { data: unknown[] }).data.length).toBeGreaterThan(3);
    expect((await fetchMatchingOpenApi(`${t.url}/api/v3/models/openai/gpt-4o-mini`, get(t.keys.acme))).status).toBe(200);
    expect((await fetchMatchingOpenApi(`${t.url}/api/v1/models/openai%2Fnope`, get(t.keys.acme))).status).toBe(404);
    expect((await fetchMatchingOpenApi(`${t.url}/api/v3/models/nope`, get(t.keys.acme))).status).toBe(404);
  });

  it('a chat completion, then the usage report and the limits that count it', async () => {
    const chat = await fetchMatchingOpenApi(`${t.url}/api/v1/chat/completions`, json(t.keys.globex, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hi' }] }));
    expect(chat.status).toBe(200);
    // A stream is declared as text/event-stream (no schema for its events).
    const stream = await fetch(`${t.url}/api/v1/chat/completions`, json(t.keys.globex, { model: 'gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'Hi' }] }));
    await stream.text();
    expect(stream.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const op = ((await (await fetch(`${t.url}/openapi.json`)).json()) as OpenApiDocument).paths['/api/v1/chat/completions'].post as { responses: Record<string, { content: Record<string, unknown> }> };
    expect(Object.keys(op.responses['200'].content)).toContain('text/event-stream');
    await t.gw.ledger.flush();
    const today = new Date().toISOString().slice(0, 10);
    const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
    const usage = await fetchMatchingOpenApi(`${t.url}/api/business/v1/customer/usage?from=${today}&to=${tomorrow}`, get(t.keys.globex));
    expect(usage.status).toBe(200);
    expect((usage.body as { totals: { request_count: number } }).totals.request_count).toBeGreaterThanOrEqual(1);
    const limits = await fetchMatchingOpenApi(`${t.url}/api/business/v1/customer/limits`, get(t.keys.globex));
    expect(limits.status).toBe(200);
    const spent = await fetch(`${t.url}/api/v1/chat/completions`, json(limited.key, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hi' }] }));
    expect(spent.status).toBe(200);
    await spent.text();
    const full = await fetchMatchingOpenApi(`${t.url}/api/business/v1/customer/limits`, get(limited.key));
    expect(full.status).toBe(200);
    const view = full.body as { limits: { kind: string; model?: string }[]; budgets: { period: string; resets_at: string | null; soft_points?: string }[] };
    expect(view.limits.map((l) => l.kind).sort()).toEqual(['rpm', 'tpm']);
    expect(view.budgets.map((b) => b.period).sort()).toEqual(['day', 'total']);
    expect(view.budgets.find((b) => b.period === 'total')!.resets_at).toBeNull();
  });

  it('messages, responses, embeddings and generateContent answers', async () => {
    const m = await fetchMatchingOpenApi(`${t.url}/api/v1/messages`, json(t.keys.acme, { model: 'anthropic/claude', max_tokens: 16, messages: [{ role: 'user', content: 'Hi' }] }));
    expect(m.status).toBe(200);
    const conv = await fetchMatchingOpenApi(`${t.url}/api/anthropic/v1/messages`, json(t.keys.acme, { model: 'gpt-4o-mini', max_tokens: 16, messages: [{ role: 'user', content: 'Hi' }] }));
    expect(conv.status).toBe(200);
    const unified = await fetchMatchingOpenApi(`${t.url}/api/v0/chat/completions`, json(t.keys.acme, { model: 'gemini-2.5-flash', messages: [{ role: 'user', content: 'Hi' }] }));
    expect(unified.status).toBe(200);
    const r = await fetchMatchingOpenApi(`${t.url}/api/v1/responses`, json(t.keys.acme, { model: 'gpt-5-nano', input: 'Hi' }));
    expect(r.status).toBe(200);
    const e = await fetchMatchingOpenApi(`${t.url}/api/v1/embeddings`, json(t.keys.acme, { model: 'text-embedding-3-small', input: 'Hi' }));
    expect(e.status).toBe(200);
    const g = await fetchMatchingOpenApi(`${t.url}/api/v1/gemini/v1beta/models/google%2Fgemini-2.5-flash-image:generateContent`, json(undefined, { contents: [{ role: 'user', parts: [{ text: 'Hi' }] }] }, { 'x-goog-api-key': t.keys.acme }));
    expect(g.status).toBe(200);
    const chunks = await fetchMatchingOpenApi(`${t.url}/api/v1/gemini/v1/models/gemini-2.5-flash-image:streamGenerateContent`, json(undefined, { contents: [{ role: 'user', parts: [{ text: 'Hi' }] }] }, { 'x-goog-api-key': t.keys.acme }));
    expect(chunks.status).toBe(200);
    expect(Array.isArray(chunks.body)).toBe(true);
  });

  it('images: a generation, a multipart edit and a JSON edit (v1 and v3)', async () => {
    const gen = await fetchMatchingOpenApi(`${t.url}/api/v1/images/generations`, json(t.keys.acme, { model: 'gpt-image-1', prompt: 'a cat' }));
    expect(gen.status).toBe(200);
    const f = new FormData();
    f.append('prompt', 'Blend');
    f.append('image', new Blob([TINY_PNG], { type: 'image/png' }), 'a.png');
    f.append('model', 'openai/gpt-image-1');
    const edit = await fetchMatchingOpenApi(`${t.url}/api/v1/images/edits`, { method: 'POST', headers: { authorization: `Bearer ${t.keys.acme}` }, body: f });
    expect(edit.status).toBe(200);
    const jsonEdit = await fetchMatchingOpenApi(`${t.url}/api/v3/images/edits`, json(t.keys.acme, { model: 'seedream-4', prompt: 'x', images: [{ image_url: `data:image/png;base64,${TINY_PNG.toString('base64')}` }] }));
    expect(jsonEdit.status).toBe(200);
  });

  it("each family's errors", async () => {
    const cases: [string, RequestInit, number][] = [
      // chat: a missing field, an unknown model, a model the org may not call, a wrong key, a dead upstream
      ['/api/v1/chat/completions', json(t.keys.acme, { model: 'gpt-4o-mini' }), 400],
      ['/api/v1/chat/completions', json(t.keys.acme, { model: 'nope', messages: [{ role: 'user', content: 'x' }] }), 404],
      ['/api/v1/chat/completions', json(t.keys.globex, { model: 'anthropic/claude', messages: [{ role: 'user', content: 'x' }] }), 403],
      ['/api/v1/chat/completions', json('sk_live_wrong', { model: 'gpt-4o-mini', messages: [] }), 401],
      ['/api/v1/chat/completions', json(t.keys.acme, { model: 'openai/unreachable', messages: [{ role: 'user', content: 'x' }] }), 502],
      ['/api/v1/chat/completions', { ...json(t.keys.acme, {}), body: '{"model":' }, 400],
      // compat (v3)
      ['/api/v3/chat/completions', json(t.keys.acme, { model: 'gpt-4o-mini', messages: [] }), 400],
      ['/api/v3/images/generations', json(t.keys.acme, { model: 'seedream-4', prompt: 'x', size: '9x9' }), 400],
      // messages
      ['/api/v1/messages', json(t.keys.acme, { model: '', messages: [] }), 400],
      ['/api/anthropic/v1/messages/count_tokens', json(t.keys.revoked, { model: 'anthropic/claude', messages: [] }), 401],
      ['/api/v1/messages', json(t.keys.acme, { model: 'anthropic/unreachable', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] }), 502],
      // gemini
      ['/api/v1/gemini/v1beta/models/gemini-2.5-flash-image:generateContent', json(undefined, { contents: [] }, { 'x-goog-api-key': t.keys.acme }), 400],
      ['/api/v1/gemini/v1/models/gemini-2.5-flash-image:streamGenerateContent', json(undefined, { contents: [{}] }, { 'x-goog-api-key': t.keys.expired }), 401],
      // problem+json
      ['/api/business/v1/customer/usage?from=yesterday', get(t.keys.acme), 400],
      ['/api/business/v1/customer/usage?from=2026-02-01&to=2026-01-01', get(t.keys.acme), 422],
      ['/api/business/v1/customer/limits', get(), 401],
      // images v1, embeddings, responses
      ['/api/v1/images/generations', json(t.keys.acme, { model: 'gpt-image-1', prompt: 'x', n: 0 }), 400],
      ['/api/v1/embeddings', json(t.keys.acme, { model: 'text-embedding-3-small' }), 400],
      ['/api/v1/responses', json(t.keys.acme, { input: 'x' }), 400],
    ];
    for (const [path, init, status] of cases) {
      const res = await fetchMatchingOpenApi(`${t.url}${path}`, init);
      expect(res.status, `${path}: ${JSON.stringify(res.body)}`).toBe(status);
    }
  });

  it('the helper itself fails on an answer the document does not allow', () => {
    expect(() => expectMatchesOpenApi('GET', '/api/v1/models', 200, { object: 'list', data: [{ id: 'x', object: 'model', created: 'yesterday', owned_by: 'system' }] })).toThrow(/created/);
    expect(() => expectMatchesOpenApi('GET', '/api/business/v1/customer/usage', 200, { totals: {} })).toThrow();
    expect(() => expectMatchesOpenApi('GET', '/api/v1/nowhere', 200, {})).toThrow(/not in the OpenAPI document/);
    expect(() => expectMatchesOpenApi('GET', '/healthz', 418, {})).toThrow(/status 418/);
  });
});
