// The images meter on real wire bytes: OpenAI generation/edit streams, Ark group streams, and JSON bodies.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { imagesReader } from './images.ts';
import { SseTap } from './sse-tap.ts';

const fixture = (p: string) => readFileSync(new URL(`../../test/fixtures/${p}`, import.meta.url));
const ev = (type: string, body: Record<string, unknown>) => `event: ${type}\ndata: ${JSON.stringify({ type, ...body })}\n\n`;
const IMG = { b64_json: 'iVBORw0KGgo=', created_at: 1750000000, size: '1024x1024', quality: 'low', background: 'opaque', output_format: 'png' };
const usage = (input: number, output: number) => ({ total_tokens: input + output, input_tokens: input, output_tokens: output, input_tokens_details: { text_tokens: input, image_tokens: 0 } });

/** Feeds the bytes in pieces of `step` bytes, as a socket would split them. */
function meter(bytes: Buffer | string, opts: { n?: number; step?: number } = {}) {
  const buf = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes);
  const tap = new SseTap(imagesReader(() => opts.n ?? 1).stream());
  const step = opts.step ?? buf.length;
  for (let i = 0; i < buf.length; i += step) tap.push(buf.subarray(i, i + step));
  tap.end();
  return { done: tap.meter.done, usage: tap.meter.usage() };
}

describe('images stream meter, OpenAI dialect', () => {
  it('bills the completed event of a generation stream and ignores partial previews', () => {
    const sse = fixture('images/generation-stream.sse');
    const completed = JSON.parse(sse.toString().split('\n\n').find((b) => b.includes('image_generation.completed'))!.split('data: ')[1]);
    for (const step of [sse.length, 7, 64]) {
      const m = meter(sse, { step });
      expect(m.done).toBe(true);
      expect(m.usage.estimated).toBe(false);
      expect(m.usage.artifacts).toBe(1);
      expect(m.usage.input).toBe(completed.usage.input_tokens);
      expect(m.usage.output).toBe(completed.usage.output_tokens);
      expect(m.usage.detail).toEqual(completed.usage);
    }
  });

  it('is final at the completed event, before the stream closes (there is no [DONE])', () => {
    const head = ev('image_generation.partial_image', { ...IMG, partial_image_index: 0 });
    const done = ev('image_generation.completed', { ...IMG, usage: usage(10, 272) });
    const tap = new SseTap(imagesReader().stream());
    tap.push(Buffer.from(head));
    expect(tap.meter.done).toBe(false);
    tap.push(Buffer.from(done));
    expect(tap.meter.done).toBe(true);
  });

  it('meters image_edit events the same way', () => {
    const m = meter(ev('image_edit.partial_image', { ...IMG, partial_image_index: 0 }) + ev('image_edit.completed', { ...IMG, usage: usage(200, 372) }));
    expect(m).toMatchObject({ done: true, usage: { input: 200, output: 372, artifacts: 1, estimated: false } });
  });

  it('waits for one completed event per requested image and adds their usage', () => {
    const one = ev('image_generation.completed', { ...IMG, usage: usage(10, 272) });
    const first = meter(one, { n: 2 });
    expect(first.done).toBe(false);
    const both = meter(one + ev('image_generation.completed', { ...IMG, usage: usage(10, 300) }), { n: 2 });
    expect(both).toMatchObject({ done: true, usage: { input: 20, output: 572, artifacts: 2 } });
  });

  it('reads events sent without event: lines by their data type', () => {
    const sse = `data: ${JSON.stringify({ type: 'image_generation.completed', ...IMG, usage: usage(3, 4) })}\n\n`;
    expect(meter(sse)).toMatchObject({ done: true, usage: { input: 3, output: 4, artifacts: 1 } });
  });

  it('leaves a stream cut before its completed event not final and without billed images', () => {
    const m = meter(ev('image_generation.partial_image', { ...IMG, partial_image_index: 0 }));
    expect(m.done).toBe(false);
    expect(m.usage).toMatchObject({ estimated: true, artifacts: 0, input: 0, output: 0 });
  });

  it('does not count an in-band error as an image', () => {
    const m = meter(`event: error\ndata: {"error":{"message":"boom","type":"server_error"}}\n\n`);
    expect(m).toMatchObject({ done: false, usage: { artifacts: 0, estimated: true } });
  });
});

describe('images stream meter, Ark dialect', () => {
  it('counts partial_succeeded images and bills the closing usage, final before [DONE]', () => {
    const sse = fixture('ark/images-group-stream.sse');
    for (const step of [sse.length, 5, 100]) {
      const m = meter(sse, { step });
      expect(m.done).toBe(true);
      expect(m.usage).toMatchObject({ input: 0, output: 49152, artifacts: 3, estimated: false });
      expect(m.usage.detail).toEqual({ generated_images: 3, output_tokens: 49152, total_tokens: 49152 });
    }
    const text = sse.toString();
    const beforeDone = text.slice(0, text.indexOf('data: [DONE]'));
    expect(meter(beforeDone).done).toBe(true);
  });

  it('does not count a partial_failed image, and the stream goes on', () => {
    const base = { model: 'seedream', created: 1757396757 };
    const sse =
      ev('image_generation.partial_succeeded', { ...base, image_index: 0, url: 'https://x/0.png', size: '2048x2048' }) +
      ev('image_generation.partial_failed', { ...base, image_index: 1, error: { code: 'OutputImageSensitiveContentDetected', message: 'no' } }) +
      ev('image_generation.partial_succeeded', { ...base, image_index: 2, url: 'https://x/2.png', size: '2048x2048' }) +
      ev('image_generation.completed', { ...base, usage: { generated_images: 2, output_tokens: 32448, total_tokens: 32448 } }) +
      'data: [DONE]\n\n';
    expect(meter(sse)).toMatchObject({ done: true, usage: { output: 32448, artifacts: 2 } });
  });

  it('falls back to generated_images when the images themselves were not seen', () => {
    const sse = ev('image_generation.completed', { model: 'm', created: 1, usage: { generated_images: 4, output_tokens: 100, total_tokens: 100 } });
    expect(meter(sse).usage.artifacts).toBe(4);
  });
});

describe('images JSON bodies', () => {
  const { fromJson } = imagesReader();

  it('reads OpenAI usage and counts the images returned', () => {
    const body = JSON.parse(fixture('images/generation.json').toString());
    expect(fromJson(body)).toMatchObject({ input: body.usage.input_tokens, output: body.usage.output_tokens, artifacts: body.data.length, estimated: false, cacheRead: 0 });
  });

  it('reads Ark usage', () => {
    expect(fromJson(JSON.parse(fixture('ark/images-generation.json').toString()))).toMatchObject({ input: 0, output: 16384, artifacts: 1, estimated: false });
  });

  it('does not count an image refused inside data[]', () => {
    const body = { created: 1, data: [{ url: 'a' }, { error: { code: 'OutputImageSensitiveContentDetected', message: 'no' } }], usage: { generated_images: 1, output_tokens: 10, total_tokens: 10 } };
    expect(fromJson(body)!.artifacts).toBe(1);
  });

  it('counts images but guesses no tokens when the upstream gave no usage', () => {
    expect(fromJson({ created: 1, data: [{ url: 'a' }, { url: 'b' }] })).toMatchObject({ input: 0, output: 0, artifacts: 2, estimated: true });
    expect(fromJson('not json')).toBeNull();
  });
});
