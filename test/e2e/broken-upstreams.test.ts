// Honest answers from broken upstreams: every case a fault-injecting upstream can produce gets a clear answer in the
// client's protocol and a ledger row that says what is known (or none, when nothing was answered).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SnapshotInput } from '../../gateway/snapshot/schema.ts';
import type { TestGateway } from '../support/gateway.ts';
import { PROVIDER_SECRET, startTestGateway } from '../support/gateway.ts';
import type { Json } from '../support/http.ts';
import { readJson } from '../support/http.ts';
import { emptyError, htmlSuccess, hugeJson, streamWithoutEnd } from '../upstream/faults.ts';

interface Row {
  input: number;
  output: number;
  estimated: boolean;
  cost_points: string;
}

function cappedWorld(c: SnapshotInput): SnapshotInput {
  const base = c.providers!.find((p) => p.id === 'fake-openai')!.baseUrl;
  return {
    ...c,
    providers: [...c.providers!, { id: 'capped', baseUrl: base, apiKey: { value: PROVIDER_SECRET }, maxResponseBytes: 1024 * 1024, routing: { maxAttempts: 1 } }],
    models: [...c.models!, { id: 'x/capped', pricingGroup: 'mini', protocols: { openai: [{ provider: 'capped', model: 'gpt-capped' }] } }],
  };
}

let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway({ config: cappedWorld });
});
afterAll(async () => t?.close());

const hello = [{ role: 'user', content: 'hello' }];

function post(path: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${t.url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${t.keys.acme}`, 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

async function rows(res: Response): Promise<Row[]> {
  await t.gw.ledger.flush();
  const r = await t.gw.store.query<Row>('SELECT input::int, output::int, estimated, cost_points::text FROM usage_events WHERE request_id = $1', [res.headers.get('x-tollgate-request-id')]);
  return r.rows;
}

describe('a 200 whose body is not the protocol JSON', () => {
  it.each([
    ['chat pass-through', '/api/v1/chat/completions', '/chat/completions', { model: 'gpt-4o-mini', messages: hello }, (b: Json) => expect(b.error).toMatchObject({ type: 'upstream_error', code: 'upstream_invalid_response' })],
    ['compat chat', '/api/v3/chat/completions', '/chat/completions', { model: 'gpt-4o-mini', messages: hello }, (b: Json) => expect(b.error).toMatchObject({ type: 'BadGateway', code: 'upstream_invalid_response' })],
    ['messages pass-through', '/api/v1/messages', '/messages', { model: 'anthropic/claude', max_tokens: 10, messages: hello }, (b: Json) => expect(b).toMatchObject({ type: 'error', error: { type: 'api_error' } })],
    ['messages over chat', '/api/v1/messages', '/chat/completions', { model: 'openai/gpt-4o-mini', max_tokens: 10, messages: hello }, (b: Json) => expect(b).toMatchObject({ type: 'error', error: { type: 'api_error' } })],
  ])('%s: 502 in the family shape, nothing billed', async (_name, route, upstreamPath, body, check) => {
    htmlSuccess(t.upstream, upstreamPath);
    const res = await post(route, body);
    expect(res.status).toBe(502);
    const b = await readJson(res);
    check(b);
    expect(JSON.stringify(b)).toMatch(/not valid JSON/);
    expect(await rows(res)).toHaveLength(0);
  });
});

describe('a 200 that a converting route cannot convert', () => {
  it('messages over chat: a chat 200 without choices is a 502 in the messages shape, and nothing is billed', async () => {
    t.upstream.nextResponse({ path: '/chat/completions', body: { id: 'chatcmpl-1', object: 'chat.completion', model: 'gpt-4o-mini' } });
    const res = await post('/api/v1/messages', { model: 'openai/gpt-4o-mini', max_tokens: 10, messages: hello });
    expect(res.status).toBe(502);
    expect(await readJson(res)).toMatchObject({ type: 'error', error: { type: 'api_error' } });
    expect(await rows(res)).toHaveLength(0);
  });
});

describe('a usage object without the protocol fields', () => {
  it('chat-style usage on messages is billed by the estimate and flagged', async () => {
    t.upstream.nextResponse({
      path: '/messages',
      body: { id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-x', content: [{ type: 'text', text: 'Hi there' }], stop_reason: 'end_turn', stop_sequence: null, usage: { prompt_tokens: 12, completion_tokens: 3 } },
    });
    const res = await post('/api/v1/messages', { model: 'anthropic/claude', max_tokens: 10, messages: hello });
    expect(res.status).toBe(200);
    const [row] = await rows(res);
    expect(row.estimated).toBe(true);
    expect(row.input).toBeGreaterThan(0);
    expect(row.output).toBeGreaterThan(0);
    expect(row.cost_points).not.toBe('0');
  });
});

describe('an upstream error with an empty body', () => {
  it.each([
    ['chat', '/api/v1/chat/completions', '/chat/completions', { model: 'gpt-4o-mini', messages: hello }, (b: Json) => b.error.message],
    ['messages', '/api/v1/messages', '/messages', { model: 'anthropic/claude', max_tokens: 10, messages: hello }, (b: Json) => b.type === 'error' && b.error.message],
    ['gemini', '/api/v1/gemini/v1beta/models/gemini-2.5-flash-image:generateContent', ':generateContent', { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] }, (b: Json) => b.error.code === 503 && b.error.message],
  ])('%s: the status kept, a body in the family shape saying so', async (_name, route, upstreamPath, body, message) => {
    emptyError(t.upstream, 503, upstreamPath);
    const res = await post(route, body, route.includes('gemini') ? { 'x-goog-api-key': t.keys.acme } : {});
    expect(res.status).toBe(503);
    expect(res.headers.get('content-type')).toMatch(/json/);
    expect(message(await readJson(res))).toMatch(/answered 503 with no body/);
  });
});

describe('a v1 chat stream that ends cleanly without [DONE]', () => {
  const chunk = (delta: string) => `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"content":"${delta}"},"finish_reason":null}]}\n\n`;
  const usage = 'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[],"usage":{"prompt_tokens":11,"completion_tokens":3,"total_tokens":14}}\n\n';

  it('ends with the error frame; reported usage is billed and flagged estimated', async () => {
    streamWithoutEnd(t.upstream, [chunk('Hi'), usage], '/chat/completions');
    const res = await post('/api/v1/chat/completions', { model: 'gpt-4o-mini', messages: hello, stream: true });
    const text = await res.text();
    const last = text.trim().split('\n\n').at(-1)!;
    expect(JSON.parse(last.slice('data: '.length)).error.message).toMatch(/before its final event/);
    const [row] = await rows(res);
    expect(row).toMatchObject({ input: 11, output: 3, estimated: true });
  });

  it('without the usage chunk either: billed by the estimate, flagged', async () => {
    streamWithoutEnd(t.upstream, [chunk('Hi'), chunk(' there')], '/chat/completions');
    const res = await post('/api/v1/chat/completions', { model: 'gpt-4o-mini', messages: hello, stream: true });
    expect(await res.text()).toMatch(/"error"/);
    const [row] = await rows(res);
    expect(row.estimated).toBe(true);
    expect(row.input).toBeGreaterThan(0);
    // "Hi there" is 8 bytes: 2 tokens, not the ~80 its two chunks' framing would make at bytes / 4.
    expect(row.output).toBe(2);
  });

  it('cut after 200 known words: billed from the text relayed, within 30 % of the words, far below the framing', async () => {
    const words = Array.from({ length: 200 }, (_, i) => ['The ', 'answer ', 'keeps ', 'going ', 'while ', 'tokens ', 'stream, ', 'and ', 'then ', 'breaks. '][i % 10]);
    const sent = words.map((w) => chunk(w));
    t.upstream.nextResponse({ path: '/chat/completions', chunks: sent, abort: true });
    const res = await post('/api/v1/chat/completions', { model: 'gpt-4o-mini', messages: hello, stream: true });
    expect(await res.text()).toMatch(/"error"/);
    const [row] = await rows(res);
    const textBytes = Buffer.byteLength(words.join(''));
    expect(row).toMatchObject({ estimated: true, output: Math.ceil(textBytes / 4) });
    // Each word here is one o200k token (a leading space joins the word): 200 true tokens, plus the commas and stops.
    expect(Math.abs(row.output - 240) / 240).toBeLessThan(0.3);
    expect(row.output).toBeLessThan(Buffer.byteLength(sent.join('')) / 4 / 5);
  });
});

describe('upstream JSON size cap', () => {
  it('an answer past the cap is a 502 and is not billed', async () => {
    hugeJson(t.upstream, 4 * 1024 * 1024, '/chat/completions');
    const res = await post('/api/v1/chat/completions', { model: 'x/capped', messages: hello });
    expect(res.status).toBe(502);
    expect((await readJson(res)).error).toMatchObject({ code: 'upstream_invalid_response' });
    expect(await rows(res)).toHaveLength(0);
    // The gateway and the upstream connection pool keep working.
    expect((await post('/api/v1/chat/completions', { model: 'x/capped', messages: hello })).status).toBe(200);
  });

  it('an answer under the cap passes', async () => {
    hugeJson(t.upstream, 512 * 1024, '/chat/completions');
    const res = await post('/api/v1/chat/completions', { model: 'x/capped', messages: hello });
    expect(res.status).toBe(200);
    expect((await res.arrayBuffer()).byteLength).toBeGreaterThan(512 * 1024);
  });
});

describe('duplicate routing keys', () => {
  it.each([
    ['stream', '{"model":"gpt-4o-mini","messages":[{"role":"user","content":"x"}],"stream":false,"stream":true}'],
    ['model', '{"model":"gpt-4o-mini","messages":[{"role":"user","content":"x"}],"model":"openai/tiered"}'],
  ])('a body naming "%s" twice is refused with 400', async (key, raw) => {
    const res = await post('/api/v1/chat/completions', raw);
    expect(res.status).toBe(400);
    expect((await readJson(res)).error).toMatchObject({ type: 'invalid_request_error', param: key });
  });

  it('the key nested deeper is no duplicate', async () => {
    const res = await post('/api/v1/chat/completions', { model: 'gpt-4o-mini', messages: [{ role: 'user', content: '"stream": true' }], metadata: { stream: 'x' }, stream: false });
    expect(res.status).toBe(200);
  });
});

describe('an upstream that sends its head and then nothing', () => {
  it('the client gets the stream head anyway: 200, event-stream, the request id', async () => {
    t.upstream.nextResponse({ path: '/chat/completions', headers: { 'content-type': 'text/event-stream' }, stall: true });
    const ac = new AbortController();
    // Resolves at the head: were it sent only with a first chunk, it would come with the error at the idle timeout.
    const res = await fetch(`${t.url}/api/v1/chat/completions`, {
      method: 'POST',
      signal: ac.signal,
      headers: { authorization: `Bearer ${t.keys.acme}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: hello, stream: true }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    expect(res.headers.get('x-tollgate-request-id')).toMatch(/.+/);
    // The stream is still open (it ends, and is billed, only at the upstream's idle timeout): the head came on its own.
    expect(await rows(res)).toHaveLength(0);
    ac.abort();
  });
});
