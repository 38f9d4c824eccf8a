import { once } from 'node:events';
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RuntimeProvider } from '../snapshot/runtime.ts';
import { isTimeout, TimeoutError, UpstreamClient } from './client.ts';
import type { UpstreamResponse } from './client.ts';

// A real socket on both sides: what undici hands the handler is what production sees.
type Route = (req: IncomingMessage, res: ServerResponse) => void;
const routes = new Map<string, Route>();
const closed = new Map<string, Promise<void>>();
let server: Server;
let provider: RuntimeProvider;
const client = new UpstreamClient();

beforeAll(async () => {
  server = createServer((req, res) => {
    const path = req.url ?? '/';
    closed.set(path, once(res, 'close').then(() => undefined));
    req.resume();
    req.on('end', () => routes.get(path)!(req, res));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  provider = {
    id: 'p',
    baseUrl: `http://127.0.0.1:${port}`,
    credential: 'sk-test',
    headers: {},
    config: { id: 'p', baseUrl: `http://127.0.0.1:${port}`, timeouts: { connectMs: 1000, firstByteMs: 1000, idleMs: 1000, totalMs: 1000 }, onClientDisconnect: 'continue' },
    timeouts: { connectMs: 5000, firstByteMs: 5000, idleMs: 5000, totalMs: 10_000 },
    abortOnDisconnect: false,
  };
});

afterAll(async () => {
  await client.close();
  server.closeAllConnections();
  server.close();
});

function call(path: string, route: Route, signal = new AbortController().signal): Promise<UpstreamResponse> {
  routes.set(path, route);
  return client.request({ provider, protocol: 'openai', path, body: '{}', signal });
}

const sse = (i: number) => `data: {"i":${i}}\n\n`;

/** Writes `n` events, each after the client has had time to take the previous one. */
function paced(n: number, gapMs: number): Route {
  return (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    let i = 0;
    const next = () => {
      if (res.destroyed) return;
      if (i === n) return void res.end();
      res.write(sse(i++));
      setTimeout(next, gapMs);
    };
    next();
  };
}

function collect(res: UpstreamResponse, onData?: (chunk: Buffer, n: number) => boolean): Promise<{ text: string; err?: Error }> {
  return new Promise((resolve) => {
    let text = '';
    let n = 0;
    res.body.pipe({
      data(chunk) {
        text += chunk.toString();
        return onData ? onData(chunk, ++n) : true;
      },
      end(err) {
        resolve({ text, err });
      },
    });
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('upstream responses', () => {
  it('keeps what arrived before anyone read it and gives the whole body once asked', async () => {
    const body = JSON.stringify({ usage: { prompt_tokens: 3 }, pad: 'x'.repeat(100_000) });
    const res = await call('/json', (_req, r) => {
      r.writeHead(200, { 'content-type': 'application/json', 'x-request-id': 'req-1' });
      r.end(body);
    });
    expect(res.statusCode).toBe(200);
    expect(res.headers['x-request-id']).toBe('req-1');
    await sleep(50); // the body is on its way or queued; nothing reads it yet
    expect((await res.body.bytes()).toString()).toBe(body);
  });

  it('relays stream chunks in order, byte for byte, and ends cleanly', async () => {
    const res = await call('/stream', paced(5, 2));
    const { text, err } = await collect(res);
    expect(err).toBeUndefined();
    expect(text).toBe([0, 1, 2, 3, 4].map(sse).join(''));
  });

  it('holds the upstream while the sink is full and goes on after resume()', async () => {
    const res = await call('/paused', paced(4, 5));
    let paused = true;
    let whilePaused = 0;
    const done = collect(res, (_c, n) => {
      if (n === 1) return false;
      if (paused) whilePaused++;
      return true;
    });
    await sleep(150); // the upstream has written more by now; none of it may reach the sink
    expect(whilePaused).toBe(0);
    paused = false;
    res.body.resume();
    const { text, err } = await done;
    expect(err).toBeUndefined();
    expect(whilePaused).toBe(0);
    expect(text).toBe([0, 1, 2, 3].map(sse).join(''));
  });

  it('destroy() from the sink ends it with that error, stops delivery and releases the upstream', async () => {
    const res = await call('/destroy', paced(50, 2));
    const stop = new Error('ledger down');
    let after = 0;
    let destroyed = false;
    const { text, err } = await collect(res, (_c, n) => {
      if (destroyed) after++;
      if (n === 2) {
        destroyed = true;
        res.body.destroy(stop);
      }
      return true;
    });
    expect(err).toBe(stop);
    expect(after).toBe(0);
    expect(text.startsWith(sse(0))).toBe(true);
    await closed.get('/destroy'); // the upstream saw its request go away
  });

  it('an abort mid-body ends the sink with the abort reason', async () => {
    const controller = new AbortController();
    const res = await call('/abort', paced(50, 5), controller.signal);
    const { err } = await collect(res, (_c, n) => {
      if (n === 2) controller.abort(new TimeoutError());
      return true;
    });
    expect(err).toBeInstanceOf(TimeoutError);
    expect(isTimeout(err)).toBe(true);
    await closed.get('/abort');
  });

  it('an upstream that cuts the connection mid-body ends the sink with an error', async () => {
    const res = await call('/cut', (_req, r) => {
      r.writeHead(200, { 'content-type': 'text/event-stream' });
      r.write(sse(0));
      setTimeout(() => r.socket?.destroy(), 20);
    });
    const { text, err } = await collect(res);
    expect(text).toBe(sse(0));
    expect(err).toBeInstanceOf(Error);
  });

  it('an abort before the answer rejects the request with the reason', async () => {
    const controller = new AbortController();
    const pending = call('/slow', () => {}, controller.signal);
    await sleep(20);
    controller.abort(new TimeoutError());
    await expect(pending).rejects.toThrow(/timed out/);
  });
});
