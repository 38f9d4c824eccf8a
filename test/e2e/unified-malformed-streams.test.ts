// A malformed upstream stream (truncated JSON, an unknown event, no message_stop, no finishReason, an in-band error) ends the
// chat stream with a `data: {"error": ...}` event the openai SDK raises on; the request is billed with what the upstream
// had reported, and the gateway keeps serving.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestGateway } from '../support/gateway.ts';
import { startTestGateway } from '../support/gateway.ts';
import { readFixture } from '../support/golden-files.ts';
import { expectValidChatStream } from '../support/openai-schema.ts';

let t: TestGateway;
let client: OpenAI;
const ids: string[] = [];
beforeAll(async () => {
  t = await startTestGateway();
  client = new OpenAI({
    baseURL: `${t.url}/api/v0`,
    apiKey: t.keys.acme,
    maxRetries: 0,
    fetch: async (url, init) => {
      const res = await fetch(url, init);
      ids.push(res.headers.get('x-tollgate-request-id') ?? '');
      return res;
    },
  });
});
afterAll(async () => t?.close());

async function lastRow(): Promise<{ input: number; output: number; cache_read: number; estimated: boolean; stream: boolean }> {
  await t.gw.ledger.flush();
  const r = await t.gw.store.query<{ input: number; output: number; cache_read: number; estimated: boolean; stream: boolean }>(
    'SELECT input::int, output::int, cache_read::int, estimated, stream FROM usage_events WHERE request_id = $1',
    [ids.at(-1)],
  );
  expect(r.rows).toHaveLength(1);
  return r.rows[0];
}

// Upstream bytes from the converter fixtures, replayed by the fake upstream as its answer. Without a message_delta
// (Anthropic) or a candidatesTokenCount (Gemini) the output is estimated from the text the upstream streamed, at
// UTF-8 bytes / 4, and the row says it is estimated: "Hello" (5 bytes) is 2, "Hello" twice 3 (the upstream sent both
// although the converter refused the stream at the first), "The sky" 2. Never message_start's placeholder 1.
const CASES = [
  { upstream: 'anthropic', model: 'anthropic/claude', path: '/messages', file: 'messages-stream-to-chat/bad-truncated-json', message: /not valid JSON/, billed: { input: 12, cache_read: 3, output: 3 } },
  { upstream: 'anthropic', model: 'anthropic/claude', path: '/messages', file: 'messages-stream-to-chat/bad-unknown-event', message: /unknown event `content_block_flourish`/, billed: { input: 12, cache_read: 3, output: 3 } },
  { upstream: 'anthropic', model: 'anthropic/claude', path: '/messages', file: 'messages-stream-to-chat/bad-missing-message-stop', message: /ended before message_stop/, billed: { input: 12, cache_read: 3, output: 3 } },
  { upstream: 'anthropic', model: 'anthropic/claude', path: '/messages', file: 'messages-stream-to-chat/bad-delta-before-start', message: /before message_start/, billed: { input: 12, cache_read: 3, output: 3, estimated: true } },
  { upstream: 'anthropic', model: 'anthropic/claude', path: '/messages', file: 'messages-stream-to-chat/error-event', message: /^Overloaded$/, billed: { input: 12, cache_read: 3, output: 2, estimated: true } },
  { upstream: 'gemini', model: 'gemini-2.5-flash', path: ':streamGenerateContent', file: 'gemini-stream-to-chat/bad-no-finish', message: /ended before a finishReason/, billed: { input: 8, cache_read: 0, output: 2, estimated: true } },
  { upstream: 'gemini', model: 'gemini-2.5-flash', path: ':streamGenerateContent', file: 'gemini-stream-to-chat/bad-truncated-json', message: /not valid JSON/, billed: { input: 8, cache_read: 0, output: 2, estimated: true } },
  { upstream: 'gemini', model: 'gemini-2.5-flash', path: ':streamGenerateContent', file: 'gemini-stream-to-chat/error-chunk', message: /internal error/, billed: { input: 8, cache_read: 0, output: 2, estimated: true } },
];

describe.each(CASES)('$file from a $upstream upstream', (c) => {
  it('raises in the SDK with our message, bills what was reported, and serves the next request', async () => {
    const bytes = readFixture('convert', `${c.file}.in.sse`);
    // Split mid-event so the gateway sees the malformed part in pieces, as a network would deliver it.
    t.upstream.nextResponse({ path: c.path, chunks: [bytes.slice(0, 100), { data: bytes.slice(100), delayMs: 5 }] });
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    const stream = client.chat.completions.stream({ model: c.model, messages: [{ role: 'user', content: 'hello' }] });
    stream.on('chunk', (ch) => chunks.push(ch));
    const err = await stream.finalChatCompletion().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect((err as Error).message).toMatch(c.message);
    const row = await lastRow();
    expect(row).toMatchObject({ ...c.billed, stream: true });

    // The same bytes read raw: schema-valid chunks, one error event last, no [DONE].
    t.upstream.nextResponse({ path: c.path, chunks: [bytes] });
    const res = await fetch(`${t.url}/api/paas/v4/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.keys.acme}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: c.model, stream: true, messages: [{ role: 'user', content: 'hello' }] }),
    });
    expect(res.status).toBe(200);
    const parsed = expectValidChatStream(await res.text());
    expect(parsed.done).toBe(false);
    expect(String(parsed.error?.message)).toMatch(c.message);
    expect(parsed.chunks.length).toBe(chunks.length);

    const ok = await client.chat.completions.create({ model: c.model, messages: [{ role: 'user', content: 'still there?' }] });
    expect(ok.choices[0].message.content).toBe('echo: still there?');
  });
});

it('an upstream that answers a stream request with plain JSON is converted as JSON', async () => {
  t.upstream.nextResponse({ path: '/messages', body: JSON.parse(readFixture('convert', 'messages-response-to-chat/stop-sequence.in.json')) });
  const res = await fetch(`${t.url}/api/v0/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${t.keys.acme}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'anthropic/claude', stream: true, messages: [{ role: 'user', content: 'count' }] }),
  });
  expect(res.status).toBe(200);
  const body = (await res.json()) as OpenAI.ChatCompletion;
  expect(body.choices[0].message.content).toBe('One, two');
});
