// Safe defaults probed as an attacker would: provider secrets in upstream errors, slow bodies, connection floods,
// framework-made answers, listen addresses. Every answer in the family's shape.
import { once } from 'node:events';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import type { Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway } from '../../gateway/gateway.ts';
import type { TestGateway } from '../support/gateway.ts';
import { PROVIDER_SECRET, startTestGateway } from '../support/gateway.ts';
import { readJson } from '../support/http.ts';

let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway({ gateway: { bodyTimeouts: { jsonMs: 400, uploadMs: 700 }, maxConnections: 40 } });
});
afterAll(async () => {
  await t?.close();
  for (const d of ['-b', '-c']) rmSync(t.dataDir + d, { recursive: true, force: true });
});

const msg = [{ role: 'user', content: 'hello' }];
const echo401 = (headers: Record<string, string | string[] | undefined>) => {
  const presented = String(headers.authorization ?? headers['x-api-key'] ?? headers['x-goog-api-key'] ?? '').replace(/^Bearer /, '');
  return { error: { message: `Incorrect API key provided: ${presented}. You can find your API key at https://platform.openai.com/account/api-keys.`, type: 'invalid_request_error', param: null, code: 'invalid_api_key' } };
};

async function call(path: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; text: string; body: Record<string, unknown>; headers: Headers }> {
  const res = await fetch(`${t.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${t.keys.acme}`, ...headers }, body: JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, text, body: JSON.parse(text) as Record<string, unknown>, headers: res.headers };
}

describe('an upstream 401 quoting the provider credential', () => {
  const routes: [string, string, unknown, (b: Record<string, unknown>) => unknown][] = [
    ['chat pass-through', '/api/v1/chat/completions', { model: 'gpt-4o-mini', messages: msg }, (b) => (b.error as { code: string }).code],
    ['compat pass-through', '/api/v3/chat/completions', { model: 'gpt-4o-mini', messages: msg }, (b) => (b.error as { code: string }).code],
    ['unified (converted errors)', '/api/v0/chat/completions', { model: 'gpt-4o-mini', messages: msg }, (b) => (b.error as { code: string }).code],
    ['messages over an openai-only model (converted)', '/api/v1/messages', { model: 'openai/reasoner', max_tokens: 10, messages: msg }, (b) => (b.error as { type: string }).type],
    ['responses pass-through', '/api/v1/responses', { model: 'gpt-5-nano', input: 'hi' }, (b) => (b.error as { code: string }).code],
    ['images pass-through', '/api/v1/images/generations', { model: 'gpt-image-1', prompt: 'a cat' }, (b) => (b.error as { code: string }).code],
  ];
  it.each(routes)('%s: 502 in the family, naming the refused provider credential, never quoting it', async (_name, path, body, codeOf) => {
    t.upstream.nextResponse({ status: 401, bodyFromHeaders: echo401 });
    const r = await call(path, body);
    expect(r.status).toBe(502);
    expect(r.text).not.toContain(PROVIDER_SECRET);
    expect(r.text).not.toContain(PROVIDER_SECRET.slice(0, 8));
    expect(r.text).toMatch(/refused the gateway's provider credentials/);
    expect(codeOf(r.body)).toBe(path === '/api/v1/messages' ? 'api_error' : 'upstream_auth');
    // the upstream really did quote it: the redaction, not the fake, keeps it out
    expect(JSON.stringify(echo401({ authorization: `Bearer ${PROVIDER_SECRET}` }))).toContain(PROVIDER_SECRET);
  });

  it('the gemini route answers 502 in Google\'s shape', async () => {
    t.upstream.nextResponse({ status: 401, bodyFromHeaders: echo401 });
    const r = await call('/api/v1/gemini/v1beta/models/gemini-2.5-flash-image:generateContent', { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] });
    expect(r.status).toBe(502);
    expect(r.body).toMatchObject({ error: { code: 502, status: 'UNAVAILABLE' } });
    expect(r.text).not.toContain(PROVIDER_SECRET);
  });
});

describe('an upstream 403 quoting a token', () => {
  it('keeps its status and message, the credential and token-looking words blanked', async () => {
    t.upstream.nextResponse({
      status: 403,
      bodyFromHeaders: (h) => ({ error: { message: `Project has no access to this model in your region (key ${String(h.authorization)}, also sk-abcdefghijklmnop).`, type: 'permission_error', code: 'unsupported_country_region_territory' } }),
    });
    const r = await call('/api/v1/chat/completions', { model: 'gpt-4o-mini', messages: msg });
    expect(r.status).toBe(403);
    const m = (r.body.error as { message: string }).message;
    expect(m).toMatch(/^Project has no access to this model in your region/);
    expect(m).not.toContain(PROVIDER_SECRET);
    expect(m).not.toContain('sk-abcdefghijklmnop');
    expect(m).toContain('[redacted]');
  });
});

/** Opens a raw socket, sends `head`, then trickles `body` one byte every `everyMs`; resolves with what came back. */
async function trickle(head: string, body: string, everyMs: number): Promise<{ text: string }> {
  const { port } = new URL(t.url);
  const s = connect(Number(port), '127.0.0.1');
  await once(s, 'connect');
  s.write(head);
  let i = 0;
  const timer = setInterval(() => {
    if (i < body.length && s.writable) s.write(body[i++]);
  }, everyMs);
  let text = '';
  s.on('data', (d: Buffer) => (text += d.toString()));
  await new Promise<void>((resolve) => {
    s.on('close', () => resolve());
    s.on('error', () => resolve());
  });
  clearInterval(timer);
  return { text };
}

describe('a request body that trickles in', () => {
  it('JSON: 408 in the chat shape, the connection closed', async () => {
    const body = JSON.stringify({ model: 'gpt-4o-mini', messages: msg });
    const r = await trickle(`POST /api/v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${t.keys.acme}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`, body, 100);
    expect(r.text).toMatch(/^HTTP\/1.1 408/);
    const json = JSON.parse(r.text.slice(r.text.indexOf('\r\n\r\n') + 4)) as { error: { code: string; type: string } };
    expect(json.error).toMatchObject({ code: 'request_timeout', type: 'invalid_request_error', message: expect.stringContaining('within 0.4 s') });
  });

  it('messages: 408 in the messages shape', async () => {
    const body = JSON.stringify({ model: 'openai/reasoner', max_tokens: 5, messages: msg });
    const r = await trickle(`POST /api/v1/messages HTTP/1.1\r\nHost: x\r\nx-api-key: ${t.keys.acme}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`, body, 100);
    expect(r.text).toMatch(/^HTTP\/1.1 408/);
    expect(JSON.parse(r.text.slice(r.text.indexOf('\r\n\r\n') + 4))).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
  });

  it('an image edit upload gets its own (longer) deadline, then 408 in the compat shape, not a 504', async () => {
    const boundary = 'b0undary';
    const body = `--${boundary}\r\nContent-Disposition: form-data; name="model"\r\n\r\nseedream-4\r\n--${boundary}\r\nContent-Disposition: form-data; name="prompt"\r\n\r\n${'x'.repeat(200)}\r\n--${boundary}--\r\n`;
    const r = await trickle(
      `POST /api/v3/images/edits HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${t.keys.acme}\r\nContent-Type: multipart/form-data; boundary=${boundary}\r\nContent-Length: ${body.length}\r\n\r\n`,
      body,
      50,
    );
    expect(r.text).toMatch(/^HTTP\/1.1 408/);
    // the upload deadline (0.7 s) is not the JSON one (0.4 s)
    expect(JSON.parse(r.text.slice(r.text.indexOf('\r\n\r\n') + 4))).toMatchObject({ error: { code: 'request_timeout', type: 'RequestTimeout', message: expect.stringContaining('within 0.7 s') } });
  });

  it('a body that arrives in time is served', async () => {
    const r = await call('/api/v1/chat/completions', { model: 'gpt-4o-mini', messages: msg });
    expect(r.status).toBe(200);
  });
});

describe('framework-made answers', () => {
  it.each([
    ['/api/v1/chat/completions', (b: Record<string, unknown>) => expect(b).toMatchObject({ error: { code: 'request_headers_too_large', type: 'invalid_request_error' } })],
    ['/api/anthropic/v1/messages', (b: Record<string, unknown>) => expect(b).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } })],
    ['/api/v1/gemini/v1beta/models/x:generateContent', (b: Record<string, unknown>) => expect(b).toMatchObject({ error: { code: 431, status: 'INVALID_ARGUMENT' } })],
  ])('431 on %s is in the family shape', async (path, check) => {
    const { port } = new URL(t.url);
    const s = connect(Number(port), '127.0.0.1');
    await once(s, 'connect');
    s.write(`POST ${path} HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(40 * 1024)}\r\n\r\n`);
    let text = '';
    s.on('data', (d: Buffer) => (text += d.toString()));
    await once(s, 'close');
    expect(text).toMatch(/^HTTP\/1.1 431/);
    check(JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)) as Record<string, unknown>);
  });

  it('a path without /api names the right one', async () => {
    const r = await call('/v1/chat/completions', { model: 'gpt-4o-mini', messages: msg });
    expect(r.status).toBe(404);
    expect((r.body.error as { message: string }).message).toContain('/api/v1/chat/completions');
  });

  it('a messages-looking path answers in the messages shape', async () => {
    const r = await call('/v1/messages', { model: 'x', max_tokens: 1, messages: msg });
    expect(r.status).toBe(404);
    expect(r.body).toMatchObject({ type: 'error', error: { type: 'not_found_error', message: expect.stringContaining('/api/v1/messages') } });
  });

  it('a known path with the wrong method: 405 with Allow', async () => {
    const res = await fetch(`${t.url}/api/v1/chat/completions`);
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('POST');
    expect(await readJson(res)).toMatchObject({ error: { code: 'method_not_allowed', type: 'invalid_request_error' } });
    const models = await fetch(`${t.url}/api/v1/models`, { method: 'DELETE' });
    expect(models.status).toBe(405);
    expect(models.headers.get('allow')).toBe('GET, HEAD');
  });
});

describe('connections per process', () => {
  it('beyond the cap, new connections are refused at accept while the held ones stay', async () => {
    const { port } = new URL(t.url);
    const held: Socket[] = [];
    try {
      for (let i = 0; i < 40; i++) {
        const s = connect(Number(port), '127.0.0.1');
        await once(s, 'connect');
        held.push(s);
      }
      const extra = connect(Number(port), '127.0.0.1');
      extra.on('error', () => undefined);
      extra.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
      let got = '';
      extra.on('data', (d: Buffer) => (got += d.toString()));
      await once(extra, 'close');
      expect(got).toBe('');
    } finally {
      for (const s of held) s.destroy();
    }
    // Once they are gone the gateway serves again.
    await new Promise((r) => setTimeout(r, 50));
    expect((await fetch(`${t.url}/healthz`)).status).toBe(200);
  });
});

describe('listen addresses', () => {
  it('standalone defaults to loopback for the API and the metrics port, and says what it bound', async () => {
    const other = await startGateway({ configPath: t.configPath, dataDir: t.dataDir + '-b', port: 0, adminPort: await freeAdminPort(), logger: false });
    try {
      expect(other.listening.api).toMatch(/^127\.0\.0\.1:\d+$/);
      expect(other.listening.admin).toMatch(/^127\.0\.0\.1:\d+$/);
    } finally {
      await other.close();
    }
    // A second gateway opens its own PGlite: slow on a busy machine.
  }, 180_000);

  it('a busy port fails fast with EADDRINUSE, closing what it opened', async () => {
    const port = Number(new URL(t.url).port);
    const err = await startGateway({ configPath: t.configPath, dataDir: t.dataDir + '-c', port, host: '127.0.0.1', logger: false }).then(
      () => undefined,
      (e: unknown) => e as Error & { code?: string },
    );
    expect(err?.code).toBe('EADDRINUSE');
    expect(err?.message).toContain(`port ${port}`);
    expect(err?.message).toContain('--port');
  });
});

async function freeAdminPort(): Promise<number> {
  const { freePort } = await import('../support/child-gateway.ts');
  return freePort();
}

// Last in this file: it rewrites the shared gateway's config (hot-reloaded) to give fake-openai a short total timeout.
describe('an upstream that fails while its JSON body is read', () => {
  beforeAll(async () => {
    const cfg = JSON.parse(readFileSync(t.configPath, 'utf8')) as { providers: { id: string; timeouts?: Record<string, number> }[] };
    for (const p of cfg.providers) if (p.id === 'fake-openai') p.timeouts = { connectMs: 2000, firstByteMs: 3000, idleMs: 5000, totalMs: 800 };
    writeFileSync(t.configPath, JSON.stringify(cfg));
    for (let i = 0; i < 200 && t.gw.holder.current?.providers.get('fake-openai')?.timeouts.totalMs !== 800; i++) await new Promise((r) => setTimeout(r, 50));
    expect(t.gw.holder.current?.providers.get('fake-openai')?.timeouts.totalMs).toBe(800);
  });

  it('the total timeout firing mid-body is 504 upstream_timeout, not "could not be reached"', async () => {
    t.upstream.nextResponse({ chunks: ['{"id":"chatcmpl-1","object":"chat.completion",', { data: '"choices":[]}', delayMs: 3000 }], headers: { 'content-type': 'application/json' } });
    const r = await call('/api/v1/chat/completions', { model: 'gpt-4o-mini', messages: msg });
    expect(r.status).toBe(504);
    expect(r.body.error).toMatchObject({ code: 'upstream_timeout', type: 'upstream_error' });
  });

  it('a body cut after the headers is 502 saying the answer broke off', async () => {
    t.upstream.nextResponse({ chunks: ['{"id":"chatcmpl-1","object":"chat.completion",'], headers: { 'content-type': 'application/json' }, abort: true });
    const r = await call('/api/v1/chat/completions', { model: 'gpt-4o-mini', messages: msg });
    expect(r.status).toBe(502);
    expect((r.body.error as { message: string }).message).toMatch(/broke off its answer/);
  });
});
