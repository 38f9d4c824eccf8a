// Images through the gateway: the official openai SDK on v1 generations and edits, fetch on the v3 (compat) routes,
// multipart edits streamed with only `model` rewritten, the 16-image and 64 MiB limits, and exact billing.
import { randomBytes } from 'node:crypto';
import OpenAI, { toFile } from 'openai';
import type { APIError } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { UsageReport } from '../../gateway/ledger/report-types.ts';
import { parseMultipart } from '../upstream/images.ts';
import { IMAGE_TOKENS, TINY_PNG } from '../upstream/server.ts';
import type { TestPrices } from '../support/expected-cost.ts';
import { expectedCost, sumDecimals } from '../support/expected-cost.ts';
import type { TestGateway } from '../support/gateway.ts';
import { PROVIDER_SECRET, startTestGateway } from '../support/gateway.ts';
import type { Json } from '../support/http.ts';
import { readJson } from '../support/http.ts';

/** pricing group image-tokens (5 / 40 points per million) at acme's 0.9 discount. */
const IMAGES_ACME: TestPrices = { input: 5000n, output: 40000n, cacheRead: 0n, cacheWrite: 0n, discountNum: 9n, discountDen: 10n };
const LIMIT = 64 * 1024 * 1024;

interface Billed {
  cost: string;
  images: number;
}

const png = (extra = 0) => Buffer.concat([TINY_PNG, randomBytes(extra)]);
const costOf = (u: { input_tokens?: number; output_tokens?: number }) => expectedCost({ input: u.input_tokens ?? 0, output: u.output_tokens ?? 0 }, IMAGES_ACME).cost;

describe('images through the gateway', () => {
  let t: TestGateway;
  let client: OpenAI;
  const billed: Billed[] = [];
  const from = new Date(Date.now() - 60_000).toISOString();

  beforeAll(async () => {
    t = await startTestGateway();
    client = new OpenAI({ baseURL: `${t.url}/api/v1`, apiKey: t.keys.acme, maxRetries: 0 });
  });
  afterAll(async () => t?.close());

  const lastUpstream = () => t.upstream.requests.at(-1)!;
  async function upstreamForm() {
    const req = lastUpstream();
    return parseMultipartFiles(req.body, String(req.headers['content-type']));
  }

  describe('v1 generations (openai SDK)', () => {
    it('generates images, maps the model, tells the cost and bills input and output tokens', async () => {
      t.upstream.reset();
      const { data, response } = await client.images
        .generate({ model: 'openai/gpt-image-1', prompt: 'A lighthouse at dusk', n: 2, quality: 'low', size: '1024x1024' })
        .withResponse();
      expect(data.data).toHaveLength(2);
      expect(data.data![0].b64_json).toBeTruthy();
      expect(data.usage!.output_tokens).toBeGreaterThan(0);
      const req = lastUpstream();
      expect(req.path).toBe('/v1/images/generations');
      expect((req.json as Json).model).toBe('gpt-image-1');
      expect((req.json as Json).quality).toBe('low');
      expect(req.headers.authorization).toBe(`Bearer ${PROVIDER_SECRET}`);
      const cost = response.headers.get('x-tollgate-cost-points')!;
      expect(cost).toBe(costOf(data.usage!));
      billed.push({ cost, images: 2 });
    });

    it('streams partial images and the completed image; the row is billed from the completed event', async () => {
      const stream = await client.images.generate({ model: 'gpt-image-1', prompt: 'A red kite', stream: true, partial_images: 2 });
      const types: string[] = [];
      let completed: OpenAI.ImageGenCompletedEvent | undefined;
      for await (const ev of stream) {
        types.push(ev.type);
        if (ev.type === 'image_generation.completed') completed = ev;
      }
      expect(types).toEqual(['image_generation.partial_image', 'image_generation.partial_image', 'image_generation.completed']);
      expect(completed!.b64_json).toBeTruthy();
      billed.push({ cost: costOf(completed!.usage), images: 1 });
      await expectLastRow({ cost: costOf(completed!.usage), images: 1, stream: true });
    });

    it('refuses partial_images without stream: true, and a model without the images protocol', async () => {
      const err = await client.images.generate({ model: 'gpt-image-1', prompt: 'x', partial_images: 1 }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(OpenAI.BadRequestError);
      expect((err as APIError).error).toMatchObject({ type: 'invalid_request_error', param: 'partial_images' });
      const other = await client.images.generate({ model: 'gpt-4o-mini', prompt: 'x' }).catch((e: unknown) => e);
      expect((other as APIError).status).toBe(400);
      expect((other as APIError).code).toBe('unsupported_protocol');
      const noPrompt = await post('/api/v1/images/generations', { model: 'gpt-image-1' });
      expect(noPrompt.status).toBe(400);
      expect((await readJson(noPrompt)).error.param).toBe('prompt');
    });
  });

  describe('v1 edits (openai SDK, multipart streamed through)', () => {
    it('edits one image with model first: only model is rewritten, the file arrives intact', async () => {
      t.upstream.reset();
      const image = png(200_000);
      const { data, response } = await client.images
        .edit({ model: 'openai/gpt-image-1', image: await toFile(image, 'photo.png', { type: 'image/png' }), prompt: 'Add a hat', quality: 'low' })
        .withResponse();
      expect(data.data).toHaveLength(1);
      expect(data.usage!.input_tokens_details.image_tokens).toBe(IMAGE_TOKENS);
      const form = await upstreamForm();
      expect(form.fields).toMatchObject({ model: 'gpt-image-1', prompt: 'Add a hat', quality: 'low' });
      expect(form.files).toHaveLength(1);
      expect(form.files[0]).toMatchObject({ name: 'image', filename: 'photo.png' });
      expect(form.files[0].data.equals(image)).toBe(true);
      // The gateway sent an exact length: the client's, less its model name, plus the upstream's.
      expect(Number(lastUpstream().headers['content-length'])).toBe(lastUpstream().body.length);
      const cost = response.headers.get('x-tollgate-cost-points')!;
      expect(cost).toBe(costOf(data.usage!));
      billed.push({ cost, images: 1 });
    });

    it('edits 16 images with a mask', async () => {
      t.upstream.reset();
      const images = Array.from({ length: 16 }, () => png(20_000));
      const mask = png(1000);
      const { data, response } = await client.images
        .edit({
          model: 'gpt-image-1',
          image: await Promise.all(images.map((b, i) => toFile(b, `in-${i}.png`, { type: 'image/png' }))),
          mask: await toFile(mask, 'mask.png', { type: 'image/png' }),
          prompt: 'Make them one collage',
        })
        .withResponse();
      expect(data.usage!.input_tokens_details.image_tokens).toBe(16 * IMAGE_TOKENS);
      const form = await upstreamForm();
      expect(form.fields.model).toBe('gpt-image-1');
      const sent = form.files.filter((f) => f.name === 'image[]');
      expect(sent.map((f) => f.filename)).toEqual(images.map((_, i) => `in-${i}.png`));
      expect(sent.every((f, i) => f.data.equals(images[i]))).toBe(true);
      expect(form.files.find((f) => f.name === 'mask')!.data.equals(mask)).toBe(true);
      const cost = response.headers.get('x-tollgate-cost-points')!;
      expect(cost).toBe(costOf(data.usage!));
      billed.push({ cost, images: 1 });
    });

    it('forwards intact an edit whose model comes after 3 MB of images (spooled to disk first)', async () => {
      t.upstream.reset();
      const images = [png(1_500_000), png(1_500_000)];
      const f = new FormData();
      f.append('prompt', 'Blend');
      for (const [i, b] of images.entries()) f.append('image', new Blob([b], { type: 'image/png' }), `${i}.png`);
      f.append('model', 'openai/gpt-image-1');
      const res = await fetch(`${t.url}/api/v1/images/edits`, { method: 'POST', headers: { authorization: `Bearer ${t.keys.acme}` }, body: f });
      expect(res.status).toBe(200);
      const form = await upstreamForm();
      expect(form.fields).toEqual({ prompt: 'Blend', model: 'gpt-image-1' });
      expect(form.files.map((x) => x.data.equals(images[Number(x.filename[0])]))).toEqual([true, true]);
      const body = await readJson(res);
      expect(body.usage.input_tokens_details.image_tokens).toBe(2 * IMAGE_TOKENS);
      billed.push({ cost: res.headers.get('x-tollgate-cost-points')!, images: 1 });
    });

    it('streams an edit (image_edit events) when the form asks for it', async () => {
      const stream = await client.images.edit({ model: 'gpt-image-1', image: await toFile(png(10), 'a.png', { type: 'image/png' }), prompt: 'Sketch it', stream: true, partial_images: 1 });
      const types: string[] = [];
      let completed: OpenAI.ImageEditCompletedEvent | undefined;
      for await (const ev of stream) {
        types.push(ev.type);
        if (ev.type === 'image_edit.completed') completed = ev;
      }
      expect(types).toEqual(['image_edit.partial_image', 'image_edit.completed']);
      billed.push({ cost: costOf(completed!.usage), images: 1 });
      await expectLastRow({ cost: costOf(completed!.usage), images: 1, stream: true });
    });

    it('refuses a 17th image (model first or last) with a 400 and keeps serving', async () => {
      const files = await Promise.all(Array.from({ length: 17 }, (_, i) => toFile(png(50_000), `${i}.png`, { type: 'image/png' })));
      t.upstream.reset();
      const last = await client.images.edit({ image: files, prompt: 'too many', model: 'gpt-image-1' }).catch((e: unknown) => e);
      expect(last).toBeInstanceOf(OpenAI.BadRequestError);
      expect((last as APIError).error).toMatchObject({ type: 'invalid_request_error', param: 'image' });
      expect(t.upstream.requests).toHaveLength(0);
      const first = await client.images.edit({ model: 'gpt-image-1', image: files, prompt: 'too many' }).catch((e: unknown) => e);
      expect(first).toBeInstanceOf(OpenAI.BadRequestError);
      expect((first as APIError).message).toMatch(/At most 16 images/);
      await expectServing();
    });

    it('refuses partial_images without stream in a form too', async () => {
      const err = await client.images.edit({ model: 'gpt-image-1', image: await toFile(png(), 'a.png'), prompt: 'x', partial_images: 1 }).catch((e: unknown) => e);
      expect((err as APIError).status).toBe(400);
      expect((err as APIError).error).toMatchObject({ param: 'partial_images' });
    });

    it('refuses a 65 MB body with 413 from its Content-Length, and from the running count of a chunked body', async () => {
      const big = new Uint8Array(65 * 1024 * 1024);
      const form = new FormData();
      form.append('model', 'gpt-image-1');
      form.append('prompt', 'huge');
      form.append('image', new Blob([big], { type: 'image/png' }), 'big.png');
      const sized = await fetch(`${t.url}/api/v1/images/edits`, { method: 'POST', headers: { authorization: `Bearer ${t.keys.acme}` }, body: form });
      expect(sized.status).toBe(413);
      const body = await readJson(sized);
      expect(body.error).toMatchObject({ type: 'invalid_request_error', code: 'REQUEST_TOO_LARGE' });
      expect(body.error.message).toContain('request body is too large');

      // Same bytes without a length: the gateway counts as they come and stops at 64 MiB.
      const encoded = new Response(form);
      const chunked = await fetch(`${t.url}/api/v1/images/edits`, {
        method: 'POST',
        headers: { authorization: `Bearer ${t.keys.acme}`, 'content-type': encoded.headers.get('content-type')! },
        body: encoded.body,
        duplex: 'half',
      } as RequestInit);
      expect(chunked.status).toBe(413);
      expect((await readJson(chunked)).error.code).toBe('REQUEST_TOO_LARGE');
      await expectServing();
    });

    it('takes the JSON edits body too (images as URLs), with the same 16-image rule', async () => {
      t.upstream.reset();
      const images = Array.from({ length: 16 }, () => ({ image_url: `data:image/png;base64,${TINY_PNG.toString('base64')}` }));
      const res = await post('/api/v1/images/edits', { model: 'openai/gpt-image-1', prompt: 'Tile them', images });
      expect(res.status).toBe(200);
      const body = await readJson(res);
      expect(body.usage.input_tokens_details.image_tokens).toBe(16 * IMAGE_TOKENS);
      expect(lastUpstream().json).toMatchObject({ model: 'gpt-image-1', prompt: 'Tile them' });
      billed.push({ cost: res.headers.get('x-tollgate-cost-points')!, images: 1 });
      const tooMany = await post('/api/v1/images/edits', { model: 'gpt-image-1', prompt: 'x', images: [...images, images[0]] });
      expect(tooMany.status).toBe(400);
      expect((await readJson(tooMany)).error.param).toBe('images');
    });

    it('answers 502 when the upstream cannot be reached, while the client is still uploading', async () => {
      const err = await client.images.edit({ model: 'openai/image-unreachable', image: await toFile(png(3_000_000), 'a.png', { type: 'image/png' }), prompt: 'x' }).catch((e: unknown) => e);
      expect((err as APIError).status).toBe(502);
      expect((err as APIError).code).toBe('upstream_unavailable');
      await expectServing();
    });

    it('answers multipart errors in the chat shape: no boundary, no model, unknown model', async () => {
      const noBoundary = await fetch(`${t.url}/api/v1/images/edits`, { method: 'POST', headers: { authorization: `Bearer ${t.keys.acme}`, 'content-type': 'multipart/form-data' }, body: 'x' });
      expect(noBoundary.status).toBe(400);
      const f = new FormData();
      f.append('prompt', 'p');
      f.append('image', new Blob([TINY_PNG]), 'a.png');
      const noModel = await fetch(`${t.url}/api/v1/images/edits`, { method: 'POST', headers: { authorization: `Bearer ${t.keys.acme}` }, body: f });
      expect(noModel.status).toBe(400);
      expect((await readJson(noModel)).error.param).toBe('model');
      f.append('model', 'no-such-model');
      const unknown = await fetch(`${t.url}/api/v1/images/edits`, { method: 'POST', headers: { authorization: `Bearer ${t.keys.acme}` }, body: f });
      expect(unknown.status).toBe(404);
      expect((await readJson(unknown)).error.code).toBe('model_not_found');
      const noKey = await fetch(`${t.url}/api/v1/images/edits`, { method: 'POST', body: f });
      expect(noKey.status).toBe(401);
    });
  });

  describe('v3 (compat style, Ark-shaped upstream)', () => {
    it('generates with response_format url and b64_json, billed from the upstream usage', async () => {
      t.upstream.reset();
      const res = await post('/api/v3/images/generations', { model: 'seedream-4', prompt: 'A quiet harbour', size: '2K', response_format: 'url' });
      expect(res.status).toBe(200);
      const body = await readJson(res);
      expect(body.created).toBeTypeOf('number');
      expect(body.data[0].url).toMatch(/^http/);
      expect((lastUpstream().json as Json).model).toBe('doubao-seedream-4-0-250828');
      expect(lastUpstream().path).toBe('/api/v3/images/generations');
      const cost = res.headers.get('x-tollgate-cost-points')!;
      expect(cost).toBe(costOf(body.usage));
      billed.push({ cost, images: 1 });

      const b64 = await post('/api/v3/images/generations', { model: 'seedream-4', prompt: 'Same, inline', size: '1K', response_format: 'b64_json' });
      const b64Body = await readJson(b64);
      expect(b64Body.data[0].b64_json).toBeTruthy();
      billed.push({ cost: b64.headers.get('x-tollgate-cost-points')!, images: 1 });
    });

    it('passes an Ark group stream through to its [DONE] and bills every image', async () => {
      const res = await post('/api/v3/images/generations', { model: 'seedream-4', prompt: 'Four seasons', sequential_image_generation: 'auto', sequential_image_generation_options: { max_images: 3 }, stream: true });
      expect(res.headers.get('content-type')).toContain('text/event-stream');
      const text = await res.text();
      expect(text.match(/event: image_generation.partial_succeeded/g)).toHaveLength(3);
      expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true);
      const usage = JSON.parse(text.split('\n').find((l) => l.includes('"image_generation.completed"'))!.slice(6)).usage;
      billed.push({ cost: costOf(usage), images: 3 });
      await expectLastRow({ cost: costOf(usage), images: 3, stream: true });
    });

    it('answers bad sizes and formats in the compat shape', async () => {
      const size = await post('/api/v3/images/generations', { model: 'seedream-4', prompt: 'x', size: '4K' });
      expect(size.status).toBe(400);
      const body = await readJson(size);
      expect(body.error).toMatchObject({ code: 'invalid_request', param: 'size', type: 'BadRequest' });
      expect(body.error.message).toContain('1K, 2K, 2048x2048');
      const fmt = await post('/api/v3/images/generations', { model: 'seedream-4', prompt: 'x', response_format: 'png' });
      expect((await readJson(fmt)).error).toMatchObject({ param: 'response_format', type: 'BadRequest' });
      const partial = await post('/api/v3/images/generations', { model: 'seedream-4', prompt: 'x', partial_images: 2 });
      expect((await readJson(partial)).error.param).toBe('partial_images');
    });

    it('edits through /api/v3/images/edits and answers its limits in the compat shape', async () => {
      const f = new FormData();
      f.append('model', 'gpt-image-1');
      f.append('prompt', 'v3 edit');
      f.append('image[]', new Blob([png(5000)], { type: 'image/png' }), 'a.png');
      const res = await fetch(`${t.url}/api/v3/images/edits`, { method: 'POST', headers: { authorization: `Bearer ${t.keys.acme}` }, body: f });
      expect(res.status).toBe(200);
      const body = await readJson(res);
      billed.push({ cost: res.headers.get('x-tollgate-cost-points')!, images: 1 });
      expect(res.headers.get('x-tollgate-cost-points')).toBe(costOf(body.usage));
      for (let i = 0; i < 16; i++) f.append('image[]', new Blob([TINY_PNG], { type: 'image/png' }), `${i}.png`);
      const tooMany = await fetch(`${t.url}/api/v3/images/edits`, { method: 'POST', headers: { authorization: `Bearer ${t.keys.acme}` }, body: f });
      expect(tooMany.status).toBe(400);
      expect((await readJson(tooMany)).error).toMatchObject({ code: 'invalid_request', param: 'image', type: 'BadRequest' });
    });
  });

  it('the usage report equals the sum of what each answer said it cost, with every image counted', async () => {
    await t.gw.ledger.flush();
    const to = new Date(Date.now() + 60_000).toISOString();
    const res = await fetch(`${t.url}/api/business/v1/customer/usage?from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}`, { headers: { authorization: `Bearer ${t.keys.acme}` } });
    expect(res.status).toBe(200);
    const report = (await res.json()) as UsageReport;
    expect(billed.length).toBeGreaterThanOrEqual(10);
    expect(report.totals.request_count).toBe(billed.length);
    expect(report.totals.cost_points).toBe(sumDecimals(billed.map((b) => b.cost)));
    expect(report.totals.generated_artifacts).toBe(billed.reduce((a, b) => a + b.images, 0));
    expect(report.by_model.map((m) => m.model).sort()).toEqual(['gpt-image-1', 'openai/gpt-image-1', 'seedream-4']);
  });

  async function post(path: string, body: unknown): Promise<Response> {
    return fetch(`${t.url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${t.keys.acme}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  }

  async function expectServing(): Promise<void> {
    const { data, response } = await client.images.generate({ model: 'gpt-image-1', prompt: 'still here?' }).withResponse();
    expect(data.data).toHaveLength(1);
    billed.push({ cost: response.headers.get('x-tollgate-cost-points')!, images: 1 });
  }

  async function expectLastRow(want: { cost: string; images: number; stream: boolean }): Promise<void> {
    await t.gw.ledger.flush();
    const rows = await t.gw.store.query<{ cost_points: string; artifacts: string; stream: boolean; estimated: boolean }>(
      'SELECT cost_points::text, artifacts::text, stream, estimated FROM usage_events ORDER BY occurred_at DESC, request_id DESC LIMIT 1',
    );
    expect(rows.rows[0]).toEqual({ cost_points: want.cost, artifacts: String(want.images), stream: want.stream, estimated: false });
  }
});

async function parseMultipartFiles(raw: Buffer, contentType: string) {
  const { fields } = await parseMultipart(raw, contentType);
  const files = await filesOf(raw, contentType);
  return { fields: fields as Record<string, string>, files };
}

async function filesOf(raw: Buffer, contentType: string): Promise<{ name: string; filename: string; data: Buffer }[]> {
  const { default: busboy } = await import('busboy');
  return new Promise((resolve, reject) => {
    const files: { name: string; filename: string; data: Buffer }[] = [];
    const bb = busboy({ headers: { 'content-type': contentType }, limits: { fileSize: LIMIT } });
    bb.on('file', (name, stream, info) => {
      const parts: Buffer[] = [];
      stream.on('data', (d: Buffer) => parts.push(d));
      stream.on('end', () => files.push({ name, filename: info.filename ?? '', data: Buffer.concat(parts) }));
    });
    bb.on('close', () => resolve(files));
    bb.on('error', reject);
    bb.end(raw);
  });
}
