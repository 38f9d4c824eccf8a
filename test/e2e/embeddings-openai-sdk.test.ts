// Embeddings through the official OpenAI SDK: pass-through with only `model` rewritten, base64 untouched, billed as
// input tokens from usage.prompt_tokens, reported per model. Also models.retrieve with the list's visibility.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { UsageReport } from '../../gateway/ledger/report-types.ts';
import { expectedCost, MINI_ACME } from '../support/expected-cost.ts';
import type { TestGateway } from '../support/gateway.ts';
import { startTestGateway } from '../support/gateway.ts';
import { base64Embedding, fakeEmbedding } from '../upstream/embeddings.ts';

let t: TestGateway;
let client: OpenAI;
const from = new Date(Date.now() - 60_000).toISOString();
beforeAll(async () => {
  t = await startTestGateway();
  client = new OpenAI({ baseURL: `${t.url}/api/v1`, apiKey: t.keys.acme, maxRetries: 0 });
});
afterAll(async () => t?.close());

async function rowOf(requestId: string): Promise<{ input: string; output: string; cost_points: string; endpoint: string; client_model: string }> {
  await t.gw.ledger.flush();
  const r = await t.gw.store.query<{ input: string; output: string; cost_points: string; endpoint: string; client_model: string }>(
    'SELECT input::text, output::text, cost_points::text, endpoint, client_model FROM usage_events WHERE request_id = $1',
    [requestId],
  );
  expect(r.rows).toHaveLength(1);
  return r.rows[0];
}

describe('POST /api/v1/embeddings', () => {
  it('the SDK gets its vectors (it asks for base64 and decodes them), billed as input tokens', async () => {
    const { data: res, response } = await client.embeddings.create({ model: 'text-embedding-3-small', input: ['The food was delicious', 'and the waiter'] }).withResponse();
    expect(res.data.map((d) => d.embedding)).toEqual([fakeEmbedding('The food was delicious'), fakeEmbedding('and the waiter')]);
    expect(res.usage.prompt_tokens).toBeGreaterThan(0);
    const up = t.upstream.requests.at(-1)!;
    expect(up.path).toBe('/v1/embeddings');
    expect(up.json).toMatchObject({ model: 'text-embedding-3-small', input: ['The food was delicious', 'and the waiter'] });
    expect(up.headers.authorization).not.toContain(t.keys.acme);
    const row = await rowOf(response.headers.get('x-tollgate-request-id')!);
    expect(row).toMatchObject({ input: String(res.usage.prompt_tokens), output: '0', endpoint: '/api/v1/embeddings', client_model: 'text-embedding-3-small' });
    expect(row.cost_points).toBe(expectedCost({ input: res.usage.prompt_tokens, output: 0 }, MINI_ACME).cost);
    expect(response.headers.get('x-tollgate-cost-points')).toBe(row.cost_points);
  });

  it('base64 passes through untouched, byte for byte; only model was rewritten upstream', async () => {
    const body = '{"input":"hello world","model":"openai/text-embedding-3-small","encoding_format":"base64","dimensions":4}';
    const res = await fetch(`${t.url}/api/v1/embeddings`, { method: 'POST', headers: { authorization: `Bearer ${t.keys.acme}`, 'content-type': 'application/json' }, body });
    expect(res.status).toBe(200);
    const json = (await res.json()) as { data: { embedding: string }[]; model: string };
    expect(json.data[0].embedding).toBe(base64Embedding(fakeEmbedding('hello world', 4)));
    expect(t.upstream.requests.at(-1)!.body.toString()).toBe('{"input":"hello world","model":"text-embedding-3-small","encoding_format":"base64","dimensions":4}');
  });

  it('an openai chat model serves embeddings too, also under /api/v0', async () => {
    const v0 = new OpenAI({ baseURL: `${t.url}/api/v0`, apiKey: t.keys.acme, maxRetries: 0 });
    const res = await v0.embeddings.create({ model: 'gpt-4o-mini', input: 'x', encoding_format: 'float' });
    expect(res.data[0].embedding).toEqual(fakeEmbedding('x'));
    expect(t.upstream.requests.at(-1)!.json).toMatchObject({ model: 'gpt-4o-mini-2024-07-18' });
  });

  it('errors are in the chat shape: no input, unknown model, a model without openai or embeddings', async () => {
    await expect(client.embeddings.create({ model: 'text-embedding-3-small' } as never)).rejects.toMatchObject({ status: 400, code: 'invalid_request' });
    await expect(client.embeddings.create({ model: 'nope/none', input: 'x' })).rejects.toMatchObject({ status: 404, code: 'model_not_found' });
    await expect(client.embeddings.create({ model: 'anthropic/claude', input: 'x' })).rejects.toMatchObject({ status: 400, code: 'unsupported_protocol' });
  });

  it('the usage report shows the embeddings model with its input tokens and points', async () => {
    await t.gw.ledger.flush();
    const res = await fetch(`${t.url}/api/business/v1/customer/usage?from=${encodeURIComponent(from)}&to=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`, { headers: { authorization: `Bearer ${t.keys.acme}` } });
    const report = (await res.json()) as UsageReport;
    const rows = await t.gw.store.query<{ client_model: string; input: string; cost_points: string }>("SELECT client_model, input::text, cost_points::text FROM usage_events WHERE project = 'web' AND endpoint LIKE '%/embeddings'");
    for (const model of ['text-embedding-3-small', 'openai/text-embedding-3-small']) {
      const mine = rows.rows.filter((r) => r.client_model === model);
      const line = report.by_model.find((m) => m.model === model)!;
      expect(line.billable_prompt_tokens).toBe(mine.reduce((a, r) => a + Number(r.input), 0));
      expect(line.completion_tokens).toBe(0);
      expect(line.request_count).toBe(mine.length);
    }
  });
});

describe('GET /api/v1/models/{id}', () => {
  it('models.retrieve answers a model the key may call, by id or alias', async () => {
    const m = await client.models.retrieve('openai/gpt-4o-mini');
    expect(m).toMatchObject({ id: 'openai/gpt-4o-mini', object: 'model', created: 1721172741, owned_by: 'system' });
    expect((await client.models.retrieve('gpt-4o-mini')).id).toBe('openai/gpt-4o-mini');
    const raw = await fetch(`${t.url}/api/v1/models/openai/gpt-4o-mini`, { headers: { authorization: `Bearer ${t.keys.acme}` } });
    expect(raw.status).toBe(200);
  });

  it('with the list\'s visibility: another org\'s model and a private one without a key are 404', async () => {
    const globex = new OpenAI({ baseURL: `${t.url}/api/v1`, apiKey: t.keys.globex, maxRetries: 0 });
    await expect(globex.models.retrieve('anthropic/claude')).rejects.toMatchObject({ status: 404, code: 'model_not_found' });
    const anon = await fetch(`${t.url}/api/v1/models/openai%2Ftiered`);
    expect(anon.status).toBe(404);
    const pub = await fetch(`${t.url}/api/v1/models/openai%2Fgpt-4o-mini`);
    expect(pub.status).toBe(200);
  });
});
