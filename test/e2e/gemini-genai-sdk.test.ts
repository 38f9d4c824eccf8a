// generateContent through the official @google/genai SDK (v1beta and its default v1): images intact, bytes passed
// through, billed from candidatesTokenCount at the output price, every error in Google's shape.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiError, GoogleGenAI } from '@google/genai';
import type { GenerateContentResponse, Part } from '@google/genai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { UsageReport } from '../../gateway/ledger/report-types.ts';
import { startChildGateway } from '../support/child-gateway.ts';
import type { TestPrices } from '../support/expected-cost.ts';
import { expectedCost, sumDecimals } from '../support/expected-cost.ts';
import type { TestGateway } from '../support/gateway.ts';
import { PROVIDER_SECRET, startTestGateway } from '../support/gateway.ts';
import type { Json } from '../support/http.ts';
import { readJson } from '../support/http.ts';
import { TINY_PNG } from '../upstream/server.ts';

/** Pricing group `image-out` (input 0.3, output 30 per million) with acme's 0.9 discount, in thousandths. */
const IMAGE_OUT_ACME: TestPrices = { input: 300n, output: 30_000n, cacheRead: 0n, cacheWrite: 0n, discountNum: 9n, discountDen: 10n };
const costOf = (candidates: number) => expectedCost({ input: 0, output: candidates }, IMAGE_OUT_ACME).cost;

let t: TestGateway;
const from = new Date(Date.now() - 60_000).toISOString();
/** Every billed answer: candidatesTokenCount and images returned, as the client saw them. */
const billed: { candidates: number; images: number }[] = [];

beforeAll(async () => {
  t = await startTestGateway({ maxBodyBytes: 1024 * 1024 });
});
afterAll(async () => t?.close());

interface Row {
  input: string;
  output: string;
  cache_read: string;
  artifacts: string;
  cost_points: string;
  stream: boolean;
  estimated: boolean;
  endpoint: string;
  client_model: string;
  detail: Record<string, unknown>;
}

async function ledgerRow(requestId?: string): Promise<Row> {
  await t.gw.ledger.flush();
  const cols = 'input::text, output::text, cache_read::text, artifacts::text, cost_points::text, stream, estimated, endpoint, client_model, detail';
  const r = requestId
    ? await t.gw.store.query<Row>(`SELECT ${cols} FROM usage_events WHERE request_id = $1`, [requestId])
    : await t.gw.store.query<Row>(`SELECT ${cols} FROM usage_events ORDER BY occurred_at DESC LIMIT 1`);
  const row = r.rows[0];
  return { ...row, detail: typeof row.detail === 'string' ? JSON.parse(row.detail) : row.detail };
}

async function rowCount(): Promise<number> {
  await t.gw.ledger.flush();
  return Number((await t.gw.store.query<{ n: string }>('SELECT count(*)::text AS n FROM usage_events')).rows[0].n);
}

/** The row of a stream is journaled once the upstream ends, which may be just after the client saw the error. */
async function waitFor(cond: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 100; i++) {
    if (await cond()) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error('condition not met in 2 s');
}

const imagesOf = (parts: Part[]) => parts.filter((p) => p.inlineData && !p.thought);

function geminiBody(parts: unknown[], usage: Record<string, number>): Record<string, unknown> {
  return { candidates: [{ content: { parts, role: 'model' }, finishReason: 'STOP', index: 0 }], usageMetadata: usage, modelVersion: 'gemini-2.5-flash-image', responseId: 'r1' };
}

describe.each([
  ['v1beta', { apiVersion: 'v1beta' }],
  ['v1 (the SDK default)', {}],
])('@google/genai through %s', (version, extra) => {
  let ai: GoogleGenAI;
  const prefix = `/api/v1/gemini/${version.split(' ')[0]}`;
  beforeAll(() => {
    ai = new GoogleGenAI({ apiKey: t.keys.acme, httpOptions: { baseUrl: `${t.url}/api/v1/gemini`, ...extra } });
  });

  it('generateContent with TEXT+IMAGE and imageConfig: the body goes upstream, the image comes back, candidates are billed', async () => {
    t.upstream.reset();
    const r = await ai.models.generateContent({
      model: 'google/gemini-2.5-flash-image',
      contents: 'Draw a cat',
      config: { responseModalities: ['TEXT', 'IMAGE'], imageConfig: { aspectRatio: '16:9', imageSize: '2K' } },
    });
    const up = t.upstream.requests.at(-1)!;
    expect(up.path).toBe('/v1beta/models/gemini-2.5-flash-image:generateContent');
    expect(up.headers['x-goog-api-key']).toBe(PROVIDER_SECRET);
    expect(JSON.stringify(up.headers)).not.toContain(t.keys.acme);
    expect(up.json).toMatchObject({
      contents: [{ role: 'user', parts: [{ text: 'Draw a cat' }] }],
      generationConfig: { responseModalities: ['TEXT', 'IMAGE'], imageConfig: { aspectRatio: '16:9', imageSize: '2K' } },
    });
    const parts = r.candidates![0].content!.parts!;
    expect(parts[0].text).toBe('Here is your image.');
    const images = imagesOf(parts);
    expect(images).toHaveLength(1);
    expect(Buffer.from(images[0].inlineData!.data!, 'base64').equals(TINY_PNG)).toBe(true);
    const candidates = r.usageMetadata!.candidatesTokenCount!;
    expect(candidates).toBeGreaterThan(1290);
    expect(r.sdkHttpResponse!.headers!['x-tollgate-cost-points']).toBe(costOf(candidates));
    const row = await ledgerRow(r.sdkHttpResponse!.headers!['x-tollgate-request-id']);
    expect(row).toMatchObject({ input: '0', cache_read: '0', output: String(candidates), artifacts: '1', stream: false, estimated: false, client_model: 'google/gemini-2.5-flash-image' });
    expect(row.endpoint).toBe(`${prefix}/models/{model}:generateContent`);
    // Prompt and total counts are kept in the detail, not billed.
    expect(row.detail).toMatchObject({ promptTokenCount: r.usageMetadata!.promptTokenCount, totalTokenCount: r.usageMetadata!.totalTokenCount });
    billed.push({ candidates, images: 1 });
  });

  it('a large inline image arrives intact; thought images are not counted as made', async () => {
    const big = randomBytes(384 * 1024);
    const draft = randomBytes(1024);
    const usage = { promptTokenCount: 7, candidatesTokenCount: 1291, totalTokenCount: 1298 };
    const parts = [{ inlineData: { mimeType: 'image/png', data: draft.toString('base64') }, thought: true }, { text: 'Here' }, { inlineData: { mimeType: 'image/png', data: big.toString('base64') } }];
    t.upstream.nextResponse({ path: ':generateContent', headers: { 'content-type': 'application/json; charset=UTF-8' }, body: JSON.stringify(geminiBody(parts, usage)) });
    const r = await ai.models.generateContent({ model: 'gemini-2.5-flash-image', contents: 'Draw a big cat', config: { responseModalities: ['TEXT', 'IMAGE'] } });
    const images = imagesOf(r.candidates![0].content!.parts!);
    expect(Buffer.from(images[0].inlineData!.data!, 'base64').equals(big)).toBe(true);
    const row = await ledgerRow(r.sdkHttpResponse!.headers!['x-tollgate-request-id']);
    expect(row).toMatchObject({ output: '1291', artifacts: '1', cost_points: costOf(1291), client_model: 'gemini-2.5-flash-image' });
    billed.push({ candidates: 1291, images: 1 });
  });

  it('generateContentStream: chunks arrive, the image is intact, the stream is billed from the last usageMetadata', async () => {
    t.upstream.reset();
    const stream = await ai.models.generateContentStream({ model: 'google/gemini-2.5-flash-image', contents: 'Draw a dog', config: { responseModalities: ['TEXT', 'IMAGE'], imageConfig: { aspectRatio: '1:1' } } });
    const chunks: GenerateContentResponse[] = [];
    for await (const c of stream) chunks.push(c);
    expect(t.upstream.requests.at(-1)!.path).toBe('/v1beta/models/gemini-2.5-flash-image:streamGenerateContent');
    expect(t.upstream.requests.at(-1)!.query).toBe('alt=sse');
    expect(chunks.length).toBeGreaterThan(2);
    const parts = chunks.flatMap((c) => c.candidates?.[0]?.content?.parts ?? []);
    const images = imagesOf(parts);
    expect(images).toHaveLength(1);
    expect(Buffer.from(images[0].inlineData!.data!, 'base64').equals(TINY_PNG)).toBe(true);
    expect(parts.map((p) => p.text ?? '').join('')).toBe('Here is your image.');
    const candidates = chunks.at(-1)!.usageMetadata!.candidatesTokenCount!;
    const row = await ledgerRow();
    expect(row).toMatchObject({ stream: true, estimated: false, output: String(candidates), artifacts: '1', cost_points: costOf(candidates) });
    expect(row.endpoint).toBe(`${prefix}/models/{model}:streamGenerateContent`);
    billed.push({ candidates, images: 1 });
  });

  it('relays the upstream SSE byte for byte, a large image split across chunks included', async () => {
    const big = randomBytes(200 * 1024).toString('base64');
    const first = geminiBody([{ text: 'Here' }], { promptTokenCount: 4, totalTokenCount: 4 });
    delete (first.candidates as Record<string, unknown>[])[0].finishReason;
    const last = geminiBody([{ inlineData: { mimeType: 'image/png', data: big } }], { promptTokenCount: 4, candidatesTokenCount: 1291, totalTokenCount: 1295 });
    const sse = Buffer.from(`data: ${JSON.stringify(first)}\r\n\r\ndata: ${JSON.stringify(last)}\r\n\r\n`);
    t.upstream.nextResponse({ path: ':streamGenerateContent', headers: { 'content-type': 'text/event-stream' }, chunks: [sse.subarray(0, 100), sse.subarray(100, 70_000), sse.subarray(70_000)] });
    const res = await fetch(`${t.url}${prefix}/models/gemini-2.5-flash-image:streamGenerateContent?alt=sse`, {
      method: 'POST',
      headers: { 'x-goog-api-key': t.keys.acme, 'content-type': 'application/json' },
      body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'x' }] }] }),
    });
    expect(res.status).toBe(200);
    expect(Buffer.from(await res.arrayBuffer()).equals(sse)).toBe(true);
    const row = await ledgerRow(res.headers.get('x-tollgate-request-id')!);
    expect(row).toMatchObject({ output: '1291', artifacts: '1', cost_points: costOf(1291), estimated: false });
    billed.push({ candidates: 1291, images: 1 });
  });

  it('mid-stream errors reach the SDK as ApiError (the upstream frame, and the gateway own one on a cut)', async () => {
    for (const scenario of ['mid-stream-error', 'cut-stream']) {
      const before = await rowCount();
      let text = '';
      const err = await (async () => {
        const stream = await ai.models.generateContentStream({ model: 'google/gemini-2.5-flash-image', contents: `Tell me a long story [fake:${scenario}]` });
        for await (const c of stream) for (const p of c.candidates?.[0]?.content?.parts ?? []) text += p.text ?? '';
      })().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ApiError);
      expect((err as ApiError).status).toBe(scenario === 'cut-stream' ? 502 : 500);
      // The partial chunks' usage has no candidates yet: the output is estimated from the text the SDK received
      // (UTF-8 bytes / 4), flagged estimated: a stream that never reached its end is not what the provider will bill.
      await waitFor(async () => (await rowCount()) > before);
      const row = await ledgerRow();
      const estimate = Math.ceil(Buffer.byteLength(text) / 4);
      expect(estimate).toBeGreaterThan(0);
      expect(row).toMatchObject({ stream: true, estimated: true, output: String(estimate), cost_points: costOf(estimate) });
      billed.push({ candidates: estimate, images: 0 });
    }
  });
});

describe('the model in the path, the key, the body', () => {
  const post = (path: string, body: string, headers: Record<string, string> = { 'x-goog-api-key': t.keys.acme }) =>
    fetch(`${t.url}/api/v1/gemini/v1beta/models/${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
  const body = JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hello' }] }] });

  it.each([
    ['raw slash', 'google/gemini-2.5-flash-image:generateContent'],
    ['URL-encoded slash', 'google%2Fgemini-2.5-flash-image:generateContent'],
    ['lower-case encoded slash and colon', 'google%2fgemini-2.5-flash-image%3AgenerateContent'],
    ['alias', 'gemini-2.5-flash-image:generateContent'],
  ])('accepts the model written with a %s', async (_name, path) => {
    const res = await post(path, body);
    expect(res.status).toBe(200);
    const r = await readJson(res);
    billed.push({ candidates: r.usageMetadata.candidatesTokenCount, images: 0 });
    expect(res.headers.get('x-tollgate-cost-points')).toBe(costOf(r.usageMetadata.candidatesTokenCount));
    const row = await ledgerRow(res.headers.get('x-tollgate-request-id')!);
    expect(row.client_model).toBe(decodeURIComponent(path.split(/:|%3A/)[0]));
  });

  it('the client body bytes go upstream untouched', async () => {
    t.upstream.reset();
    const odd = '{ "generationConfig" : {"responseModalities":["TEXT"],"temperature":0.25},\n  "contents":[{"parts":[{"text":"caf\\u00e9"}],"role":"user"}] }';
    const res = await post('gemini-2.5-flash-image:generateContent', odd);
    expect(res.status).toBe(200);
    expect(t.upstream.requests.at(-1)!.body.toString()).toBe(odd);
    billed.push({ candidates: (await readJson(res)).usageMetadata.candidatesTokenCount, images: 0 });
  });

  it('a `model` in the body is dropped: the path decides', async () => {
    t.upstream.reset();
    const res = await post('gemini-2.5-flash-image:generateContent', JSON.stringify({ model: 'models/other', contents: [{ parts: [{ text: 'x' }] }] }));
    expect(res.status).toBe(200);
    expect(t.upstream.requests.at(-1)!.json).toEqual({ contents: [{ parts: [{ text: 'x' }] }] });
    billed.push({ candidates: (await readJson(res)).usageMetadata.candidatesTokenCount, images: 0 });
  });

  it.each([
    ['?key=', (k: string) => ({ query: `?key=${encodeURIComponent(k)}`, headers: {} })],
    ['Authorization: Bearer', (k: string) => ({ query: '', headers: { authorization: `Bearer ${k}` } })],
    ['x-api-key', (k: string) => ({ query: '', headers: { 'x-api-key': k } })],
  ])('authenticates by %s', async (_name, how) => {
    t.upstream.reset();
    const { query, headers } = how(t.keys.acme);
    const res = await post(`gemini-2.5-flash-image:streamGenerateContent${query}${query ? '&' : '?'}alt=sse`, body, headers);
    expect(res.status).toBe(200);
    const text = await res.text();
    // The key never travels upstream, not even in the query.
    const up = t.upstream.requests.at(-1)!;
    expect(up.query).toBe('alt=sse');
    expect(JSON.stringify(up.headers)).not.toContain(t.keys.acme);
    const last = JSON.parse(text.trim().split('\r\n\r\n').at(-1)!.slice(6));
    billed.push({ candidates: last.usageMetadata.candidatesTokenCount, images: 0 });
  });

  it('streamGenerateContent without alt=sse answers the JSON array and is billed from its last usage', async () => {
    const res = await post('gemini-2.5-flash-image:streamGenerateContent', body);
    expect(res.status).toBe(200);
    const arr = await readJson(res);
    expect(Array.isArray(arr)).toBe(true);
    const candidates = arr.at(-1).usageMetadata.candidatesTokenCount;
    const row = await ledgerRow(res.headers.get('x-tollgate-request-id')!);
    expect(row).toMatchObject({ stream: true, estimated: false, output: String(candidates), cost_points: costOf(candidates) });
    billed.push({ candidates, images: 0 });
  });
});

describe('errors in Google shape', () => {
  const ai = (key: string) => new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: `${t.url}/api/v1/gemini`, apiVersion: 'v1beta' } });
  const googleError = (e: unknown) => JSON.parse((e as ApiError).message) as { error: { code: number; message: string; status: string } };

  it.each([
    ['a wrong key', () => 'sk_live_' + 'x'.repeat(43), 'gemini-2.5-flash-image', 401, 'UNAUTHENTICATED'],
    ['a revoked key', () => t.keys.revoked, 'gemini-2.5-flash-image', 401, 'UNAUTHENTICATED'],
    ['an unknown model', () => t.keys.acme, 'google/nope', 404, 'NOT_FOUND'],
    ['a private model the org may not use', () => t.keys.globex, 'google/gemini-2.5-flash-image', 404, 'NOT_FOUND'],
    ['a model without the gemini protocol', () => t.keys.acme, 'gpt-4o-mini', 400, 'INVALID_ARGUMENT'],
    ['an unreachable upstream', () => t.keys.acme, 'google/gemini-unreachable', 502, 'UNAVAILABLE'],
  ])('%s raises the SDK ApiError', async (_name, key, model, status, googleStatus) => {
    const err = await ai(key())
      .models.generateContent({ model, contents: 'hi' })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).status).toBe(status);
    const body = googleError(err);
    expect(body.error).toMatchObject({ code: status, status: googleStatus });
    expect(Object.keys(body.error).sort()).toEqual(['code', 'message', 'status']);
    if (googleStatus === 'INVALID_ARGUMENT') expect(body.error.message).toContain('gpt-4o-mini');
  });

  it('an upstream error comes back with its status and body unchanged, unbilled', async () => {
    const count = rowCount;
    const before = await count();
    const err = await ai(t.keys.acme)
      .models.generateContent({ model: 'gemini-2.5-flash-image', contents: 'hi [fake:error-429]' })
      .catch((e: unknown) => e);
    expect((err as ApiError).status).toBe(429);
    const body: Json = JSON.parse((err as ApiError).message);
    expect(body.error.status).toBe('RESOURCE_EXHAUSTED');
    expect(body.error.details.map((d: Json) => d['@type'])).toContain('type.googleapis.com/google.rpc.RetryInfo');
    expect(await count()).toBe(before);
  });

  const raw = async (path: string, init: RequestInit = {}) => {
    const res = await fetch(`${t.url}${path}`, { method: 'POST', ...init, headers: { 'x-goog-api-key': t.keys.acme, 'content-type': 'application/json', ...(init.headers as Record<string, string>) } });
    const text = await res.text();
    return { status: res.status, body: JSON.parse(text), text };
  };
  const contents = JSON.stringify({ contents: [{ parts: [{ text: 'x' }] }] });

  it.each([
    ['malformed JSON', '/api/v1/gemini/v1beta/models/gemini-2.5-flash-image:generateContent', { body: '{"contents": [' }, 400, 'INVALID_ARGUMENT'],
    ['missing contents', '/api/v1/gemini/v1beta/models/gemini-2.5-flash-image:generateContent', { body: '{}' }, 400, 'INVALID_ARGUMENT'],
    ['no body at all', '/api/v1/gemini/v1beta/models/gemini-2.5-flash-image:generateContent', { headers: { 'content-type': '' } }, 400, 'INVALID_ARGUMENT'],
    ['an unknown method', '/api/v1/gemini/v1beta/models/gemini-2.5-flash-image:countTokens', { body: contents }, 404, 'NOT_FOUND'],
    ['no method at all', '/api/v1/gemini/v1beta/models/gemini-2.5-flash-image', { body: contents }, 404, 'NOT_FOUND'],
    ['an unknown API version', '/api/v1/gemini/v2/models/gemini-2.5-flash-image:generateContent', { body: contents }, 404, 'NOT_FOUND'],
    ['an unknown path', '/api/v1/gemini/v1beta/files', { method: 'GET' }, 404, 'NOT_FOUND'],
    ['a malformed percent escape', '/api/v1/gemini/v1beta/models/gemini%E0%A4%A:generateContent', { body: contents }, 400, 'INVALID_ARGUMENT'],
    ['no key', '/api/v1/gemini/v1beta/models/gemini-2.5-flash-image:generateContent', { body: contents, headers: { 'x-goog-api-key': '' } }, 401, 'UNAUTHENTICATED'],
  ] as const)('%s', async (_name, path, init, status, googleStatus) => {
    const r = await raw(path, init as RequestInit);
    expect(r.status).toBe(status);
    expect(r.body).toEqual({ error: { code: status, message: expect.any(String), status: googleStatus } });
  });

  it('a body over the limit is a 413 in Google shape', async () => {
    const res = await fetch(`${t.url}/api/v1/gemini/v1beta/models/gemini-2.5-flash-image:generateContent?key=${t.keys.acme}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ contents: [{ parts: [{ text: 'x'.repeat(1024 * 1024) }] }] }),
    });
    expect(res.status).toBe(413);
    const b = await readJson(res);
    expect(b).toEqual({ error: { code: 413, message: expect.stringContaining('too large'), status: expect.any(String) } });
    expect(JSON.stringify(b)).not.toContain(t.keys.acme);
  });

  it('no error body or message echoes a key sent as ?key=', async () => {
    for (const path of ['/api/v1/gemini/v1beta/nothing', '/api/v1/gemini/v1beta/models/google%2Fnope:generateContent', '/api/v1/gemini/v1beta/models/x:embedContent']) {
      const r = await raw(`${path}?key=${t.keys.acme}&alt=sse`, { body: contents, headers: { 'x-goog-api-key': '' } });
      expect(r.status).toBeGreaterThanOrEqual(400);
      expect(r.text).not.toContain(t.keys.acme);
    }
  });
});

describe('logs', () => {
  it('a gateway at trace level never writes a key sent as ?key=', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'tg-gemini-log-'));
    const child = await startChildGateway({ configPath: t.configPath, dataDir, env: { LOG_LEVEL: 'trace' } });
    try {
      const key = t.keys.acme;
      const paths = [
        '/api/v1/gemini/v1beta/models/gemini-2.5-flash-image:generateContent',
        '/api/v1/gemini/v1beta/models/nope:generateContent',
        '/api/v1/gemini/v1beta/unknown',
        '/api/v1/gemini/v1beta/models/bad%E0%A4%A:generateContent',
      ];
      const statuses: number[] = [];
      for (const p of paths) {
        const res = await fetch(`${child.url}${p}?key=${key}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ contents: [{ parts: [{ text: 'hi' }] }] }) });
        statuses.push(res.status);
        await res.arrayBuffer();
      }
      expect(statuses).toEqual([200, 404, 404, 400]);
      expect(child.logs.join('')).toContain('tollgate listening');
      expect(child.logs.join('')).not.toContain(key);
      expect(child.logs.join('')).not.toContain(key.slice(8, 30));
    } finally {
      await child.kill('SIGTERM');
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe('usage report', () => {
  it('shows the points, completion tokens and images of every generateContent answer', async () => {
    await t.gw.ledger.flush();
    const to = new Date(Date.now() + 60_000).toISOString();
    const res = await fetch(`${t.url}/api/business/v1/customer/usage?from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}`, { headers: { authorization: `Bearer ${t.keys.acme}` } });
    const report = (await res.json()) as UsageReport;
    expect(report.totals.request_count).toBe(billed.length);
    expect(report.totals.cost_points).toBe(sumDecimals(billed.map((b) => costOf(b.candidates))));
    expect(report.totals.completion_tokens).toBe(billed.reduce((a, b) => a + b.candidates, 0));
    expect(report.totals.generated_artifacts).toBe(billed.reduce((a, b) => a + b.images, 0));
    // Prompt counts stay in the detail: no billed dimension shows tokens that cost nothing.
    expect(report.totals.prompt_tokens).toBe(0);
    expect(report.totals.total_tokens).toBe(report.totals.completion_tokens);
    const byModel = Object.fromEntries(report.by_model.map((m) => [m.model, m]));
    expect(Object.keys(byModel)).toEqual(expect.arrayContaining(['google/gemini-2.5-flash-image', 'gemini-2.5-flash-image']));
  });
});
