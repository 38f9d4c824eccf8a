// Errors on the messages routes in the Anthropic shape (docs/contract.md, errors), upstream errors converted, and broken upstream
// streams ended with a proper `event: error`, billed with what was reported, never crashing the process.
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ScriptedResponse } from '../upstream/server.ts';
import { checkErrorBody, checkMessagesStream, parseSse } from '../support/anthropic-shapes.ts';
import type { TestGateway } from '../support/gateway.ts';
import { PROVIDER_SECRET, startTestGateway } from '../support/gateway.ts';
import { readJson } from '../support/http.ts';
import { expectMatchesOpenApi } from '../support/openapi.ts';

let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway({ maxBodyBytes: 64 * 1024 });
});
afterAll(async () => t?.close());

interface Call {
  key?: string | null;
  body?: unknown;
  raw?: string;
}

async function post(path: string, c: Call): Promise<{ status: number; text: string; headers: Headers }> {
  const headers: Record<string, string> = { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' };
  const key = c.key === undefined ? t.keys.acme : c.key;
  if (key) headers['x-api-key'] = key;
  const res = await fetch(`${t.url}${path}`, { method: 'POST', headers, body: c.raw ?? JSON.stringify(c.body) });
  return { status: res.status, text: await res.text(), headers: res.headers };
}

const msg = [{ role: 'user', content: 'hello' }];
const ask = (model: string, extra: Record<string, unknown> = {}) => ({ model, max_tokens: 100, messages: msg, ...extra });

const cases: [string, () => Call, number, string][] = [
  ['no key', () => ({ key: null, body: ask('anthropic/claude') }), 401, 'authentication_error'],
  ['a wrong key', () => ({ key: 'sk_live_' + 'x'.repeat(43), body: ask('anthropic/claude') }), 401, 'authentication_error'],
  ['a revoked key', () => ({ key: t.keys.revoked, body: ask('anthropic/claude') }), 401, 'authentication_error'],
  ['an unknown model', () => ({ body: ask('nope/nothing') }), 404, 'not_found_error'],
  ['a private model the org may not use', () => ({ key: t.keys.globex, body: ask('secret/internal') }), 404, 'not_found_error'],
  ['a public model the org may not use', () => ({ key: t.keys.globex, body: ask('anthropic/claude') }), 403, 'permission_error'],
  ['a model with neither the anthropic nor the openai protocol', () => ({ body: ask('openai/gpt-5-nano') }), 400, 'invalid_request_error'],
  ['malformed JSON', () => ({ raw: '{"model": "anthropic/claude", "messages": [' }), 400, 'invalid_request_error'],
  ['a JSON array body', () => ({ raw: '[1,2]' }), 400, 'invalid_request_error'],
  ['a missing model', () => ({ body: { max_tokens: 10, messages: msg } }), 400, 'invalid_request_error'],
  ['missing messages', () => ({ body: { model: 'anthropic/claude', max_tokens: 10 } }), 400, 'invalid_request_error'],
  ['a duplicate model key', () => ({ raw: '{"model":"openai/gpt-4o-mini","max_tokens":5,"messages":[{"role":"user","content":"x"}],"model":"anthropic/claude"}' }), 400, 'invalid_request_error'],
  ['a block that cannot be converted', () => ({ body: ask('openai/gpt-4o-mini', { messages: [{ role: 'user', content: [{ type: 'search_result', source: 's', title: 't', content: [] }] }] }) }), 400, 'invalid_request_error'],
  ['a server tool on a converted model', () => ({ body: ask('openai/gpt-4o-mini', { tools: [{ type: 'web_search_20250305', name: 'web_search' }] }) }), 400, 'invalid_request_error'],
  ['a body over the limit', () => ({ body: ask('anthropic/claude', { messages: [{ role: 'user', content: 'x'.repeat(70 * 1024) }] }) }), 413, 'request_too_large'],
  ['an unreachable upstream', () => ({ body: ask('anthropic/unreachable') }), 502, 'api_error'],
  ['an upstream that never answers in time (converted)', () => ({ body: ask('openai/slow', { messages: [{ role: 'user', content: 'wait [fake:slow-first-byte:1500]' }] }) }), 504, 'api_error'],
];

describe.each(['/api/v1/messages', '/api/anthropic/v1/messages', '/api/v1/messages/count_tokens'])('errors on %s', (path) => {
  const applicable = path.endsWith('count_tokens') ? cases.filter(([name]) => !/converted|never answers/.test(name)) : cases;
  it.each(applicable)('%s', async (_name, call, status, type) => {
    const r = await post(path, call());
    expect(r.status).toBe(status);
    const body = JSON.parse(r.text);
    expect(checkErrorBody(body)).toEqual([]);
    expect(body.error.type).toBe(type);
    expect(body.request_id).toBe(r.headers.get('x-tollgate-request-id'));
    expect(r.headers.get('content-type')).toContain('application/json');
    expectMatchesOpenApi('POST', path, r.status, body, r.headers.get('content-type') ?? undefined);
    expect(r.text).not.toContain(PROVIDER_SECRET);
    expect(r.text).not.toContain(t.keys.acme);
    expect(r.text).not.toContain('127.0.0.1');
    expect(r.text).not.toMatch(/at .*\.ts:\d+/);
  });
});

describe('upstream errors', () => {
  it('a chat upstream error comes back converted to the messages shape with its status, unbilled', async () => {
    const count = async () => {
      await t.gw.ledger.flush();
      return (await t.gw.store.query<{ n: string }>('SELECT count(*)::text AS n FROM usage_events')).rows[0].n;
    };
    const before = await count();
    const r = await post('/api/v1/messages', { body: ask('openai/gpt-4o-mini', { messages: [{ role: 'user', content: 'busy? [fake:error-429]' }] }) });
    expect(r.status).toBe(429);
    const body = JSON.parse(r.text);
    expect(checkErrorBody(body)).toEqual([]);
    expect(body.error).toEqual({ type: 'rate_limit_error', message: expect.stringContaining('Rate limit reached') });
    const bad = await post('/api/anthropic/v1/messages', { body: ask('openai/gpt-4o-mini', { messages: [{ role: 'user', content: 'x [fake:error-400]' }], stream: true }) });
    expect(bad.status).toBe(400);
    expect(JSON.parse(bad.text).error.type).toBe('invalid_request_error');
    expect(await count()).toBe(before);
  });

  it('the SDK raises its typed errors with our message and status', async () => {
    const client = new Anthropic({ baseURL: `${t.url}/api`, apiKey: t.keys.acme, maxRetries: 0 });
    await expect(client.messages.create({ model: 'openai/gpt-4o-mini', max_tokens: 10, messages: [{ role: 'user', content: '[fake:error-429]' }] })).rejects.toBeInstanceOf(Anthropic.RateLimitError);
    await expect(client.messages.create({ model: 'nope', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] })).rejects.toMatchObject({ status: 404, error: { error: { type: 'not_found_error' } } });
    const globex = new Anthropic({ baseURL: `${t.url}/api/anthropic`, apiKey: t.keys.globex, maxRetries: 0 });
    await expect(globex.messages.create({ model: 'anthropic/claude', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] })).rejects.toBeInstanceOf(Anthropic.PermissionDeniedError);
    const anon = new Anthropic({ baseURL: `${t.url}/api`, apiKey: 'sk-wrong', maxRetries: 0 });
    await expect(anon.messages.create({ model: 'anthropic/claude', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] })).rejects.toBeInstanceOf(Anthropic.AuthenticationError);
  });

  it('a pass-through upstream error comes back unchanged', async () => {
    const r = await post('/api/v1/messages', { body: ask('anthropic/claude', { metadata: { fake: 'error-529' } }) });
    expect(r.status).toBe(529);
    expect(JSON.parse(r.text)).toMatchObject({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } });
    // Not a status the gateway itself gives: the document's `default` answer (the upstream's own error).
    expectMatchesOpenApi('POST', '/api/v1/messages', 529, JSON.parse(r.text));
  });
});

// ------------------------------------------------------------------------------------------ broken upstream streams

const chunk = (choices: unknown[], usage?: unknown) => `data: ${JSON.stringify({ id: 'chatcmpl-bad', object: 'chat.completion.chunk', created: 1750000000, model: 'gpt-4o-mini-2024-07-18', choices, ...(usage ? { usage } : {}) })}\n\n`;
const hello = chunk([{ index: 0, delta: { role: 'assistant', content: 'Hello' }, finish_reason: null }]);
const finish = chunk([{ index: 0, delta: {}, finish_reason: 'stop' }]);
const usage = chunk([], { prompt_tokens: 11, completion_tokens: 3, total_tokens: 14 });

interface Broken {
  name: string;
  script?: ScriptedResponse;
  /** A fake scenario marker in the prompt instead of a script. */
  marker?: string;
  /** What the SDK's error says. */
  error: RegExp;
  /** The ledger row: reported figures (input, output), or 'estimated'. */
  billed: [number, number] | 'estimated';
  /** Reported figures billed but flagged estimated: the stream never said it was complete. */
  flagged?: boolean;
  /** Text bytes the upstream streamed that the client never got (the converter refused the event carrying them). */
  unsent?: number;
}

const convertedBroken: Broken[] = [
  { name: 'truncated JSON', script: { chunks: [hello, 'data: {"id":"chatcmpl-bad","choices":[{"index":0,"delta":{"content":" wor\n\n'] }, error: /malformed event/, billed: 'estimated', unsent: ' wor'.length },
  { name: 'an unknown event', script: { chunks: [hello, 'event: surprise\ndata: {"x":1}\n\n', finish, usage, 'data: [DONE]\n\n'] }, error: /unexpected \\?"surprise\\?" event/, billed: [11, 3] },
  { name: 'a missing [DONE]', script: { chunks: [hello, finish, usage] }, error: /ended before it was complete/, billed: [11, 3], flagged: true },
  { name: 'an upstream cut mid-stream', script: { chunks: [hello], abort: true }, error: /stream broke|ended before/, billed: 'estimated' },
  { name: 'an in-stream upstream error', marker: '[fake:mid-stream-error]', error: /The server had an error/, billed: 'estimated' },
  { name: 'a stream cut by the fake', marker: '[fake:cut-stream]', error: /stream broke|ended before/, billed: 'estimated' },
];

describe.each(convertedBroken)('a converted stream with $name', (b) => {
  const params = () => ({ model: 'openai/gpt-4o-mini', max_tokens: 100, stream: true, messages: [{ role: 'user', content: `Say hello ${b.marker ?? ''}` }] });
  const script = () => {
    if (b.script) t.upstream.nextResponse({ path: '/chat/completions', ...b.script });
  };

  it('ends with one error event after valid events, and the SDK raises it', async () => {
    script();
    const r = await post('/api/v1/messages', { body: params() });
    expect(r.status).toBe(200);
    const events = parseSse(r.text);
    expect(checkMessagesStream(events, { allowError: true })).toEqual([]);
    expect(events.at(-1)!.event).toBe('error');
    expect(events.filter((e) => e.event === 'error')).toHaveLength(1);
    expect(JSON.parse(events.at(-1)!.data).error.message).toMatch(b.error);

    script();
    const client = new Anthropic({ baseURL: `${t.url}/api/anthropic`, apiKey: t.keys.acme, maxRetries: 0 });
    const stream = client.messages.stream({ model: 'openai/gpt-4o-mini', max_tokens: 100, messages: [{ role: 'user', content: `Say hello ${b.marker ?? ''}` }] });
    await expect(stream.finalMessage()).rejects.toThrow(b.error);
  });

  it('is billed with what the upstream reported, else estimated from the text streamed', async () => {
    script();
    const body = params();
    const r = await post('/api/v1/messages', { body });
    await t.gw.ledger.flush();
    const rows = await t.gw.store.query<{ input: string; output: string; estimated: boolean }>('SELECT input::text, output::text, estimated FROM usage_events WHERE request_id = $1', [r.headers.get('x-tollgate-request-id')]);
    expect(rows.rows).toHaveLength(1);
    if (b.billed === 'estimated') {
      // No usage came: the prompt estimate (request bytes / 4) and the text streamed at UTF-8 bytes / 4, never 0.
      let text = 0;
      for (const e of parseSse(r.text)) if (e.event === 'content_block_delta') text += Buffer.byteLength(JSON.parse(e.data).delta.text ?? '');
      expect(text).toBeGreaterThan(0);
      expect(rows.rows[0]).toMatchObject({ estimated: true, input: String(Math.ceil(Buffer.byteLength(JSON.stringify(body)) / 4)), output: String(Math.ceil((text + (b.unsent ?? 0)) / 4)) });
    } else expect([Number(rows.rows[0].input), Number(rows.rows[0].output), rows.rows[0].estimated]).toEqual([...b.billed, b.flagged ?? false]);
  });
});

describe('broken pass-through streams', () => {
  const anthropicStart = 'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_bad","type":"message","role":"assistant","model":"claude-x","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":21,"output_tokens":1}}}\n\n';
  const block = 'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\nevent: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}\n\nevent: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n';
  const delta = 'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":4}}\n\n';

  // message_start's output_tokens is a placeholder (1): without a message_delta the output is estimated from the text
  // relayed (UTF-8 bytes / 4), at least what was reported. "Hi" is 1; 80 × "word " (400 bytes) is 100, not 1.
  const longBlock = `event: content_block_start\ndata: {"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}\n\nevent: content_block_delta\ndata: {"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"${'word '.repeat(80)}"}}\n\n`;
  it.each([
    ['a missing message_stop', { chunks: [anthropicStart, block, delta] } as ScriptedResponse, /ended the stream before its final event/, [21, 4]],
    ['an upstream cut', { chunks: [anthropicStart, block], abort: true } as ScriptedResponse, /stream broke|before its final event/, [21, 1]],
    ['an upstream cut after a long text', { chunks: [anthropicStart, block, longBlock], abort: true } as ScriptedResponse, /stream broke|before its final event/, [21, 101]],
  ] as const)('%s ends with an error event and is billed with what was reported', async (_name, script, error, [input, output]) => {
    t.upstream.nextResponse({ path: '/messages', ...script });
    const r = await post('/api/v1/messages', { body: ask('anthropic/claude', { stream: true }) });
    const events = parseSse(r.text);
    expect(checkMessagesStream(events, { allowError: true })).toEqual([]);
    expect(events.at(-1)!.event).toBe('error');
    expect(JSON.parse(events.at(-1)!.data).error.message).toMatch(error);
    await t.gw.ledger.flush();
    const rows = await t.gw.store.query<{ input: string; output: string }>('SELECT input::text, output::text FROM usage_events WHERE request_id = $1', [r.headers.get('x-tollgate-request-id')]);
    expect([Number(rows.rows[0].input), Number(rows.rows[0].output)]).toEqual([input, output]);
  });

  it("an upstream's own error event reaches the SDK", async () => {
    const client = new Anthropic({ baseURL: `${t.url}/api`, apiKey: t.keys.acme, maxRetries: 0 });
    const stream = client.messages.stream({ model: 'anthropic/claude', max_tokens: 100, metadata: { fake: 'mid-stream-error' } as unknown as Anthropic.Metadata, messages: [{ role: 'user', content: 'hi' }] });
    await expect(stream.finalMessage()).rejects.toThrow(/Overloaded/);
  });

  it('the gateway keeps serving after all of the above', async () => {
    const r = await post('/api/v1/messages', { body: ask('openai/gpt-4o-mini') });
    expect(r.status).toBe(200);
    expect((await readJson(new Response(r.text))).content[0].text).toBe('echo: hello');
  });
});
