// The server's onRequest hooks: telemetry attached first, then the draining refusal, then the body deadline.
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import type { GatewayContext } from './routes/context.ts';
import { buildServer } from './server.ts';
import { Telemetry } from './telemetry/telemetry.ts';

class Lines extends Writable {
  readonly lines: Record<string, unknown>[] = [];
  override _write(chunk: Buffer, _enc: string, done: () => void): void {
    for (const l of chunk.toString('utf8').split('\n')) if (l !== '') this.lines.push(JSON.parse(l) as Record<string, unknown>);
    done();
  }
}

let app: FastifyInstance | undefined;
let telemetry: Telemetry | undefined;
afterEach(async () => {
  await app?.close();
  await telemetry?.shutdown();
  app = telemetry = undefined;
});

function serve(draining: boolean, bodyMs = 30_000): { out: Lines; app: FastifyInstance } {
  const out = new Lines();
  telemetry = new Telemetry({ env: {}, logger: pino({ level: 'info' }, out) });
  const ctx = { draining: { value: draining } } as GatewayContext;
  app = buildServer(ctx, { maxBodyBytes: 1024, logger: pino({ level: 'silent' }), telemetry, bodyTimeouts: { jsonMs: bodyMs, uploadMs: bodyMs } });
  return { out, app };
}

describe('while draining', () => {
  it('refuses with 503 in the family of the path, closing the connection, and logs the refusal', async () => {
    const { out, app } = serve(true);
    const chat = await app.inject({ method: 'POST', url: '/api/v1/chat/completions', payload: { model: 'm', messages: [] } });
    expect(chat.statusCode).toBe(503);
    expect(chat.headers.connection).toBe('close');
    expect(chat.json()).toMatchObject({ error: { code: 'shutting_down' } });
    const messages = await app.inject({ method: 'POST', url: '/api/v1/messages', payload: {} });
    expect(messages.statusCode).toBe(503);
    expect(messages.json()).toMatchObject({ type: 'error', error: { type: expect.any(String) } });
    // Telemetry is attached before the refusal: each refused request still has its access line.
    await new Promise((r) => setImmediate(r));
    const access = out.lines.filter((l) => l.status === 503);
    expect(access.map((l) => l.endpoint)).toEqual(['/api/v1/chat/completions', '/api/v1/messages']);
  });
});

describe('not draining', () => {
  it('arms the body deadline: a body that never comes is answered 408', async () => {
    const { app } = serve(false, 200);
    await app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = app.server.address() as { port: number };
    const { connect } = await import('node:net');
    const s = connect(port, '127.0.0.1');
    s.write('POST /api/v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 50\r\n\r\n{');
    let text = '';
    s.on('data', (c: Buffer) => (text += c.toString('utf8')));
    await new Promise((r) => s.on('close', r));
    expect(text).toMatch(/^HTTP\/1.1 408/);
    expect(text).toContain('request_timeout');
  });
});
