// The access log: one JSON line per request, with the facts an operator needs, and never an API key, a provider
// credential or the prompt, whatever path the request took (every error path below). Spans are checked the same way.
import { Writable } from 'node:stream';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestGateway } from '../support/gateway.ts';
import { PROVIDER_SECRET, startTestGateway } from '../support/gateway.ts';

/** In every prompt: it must never reach a log line or a span. */
const CANARY = 'PROMPT-CANARY-5d1e9b';
const BOGUS_KEY = 'sk_live_000000000000000000000000000000000000000000';

class Lines extends Writable {
  readonly lines: string[] = [];
  private rest = '';
  override _write(chunk: Buffer, _enc: string, done: () => void): void {
    const parts = (this.rest + chunk.toString('utf8')).split('\n');
    this.rest = parts.pop()!;
    this.lines.push(...parts.filter((l) => l !== ''));
    done();
  }
}

interface Access {
  msg: string;
  level: number;
  reqId: string;
  traceId?: string;
  endpoint: string;
  status: number;
  org?: string;
  project?: string;
  keyPrefix?: string;
  clientModel?: string;
  provider?: string;
  upstreamModel?: string;
  latencyMs: number;
  overheadMs?: number;
  inputTokens?: number;
  outputTokens?: number;
  cost?: string;
  aborted?: boolean;
  error?: string;
}

describe('access log and secrets', () => {
  let t: TestGateway;
  let full: TestGateway;
  const out = new Lines();
  const fullOut = new Lines();
  const spans = new InMemorySpanExporter();
  let requests = 0;
  let fullRequests = 0;

  const chatBody = (model: string, extra: Record<string, unknown> = {}, note = '') => JSON.stringify({ model, messages: [{ role: 'user', content: `${CANARY} ${note}` }], ...extra });

  async function send(base: string, path: string, init: { method?: string; key?: string | null; headers?: Record<string, string>; body?: string | Buffer } = {}): Promise<Response> {
    if (base === t.url) requests++;
    else fullRequests++;
    const headers: Record<string, string> = { 'content-type': 'application/json', ...init.headers };
    if (init.key !== null) headers.authorization = `Bearer ${init.key ?? t.keys.acme}`;
    const res = await fetch(`${base}${path}`, { method: init.method ?? 'POST', headers, body: init.body });
    await res.arrayBuffer();
    return res;
  }

  const accessLines = (lines: Lines): Access[] => lines.lines.map((l) => JSON.parse(l) as Access).filter((l) => l.msg === 'request');

  async function settled(lines: Lines, n: () => number): Promise<void> {
    for (let i = 0; i < 200 && accessLines(lines).length < n(); i++) await new Promise((r) => setTimeout(r, 25));
  }

  beforeAll(async () => {
    t = await startTestGateway({ gateway: { logger: true, logLevel: 'trace', logDestination: out, telemetry: { spanExporter: spans, env: {} } } });
    full = await startTestGateway({ maxJournalBytes: 1, gateway: { logger: true, logLevel: 'trace', logDestination: fullOut } });
    const u = t.url;
    const chat = '/api/v1/chat/completions';

    // Billed, for the fields.
    await send(u, chat, { body: chatBody('gpt-4o-mini', { temperature: 0.2 }, 'ok'), headers: { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' } });
    await send(u, chat, { body: chatBody('gpt-4o-mini', { stream: true }, 'stream') });
    // Authentication: none, bogus, revoked, expired, each header style.
    await send(u, chat, { key: null, body: chatBody('gpt-4o-mini') });
    await send(u, chat, { key: BOGUS_KEY, body: chatBody('gpt-4o-mini') });
    await send(u, chat, { key: t.keys.revoked, body: chatBody('gpt-4o-mini') });
    await send(u, chat, { key: t.keys.expired, body: chatBody('gpt-4o-mini') });
    await send(u, '/api/anthropic/v1/messages', { key: null, headers: { 'x-api-key': BOGUS_KEY }, body: JSON.stringify({ model: 'anthropic/claude', max_tokens: 5, messages: [{ role: 'user', content: CANARY }] }) });
    // Model resolution and protocol.
    await send(u, chat, { body: chatBody('no/such-model') });
    await send(u, chat, { key: t.keys.globex, body: chatBody('anthropic/claude') });
    await send(u, chat, { body: chatBody('gpt-5-nano') });
    await send(u, '/api/v1/responses', { body: JSON.stringify({ model: 'gpt-4o-mini', input: CANARY }) });
    // Malformed bodies.
    await send(u, chat, { body: `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"${CANARY}"` });
    await send(u, chat, { body: JSON.stringify({ model: 'gpt-4o-mini', messages: [] , note: CANARY }) });
    await send(u, chat, { body: `{"model":"gpt-4o-mini","model":"openai/tiered","messages":[{"role":"user","content":"${CANARY}"}]}` });
    await send(u, chat, { body: Buffer.alloc(33 * 1024 * 1024, `${CANARY} `) });
    await send(u, '/api/v1/images/generations', { body: JSON.stringify({ model: 'gpt-image-1', prompt: '' }) });
    // Upstream failures: error replies (pass-through and converted), timeouts, unreachable, broken streams.
    await send(u, chat, { body: chatBody('gpt-4o-mini', {}, '[fake:error-429]') });
    await send(u, chat, { body: chatBody('gpt-4o-mini', {}, '[fake:error-500]') });
    await send(u, '/api/v1/messages', { body: JSON.stringify({ model: 'openai/reasoner', max_tokens: 5, messages: [{ role: 'user', content: `${CANARY} [fake:error-400]` }] }) });
    await send(u, '/api/v0/chat/completions', { body: chatBody('gemini-2.5-flash', {}, '[fake:error-503]') });
    await send(u, chat, { body: chatBody('openai/slow', {}, '[fake:slow-first-byte:1500]') });
    await send(u, chat, { body: chatBody('openai/slow', { stream: true }, '[fake:stall]') });
    await send(u, chat, { body: chatBody('openai/unreachable') });
    await send(u, chat, { body: chatBody('gpt-4o-mini', { stream: true }, '[fake:mid-stream-error]') });
    await send(u, chat, { body: chatBody('gpt-4o-mini', { stream: true }, '[fake:cut-stream]') });
    await send(u, '/api/anthropic/v1/messages', { body: JSON.stringify({ model: 'anthropic/unreachable', max_tokens: 5, messages: [{ role: 'user', content: CANARY }] }) });
    await send(u, '/api/anthropic/v1/messages/count_tokens', { body: JSON.stringify({ model: 'anthropic/claude', messages: [{ role: 'user', content: CANARY }] }) });
    // Gemini: the key in the query string and in x-goog-api-key, good and bad.
    const gem = '/api/v1/gemini/v1beta/models/gemini-2.5-flash-image:generateContent';
    const gemBody = JSON.stringify({ contents: [{ parts: [{ text: CANARY }] }] });
    await send(u, `${gem}?key=${encodeURIComponent(t.keys.acme)}`, { key: null, body: gemBody });
    await send(u, `${gem}?key=${BOGUS_KEY}`, { key: null, body: gemBody });
    await send(u, gem, { key: null, headers: { 'x-goog-api-key': BOGUS_KEY }, body: gemBody });
    await send(u, `/api/v1/gemini/v1beta/models/no-colon?key=${t.keys.acme}`, { key: null, body: gemBody });
    // Unrouted paths (with a key in the query), bad URLs, the usage report's errors.
    await send(u, `/api/v1/nowhere?key=${t.keys.acme}`, { body: gemBody });
    await send(u, '/api/v1/%E0%A4%A', { body: gemBody });
    await send(u, '/api/business/v1/customer/usage?from=2026-01-02&to=2026-01-01', { method: 'GET' });
    await send(u, '/api/business/v1/customer/usage?from=2026-01-01&to=2026-01-02', { method: 'GET', key: BOGUS_KEY });
    // A client that leaves mid-stream: the gateway reads on, bills, and logs the request once it is done.
    requests++;
    const ac = new AbortController();
    const res = await fetch(`${u}${chat}`, { method: 'POST', signal: ac.signal, headers: { authorization: `Bearer ${t.keys.acme}`, 'content-type': 'application/json' }, body: chatBody('gpt-4o-mini', { stream: true }, '[fake:slow-stream:40]') });
    const reader = res.body!.getReader();
    await reader.read();
    ac.abort();
    await reader.read().catch(() => undefined);
    // The ledger is full: 503 before any upstream call.
    await send(full.url, chat, { key: full.keys.acme, body: chatBody('gpt-4o-mini') });
    await send(full.url, chat, { key: full.keys.acme, body: chatBody('gpt-4o-mini') });
    await settled(out, () => requests);
    await settled(fullOut, () => fullRequests);
  });
  afterAll(async () => {
    await t?.close();
    await full?.close();
  });

  it('writes exactly one access line per request, as JSON', () => {
    for (const l of [...out.lines, ...fullOut.lines]) expect(() => JSON.parse(l) as unknown).not.toThrow();
    expect(accessLines(out)).toHaveLength(requests);
    expect(accessLines(fullOut)).toHaveLength(fullRequests);
    expect(new Set(accessLines(out).map((l) => l.reqId)).size).toBe(requests);
  });

  it('never logs an API key, a provider credential or the prompt', () => {
    const secrets = [t.keys.acme, t.keys.globex, t.keys.revoked, t.keys.expired, full.keys.acme, BOGUS_KEY, PROVIDER_SECRET, CANARY];
    const all = [...out.lines, ...fullOut.lines];
    expect(all.length).toBeGreaterThan(requests);
    for (const line of all) for (const s of secrets) expect(line.includes(s), `${s} in ${line}`).toBe(false);
  });

  it('never puts one in a span either', () => {
    const text = JSON.stringify(spans.getFinishedSpans().map((s) => ({ name: s.name, attributes: s.attributes, status: s.status, events: s.events })));
    expect(spans.getFinishedSpans().length).toBeGreaterThan(requests);
    for (const s of [t.keys.acme, t.keys.globex, t.keys.revoked, t.keys.expired, BOGUS_KEY, PROVIDER_SECRET, CANARY]) expect(text.includes(s), s).toBe(false);
  });

  it('a billed line carries who, what, where, how long and how much', () => {
    const billed = accessLines(out).find((l) => l.status === 200 && l.traceId === '4bf92f3577b34da6a3ce929d0e0e4736')!;
    expect(billed).toMatchObject({
      level: 30,
      endpoint: '/api/v1/chat/completions',
      org: 'acme',
      project: 'web',
      clientModel: 'gpt-4o-mini',
      provider: 'fake-openai',
      upstreamModel: 'gpt-4o-mini-2024-07-18',
    });
    expect(t.keys.acme.startsWith(billed.keyPrefix!)).toBe(true);
    expect(billed.keyPrefix!.length).toBeLessThan(t.keys.acme.length - 20);
    expect(billed.outputTokens).toBeGreaterThan(0);
    expect(billed.inputTokens).toBeGreaterThan(0);
    expect(billed.cost).toMatch(/^\d+\.\d+$/);
    expect(billed.overheadMs).toBeLessThanOrEqual(billed.latencyMs);
  });

  it('error lines name the status and, for upstream failures, the kind', () => {
    const lines = accessLines(out);
    const statuses = lines.map((l) => l.status);
    expect(statuses).toEqual(expect.arrayContaining([401, 403, 404, 400, 413, 429, 500, 502, 503, 504, 422]));
    expect(lines.find((l) => l.status === 401 && l.org === undefined)).toBeDefined();
    expect(lines.find((l) => l.status === 502 && l.error === 'unavailable')).toMatchObject({ provider: 'dead', level: 50 });
    expect(lines.find((l) => l.status === 504 && l.error === 'timeout')).toMatchObject({ provider: 'fake-slow' });
    expect(lines.find((l) => l.endpoint === 'unmatched')).toMatchObject({ status: 404 });
    expect(accessLines(fullOut).map((l) => l.status)).toContain(503);
  });

  it('a client that left mid-stream is logged once the upstream is read and billed', () => {
    const gone = accessLines(out).find((l) => l.aborted === true)!;
    expect(gone).toMatchObject({ status: 200, org: 'acme' });
    expect(gone.outputTokens).toBeGreaterThan(0);
  });
});
