// A multipart upload read from a stream: spooling before the model, streaming after it, limits, and backpressure.
import { tmpdir } from 'node:os';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { GatewayError } from '../errors.ts';
import { multipartBoundary } from './multipart-rewrite.ts';
import type { UploadOptions } from './multipart-upload.ts';
import { MultipartUpload } from './multipart-upload.ts';

const MiB = 1024 * 1024;

async function encode(entries: [string, string | Buffer][]): Promise<{ bytes: Buffer; boundary: string }> {
  const form = new FormData();
  for (const [k, v] of entries) {
    if (typeof v === 'string') form.append(k, v);
    else form.append(k, new Blob([v], { type: 'image/png' }), `${k}.png`);
  }
  const res = new Response(form);
  return { bytes: Buffer.from(await res.arrayBuffer()), boundary: multipartBoundary(res.headers.get('content-type')!)! };
}

/** A client sending `bytes` in 64 KiB pieces, only as fast as the gateway reads (write waits for drain). */
function client(bytes: Buffer): PassThrough {
  const src = new PassThrough({ highWaterMark: 64 * 1024 });
  void (async () => {
    for (let i = 0; i < bytes.length; i += 64 * 1024) {
      if (!src.write(bytes.subarray(i, i + 64 * 1024))) await new Promise((r) => src.once('drain', r));
    }
    src.end();
  })();
  return src;
}

const opts = (extra: Partial<UploadOptions> = {}): UploadOptions => ({ maxImages: 16, capture: ['stream', 'partial_images'], model: (m) => `up-${m}`, ...extra });
const limits = (maxBytes = 64 * MiB) => ({ maxBytes, spoolThreshold: MiB, spoolDir: tmpdir() });

async function collect(upload: MultipartUpload): Promise<{ out: Buffer; error?: unknown }> {
  const parts: Buffer[] = [];
  try {
    for await (const c of upload.body()) parts.push(c as Buffer);
    return { out: Buffer.concat(parts) };
  } catch (error) {
    return { out: Buffer.concat(parts), error };
  }
}

const rewritten = (bytes: Buffer, model: string) => Buffer.from(bytes.toString('latin1').replace(`\r\n\r\n${model}\r\n`, `\r\n\r\nup-${model}\r\n`), 'latin1');

describe('MultipartUpload', () => {
  it('spools what precedes a late model to disk past the threshold, then sends it all in order', async () => {
    const image = Buffer.alloc(3 * MiB, 7);
    const { bytes, boundary } = await encode([['image', image], ['prompt', 'p'], ['model', 'gpt-image-1']]);
    const upload = new MultipartUpload(client(bytes), boundary, limits(), opts());
    await upload.readUntilModel();
    expect(upload.spooledToDisk).toBe(true);
    expect(upload.rewriter.clientModel).toBe('gpt-image-1');
    const { out, error } = await collect(upload);
    expect(error).toBeUndefined();
    expect(out.equals(rewritten(bytes, 'gpt-image-1'))).toBe(true);
  });

  it('streams what follows an early model without spooling it, pulling from the client only as fast as it is read', async () => {
    const image = Buffer.alloc(8 * MiB, 3);
    const { bytes, boundary } = await encode([['model', 'm'], ['image', image]]);
    const upload = new MultipartUpload(client(bytes), boundary, limits(), opts());
    await upload.readUntilModel();
    expect(upload.spooledToDisk).toBe(false);
    const body = upload.body();
    const parts: Buffer[] = [];
    let sent = 0;
    let maxAhead = 0;
    for await (const c of body) {
      parts.push(c as Buffer);
      sent += (c as Buffer).length;
      maxAhead = Math.max(maxAhead, upload.bytesReceived - sent);
      // A slow upstream: the client is read no further than a few buffers ahead of what went out.
      await new Promise((r) => setImmediate(r));
    }
    expect(Buffer.concat(parts).equals(rewritten(bytes, 'm'))).toBe(true);
    expect(maxAhead).toBeLessThan(MiB);
  });

  it('fails with request_too_large once the running count passes the limit', async () => {
    const { bytes, boundary } = await encode([['model', 'm'], ['image', Buffer.alloc(3 * MiB)]]);
    const upload = new MultipartUpload(client(bytes), boundary, limits(2 * MiB), opts());
    await upload.readUntilModel();
    const { error, out } = await collect(upload);
    expect(error).toBeInstanceOf(GatewayError);
    expect((error as GatewayError).status).toBe(413);
    expect(out.length).toBeLessThanOrEqual(2 * MiB);
    await upload.discard();
  });

  it('holds the closing bytes back until late fields passed their checks', async () => {
    const { bytes, boundary } = await encode([['model', 'm'], ['image', Buffer.alloc(1000)], ['partial_images', '2']]);
    const finish: UploadOptions['finish'] = (r) => {
      if (r.fields.get('stream') !== 'true') throw new GatewayError('invalid_request', 'partial_images needs stream');
    };
    const upload = new MultipartUpload(client(bytes), boundary, limits(), opts({ finish }));
    await upload.readUntilModel();
    const { error, out } = await collect(upload);
    expect((error as GatewayError).message).toBe('partial_images needs stream');
    expect(out.length).toBeLessThan(bytes.length);
    expect(out.toString('latin1')).not.toContain(`--${boundary}--`);
  });

  it('refuses a body without a model, and one that ends early', async () => {
    const noModel = await encode([['prompt', 'p']]);
    await expect(new MultipartUpload(client(noModel.bytes), noModel.boundary, limits(), opts()).readUntilModel()).rejects.toThrow(/provide a model/);
    const cut = await encode([['prompt', 'p'], ['model', 'm']]);
    await expect(new MultipartUpload(client(cut.bytes.subarray(0, 40)), cut.boundary, limits(), opts()).readUntilModel()).rejects.toThrow(/closing boundary/);
  });

  it('drains what the client still sends after a refusal', async () => {
    const { bytes, boundary } = await encode([['model', 'm'], ['image', Buffer.alloc(2 * MiB)]]);
    const src = client(bytes);
    const upload = new MultipartUpload(src, boundary, limits(), opts({ model: () => {
      throw new GatewayError('model_not_found', 'nope');
    } }));
    await expect(upload.readUntilModel()).rejects.toThrow('nope');
    await upload.discard();
    await new Promise((r) => src.once('end', r));
    expect(src.readableEnded).toBe(true);
  });
});
