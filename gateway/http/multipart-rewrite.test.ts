// The multipart rewriter on real form-data bytes (encoded by undici's FormData), split at every kind of boundary.
import busboy from 'busboy';
import { describe, expect, it } from 'vitest';
import { GatewayError } from '../errors.ts';
import { dispositionName, multipartBoundary, MultipartRewriter } from './multipart-rewrite.ts';

async function encode(entries: [string, string | Blob, string?][]): Promise<{ bytes: Buffer; boundary: string; contentType: string }> {
  const form = new FormData();
  for (const [k, v, name] of entries) {
    if (typeof v === 'string') form.append(k, v);
    else form.append(k, v, name);
  }
  const res = new Response(form);
  const contentType = res.headers.get('content-type')!;
  return { bytes: Buffer.from(await res.arrayBuffer()), boundary: multipartBoundary(contentType)!, contentType };
}

function run(bytes: Buffer, boundary: string, chunkSizes: number[], opts: { maxImages?: number; model?: (n: string) => string } = {}) {
  const out: Buffer[] = [];
  const seen: string[] = [];
  const r = new MultipartRewriter(
    boundary,
    {
      maxImages: opts.maxImages ?? 16,
      capture: ['stream', 'n'],
      model: opts.model ?? ((name) => (seen.push(name), `upstream-${name}`)),
    },
    (b) => out.push(Buffer.from(b)),
  );
  let i = 0;
  let k = 0;
  while (i < bytes.length) {
    const size = chunkSizes[k++ % chunkSizes.length];
    r.write(bytes.subarray(i, i + size));
    i += size;
  }
  r.end();
  return { out: Buffer.concat(out), r, seen };
}

function parse(bytes: Buffer, contentType: string): Promise<{ fields: Record<string, string>; files: { name: string; filename: string; data: Buffer }[] }> {
  return new Promise((resolve, reject) => {
    const fields: Record<string, string> = {};
    const files: { name: string; filename: string; data: Buffer }[] = [];
    const bb = busboy({ headers: { 'content-type': contentType } });
    bb.on('field', (name, value) => (fields[name] = value));
    bb.on('file', (name, stream, info) => {
      const parts: Buffer[] = [];
      stream.on('data', (d: Buffer) => parts.push(d));
      stream.on('end', () => files.push({ name, filename: info.filename ?? '', data: Buffer.concat(parts) }));
    });
    bb.on('close', () => resolve({ fields, files }));
    bb.on('error', reject);
    bb.end(bytes);
  });
}

/** Binary content that is full of near-delimiters: CRs, CRLF--, and the boundary's own first bytes. */
function nasty(boundary: string, size: number): Blob {
  const bits = [Buffer.from('\r'), Buffer.from('\r\n'), Buffer.from('\r\n-'), Buffer.from('\r\n--'), Buffer.from(`\r\n--${boundary.slice(0, -1)}`), Buffer.from([0, 255, 13, 10, 45])];
  const parts: Buffer[] = [];
  let n = 0;
  for (let i = 0; n < size; i++) {
    const b = bits[i % bits.length];
    parts.push(b);
    n += b.length;
  }
  return new Blob([Buffer.concat(parts).subarray(0, size)], { type: 'image/png' });
}

const SPLITS = [[1], [2, 3], [7], [41], [64], [1000], [1 << 20], [3, 1, 100, 17]];

describe('MultipartRewriter', () => {
  it('forwards every byte but the model value, wherever the model part and the chunk edges fall', async () => {
    const probe = await encode([['x', 'y']]);
    const img = nasty(probe.boundary, 5000);
    for (const order of ['first', 'middle', 'last'] as const) {
      const entries: [string, string | Blob, string?][] = [
        ['image[]', img, 'a.png'],
        ['prompt', 'A cat\r\n--wearing a hat'],
        ['image[]', img, 'b.png'],
        ['mask', img, 'mask.png'],
        ['stream', 'true'],
      ];
      const at = order === 'first' ? 0 : order === 'middle' ? 2 : entries.length;
      entries.splice(at, 0, ['model', 'gpt-image-1']);
      const { bytes, boundary, contentType } = await encode(entries);
      const parsedIn = await parse(bytes, contentType);
      for (const split of SPLITS) {
        const { out, r, seen } = run(bytes, boundary, split);
        expect(seen).toEqual(['gpt-image-1']);
        expect(r.images).toBe(2);
        expect(r.fields.get('stream')).toBe('true');
        expect(r.delta).toBe('upstream-'.length);
        expect(out.length).toBe(bytes.length + r.delta);
        const expected = Buffer.from(bytes.toString('latin1').replace('\r\n\r\ngpt-image-1\r\n', '\r\n\r\nupstream-gpt-image-1\r\n'), 'latin1');
        expect(out.equals(expected)).toBe(true);
        const parsedOut = await parse(out, contentType);
        expect(parsedOut.fields).toEqual({ ...parsedIn.fields, model: 'upstream-gpt-image-1' });
        expect(parsedOut.files.map((f) => [f.name, f.filename, f.data.length])).toEqual(parsedIn.files.map((f) => [f.name, f.filename, f.data.length]));
        expect(parsedOut.files.every((f, i) => f.data.equals(parsedIn.files[i].data))).toBe(true);
      }
    }
  });

  it('keeps a preamble and an epilogue and accepts quoted boundaries', async () => {
    const b = 'simple boundary';
    const body = Buffer.from(`preamble\r\n--${b}\r\nContent-Disposition: form-data; name="model"\r\n\r\nm1\r\n--${b}\r\nContent-Disposition: form-data; name=image; filename="x.png"\r\n\r\nPNG\r\n--${b}--\r\nepilogue`);
    expect(multipartBoundary(`multipart/form-data; boundary="${b}"`)).toBe(b);
    const { out, r } = run(body, b, [5]);
    expect(r.images).toBe(1);
    expect(out.toString()).toBe(body.toString().replace('\r\n\r\nm1\r\n', '\r\n\r\nupstream-m1\r\n'));
  });

  it('counts image, image[] and image[N] parts and refuses the 17th as it starts', async () => {
    const png = new Blob([Buffer.from('png')], { type: 'image/png' });
    const entries: [string, string | Blob, string?][] = [['model', 'm']];
    for (let i = 0; i < 17; i++) entries.push([i % 3 === 0 ? 'image' : i % 3 === 1 ? 'image[]' : `image[${i}]`, png, `${i}.png`]);
    const { bytes, boundary } = await encode(entries);
    let emitted = 0;
    const r = new MultipartRewriter(boundary, { maxImages: 16, model: (n) => n }, (b) => (emitted += b.length));
    let err: unknown;
    try {
      r.write(bytes);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(GatewayError);
    expect((err as GatewayError).status).toBe(400);
    expect((err as GatewayError).param).toBe('image');
    expect(r.images).toBe(17);
    // Nothing of the 17th part went out.
    expect(emitted).toBeLessThan(bytes.lastIndexOf('"16.png"') - 50);

    const ok = await encode(entries.slice(0, 17));
    expect(run(ok.bytes, ok.boundary, [64]).r.images).toBe(16);
  });

  it('refuses two model parts, an empty model, and a body without its closing boundary', async () => {
    const two = await encode([['model', 'a'], ['model', 'b']]);
    expect(() => run(two.bytes, two.boundary, [1000])).toThrow(/more than once/);
    const empty = await encode([['model', '']]);
    expect(() => run(empty.bytes, empty.boundary, [1000])).toThrow(/provide a model/);
    const cut = await encode([['model', 'm'], ['prompt', 'p']]);
    expect(() => run(cut.bytes.subarray(0, cut.bytes.length - 10), cut.boundary, [1000])).toThrow(/closing boundary/);
    expect(() => run(Buffer.from('no boundary here'), 'xyz', [4])).toThrow(/closing boundary/);
  });

  it('lets the model hook refuse the request', async () => {
    const { bytes, boundary } = await encode([['model', 'nope']]);
    const hook = () => {
      throw new GatewayError('model_not_found', 'no such model');
    };
    expect(() => run(bytes, boundary, [3], { model: hook })).toThrow(/no such model/);
  });

  it('reads content-disposition names in their quoted and token forms', () => {
    expect(dispositionName('Content-Disposition: form-data; name="image[]"; filename="a.png"\r\nContent-Type: image/png')).toBe('image[]');
    expect(dispositionName('content-disposition: form-data; filename="name=x"; name=model')).toBe('model');
    expect(dispositionName('Content-Disposition: form-data; name="a\\"b"')).toBe('a"b');
    expect(dispositionName('Content-Type: text/plain')).toBeUndefined();
    expect(multipartBoundary('application/json')).toBeUndefined();
    expect(multipartBoundary('multipart/form-data')).toBeUndefined();
  });
});
