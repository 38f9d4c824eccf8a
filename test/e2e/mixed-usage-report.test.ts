// Issue 4's closing check: after a mixed run over every billed surface, the usage report equals the sum of
// what each response's x-tollgate-cost-points header said, to the last decimal.
import OpenAI, { toFile } from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { UsageReport } from '../../gateway/ledger/report-types.ts';
import { sumDecimals } from '../support/expected-cost.ts';
import type { TestGateway } from '../support/gateway.ts';
import { startTestGateway } from '../support/gateway.ts';
import { TINY_PNG } from '../upstream/server.ts';

let t: TestGateway;
const costs: string[] = [];
const from = new Date(Date.now() - 60_000).toISOString();

beforeAll(async () => {
  t = await startTestGateway();
});
afterAll(async () => t?.close());

function cost(headers: Headers): string {
  const c = headers.get('x-tollgate-cost-points');
  if (c === null) throw new Error('no cost header');
  expect(c).toMatch(/^\d+(\.\d+)?$/);
  return c;
}

describe('a mixed run', () => {
  it('chat, messages, unified, responses, images, edits and generateContent each tell their cost', async () => {
    const openai = new OpenAI({ baseURL: `${t.url}/api/v1`, apiKey: t.keys.acme, maxRetries: 0 });
    const unified = new OpenAI({ baseURL: `${t.url}/api/v0`, apiKey: t.keys.acme, maxRetries: 0 });
    const anthropic = new Anthropic({ baseURL: `${t.url}/api`, apiKey: t.keys.acme, maxRetries: 0 });

    costs.push(cost((await openai.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'mixed run: chat' }] }).withResponse()).response.headers));
    costs.push(cost((await anthropic.messages.create({ model: 'anthropic/claude', max_tokens: 64, messages: [{ role: 'user', content: 'mixed run: messages' }] }).withResponse()).response.headers));
    costs.push(cost((await unified.chat.completions.create({ model: 'gemini-2.5-flash', messages: [{ role: 'user', content: 'mixed run: unified' }] }).withResponse()).response.headers));
    costs.push(cost((await openai.responses.create({ model: 'gpt-5-nano', input: 'mixed run: responses' }).withResponse()).response.headers));
    costs.push(cost((await openai.images.generate({ model: 'gpt-image-1', prompt: 'mixed run: a lighthouse' }).withResponse()).response.headers));
    const image = await toFile(TINY_PNG, 'in.png', { type: 'image/png' });
    costs.push(cost((await openai.images.edit({ model: 'gpt-image-1', prompt: 'mixed run: add a hat', image }).withResponse()).response.headers));
    const gen = await fetch(`${t.url}/api/v1/gemini/v1beta/models/gemini-2.5-flash-image:generateContent`, {
      method: 'POST',
      headers: { 'x-goog-api-key': t.keys.acme, 'content-type': 'application/json' },
      body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'mixed run: draw a cat' }] }], generationConfig: { responseModalities: ['TEXT', 'IMAGE'] } }),
    });
    expect(gen.status).toBe(200);
    costs.push(cost(gen.headers));
    expect(costs).toHaveLength(7);
    expect(costs.filter((c) => c !== '0').length).toBe(7);
  });

  it('the usage report equals the sum of the cost headers exactly', async () => {
    await t.gw.ledger.flush();
    const to = new Date(Date.now() + 60_000).toISOString();
    const res = await fetch(`${t.url}/api/business/v1/customer/usage?from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}`, {
      headers: { authorization: `Bearer ${t.keys.acme}` },
    });
    expect(res.status).toBe(200);
    const report = (await res.json()) as UsageReport;
    expect(report.totals.request_count).toBe(7);
    expect(report.totals.cost_points).toBe(sumDecimals(costs));
    expect(sumDecimals(report.by_model.map((m) => m.cost_points))).toBe(report.totals.cost_points);
    expect(report.totals.generated_artifacts).toBeGreaterThanOrEqual(3);
  });
});
