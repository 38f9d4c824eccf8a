// A client that leaves mid-stream in normal operation is billed for what was streamed: with `onClientDisconnect:
// continue` (the default) the relay reads the upstream to its end and bills the usage it reports; with `abort` it
// stops at once and bills an estimate of what it relayed, flagged estimated.
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

/** Opens a slow stream, reads its first chunk, then leaves; resolves with the request id. */
async function leaveMidStream(model: string): Promise<string> {
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
  const first = await reader.read();
  expect(first.done).toBe(false);
  ac.abort();
  await reader.closed.catch(() => undefined);
  return id;
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
    const id = await leaveMidStream('gpt-4o-mini');
    const row = await rowOf(id);
    expect(row.estimated).toBe(false);
    expect(Number(row.output)).toBeGreaterThan(0);
    expect(row.cost_points).not.toBe('0');
  }, 30_000);

  it('abort: the upstream is cut and what was relayed is billed, flagged estimated', async () => {
    const id = await leaveMidStream('openai/abort-on-leave');
    const row = await rowOf(id);
    expect(row.estimated).toBe(true);
    expect(Number(row.input)).toBeGreaterThan(0);
    expect(Number(row.output)).toBeGreaterThan(0);
    expect(row.cost_points).not.toBe('0');
  }, 30_000);
});
