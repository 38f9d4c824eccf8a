// A client that reads a large stream slowly: the gateway holds the upstream while the client's socket is full (it
// neither buffers the answer nor drops bytes), and the stream still arrives byte for byte and is billed as reported.
import { request } from 'node:http';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { TestGateway } from '../support/gateway.ts';
import { startTestGateway } from '../support/gateway.ts';

let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway();
});
afterAll(async () => t?.close());

// 16 MB of content deltas, far more than the loopback socket buffers hold, then usage and [DONE].
const DELTA = `data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"${'x'.repeat(128 * 1024)}"}}]}\n\n`;
const USAGE = 'data: {"id":"c1","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":11,"completion_tokens":2222,"total_tokens":2233}}\n\n';
const EVENTS = [...Array.from({ length: 128 }, () => DELTA), USAGE, 'data: [DONE]\n\n'];

it('a slow reader gets every byte of a large stream and the row carries the upstream usage', async () => {
  t.upstream.nextResponse({ path: '/chat/completions', chunks: EVENTS });
  const { status, id, body } = await new Promise<{ status: number; id: string; body: Buffer }>((resolve, reject) => {
    const req = request(`${t.url}/api/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${t.keys.acme}`, 'content-type': 'application/json' } }, (res) => {
      const parts: Buffer[] = [];
      res.pause();
      // Read in bursts with pauses between them: the gateway's writes back up many times over.
      let n = 0;
      res.on('data', (c: Buffer) => {
        parts.push(c);
        if (++n % 16 === 0) {
          res.pause();
          setTimeout(() => res.resume(), 20);
        }
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, id: String(res.headers['x-tollgate-request-id']), body: Buffer.concat(parts) }));
      res.on('error', reject);
      setTimeout(() => res.resume(), 300);
    });
    req.on('error', reject);
    req.end(JSON.stringify({ model: 'gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'a lot' }] }));
  });
  expect(status).toBe(200);
  expect(body.equals(Buffer.from(EVENTS.join('')))).toBe(true);
  await t.gw.ledger.flush();
  const rows = await t.gw.store.query<{ input: number; output: number; estimated: boolean }>('SELECT input::int, output::int, estimated FROM usage_events WHERE request_id = $1', [id]);
  expect(rows.rows).toEqual([{ input: 11, output: 2222, estimated: false }]);
});
