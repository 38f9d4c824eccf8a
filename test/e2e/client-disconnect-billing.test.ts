// A client that leaves mid-stream in normal operation is billed for what was streamed: with `onClientDisconnect:
// continue` (the default) the relay reads the upstream to its end and bills the usage it reports; with `abort` it
// stops at once and bills an estimate of the content it relayed (UTF-8 bytes / 4), flagged estimated.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestGateway } from '../support/gateway.ts';
import { startTestGateway } from '../support/gateway.ts';

let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway({
    config: (c) => ({
      ...c,
      providers: [...c.providers!, { ...c.providers![0], id: 'fake-abort', onClientDisconnect: 'abort' }],
      models: [...c.models!, { id: 'openai/abort-on-leave', pricingGroup: 'mini', protocols: { openai: [{ provider: 'fake-abort', model: 'gpt-4o-mini-2024-07-18' }] } }],
    }),
  });
});
afterAll(async () => t?.close());

/** UTF-8 bytes of the chat deltas' text in SSE bytes a client received. */
function contentBytesOf(sse: string): number {
  let n = 0;
  for (const line of sse.split('\n')) {
    if (!line.startsWith('data: {')) continue;
    for (const c of JSON.parse(line.slice(6)).choices ?? []) n += Buffer.byteLength(c.delta?.content ?? '');
  }
  return n;
}

/** Opens a slow stream, reads until some text arrived, then leaves; resolves with the request id and that text's bytes. */
async function leaveMidStream(model: string): Promise<{ id: string; content: number }> {
  const ac = new AbortController();
  const res = await fetch(`${t.url}/api/v1/chat/completions`, {
    method: 'POST',
    signal: ac.signal,
    headers: { authorization: `Bearer ${t.keys.acme}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model, stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'a long story' }], metadata: { fake: 'slow-stream', delay_ms: 150 } }),
  });
  expect(res.status).toBe(200);
  const id = res.headers.get('x-tollgate-request-id')!;
  const reader = res.body!.getReader();
  let seen = '';
  // The first chunk names the role with empty content: read on to the first text.
  while (contentBytesOf(seen) === 0 || !seen.endsWith('\n\n')) {
    const r = await reader.read();
    expect(r.done).toBe(false);
    seen += Buffer.from(r.value!).toString();
  }
  ac.abort();
  await reader.closed.catch(() => undefined);
  return { id, content: contentBytesOf(seen) };
}

interface Row {
  estimated: boolean;
  input: string;
  output: string;
  cost_points: string;
}

async function rowOf(id: string): Promise<Row> {
  const until = Date.now() + 15_000;
  for (;;) {
    const r = await t.gw.store.query<Row>('SELECT estimated, input::text AS input, output::text AS output, cost_points::text FROM usage_events WHERE request_id = $1', [id]);
    if (r.rows.length > 0) {
      expect(r.rows).toHaveLength(1);
      return r.rows[0];
    }
    if (Date.now() > until) throw new Error(`no ledger row for ${id}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('a client that leaves mid-stream', () => {
  it('continue: the upstream is read to its end and its reported usage billed', async () => {
    const { id } = await leaveMidStream('gpt-4o-mini');
    const row = await rowOf(id);
    expect(row.estimated).toBe(false);
    expect(Number(row.output)).toBeGreaterThan(0);
    expect(row.cost_points).not.toBe('0');
  }, 30_000);

  it('abort: the upstream is cut and the text relayed is billed, flagged estimated', async () => {
    const { id, content } = await leaveMidStream('openai/abort-on-leave');
    const row = await rowOf(id);
    expect(row.estimated).toBe(true);
    expect(Number(row.input)).toBeGreaterThan(0);
    // The text the client got at 4 bytes a token (the next event comes 150 ms later, after the cut), not the framing.
    expect(Number(row.output)).toBe(Math.ceil(content / 4));
    expect(row.cost_points).not.toBe('0');
  }, 30_000);
});
