import { pino } from 'pino';
import { describe, expect, it, vi } from 'vitest';
import { requestLogger, withLazyChildren } from './request-logger.ts';

function capture() {
  const lines: Record<string, unknown>[] = [];
  const log = pino({ level: 'info' }, { write: (s: string) => void lines.push(JSON.parse(s) as Record<string, unknown>) });
  return { log, lines };
}

describe('requestLogger', () => {
  it('writes the same lines as the pino child fastify would make', () => {
    const lazy = capture();
    const eager = capture();
    requestLogger(lazy.log, { reqId: 'r-1' }, {}).warn({ provider: 'p' }, 'refused');
    eager.log.child({ reqId: 'r-1' }).warn({ provider: 'p' }, 'refused');
    const strip = (l: Record<string, unknown>) => ({ ...l, time: 0 });
    expect(lazy.lines.map(strip)).toEqual(eager.lines.map(strip));
    expect(lazy.lines[0]).toMatchObject({ level: 40, reqId: 'r-1', provider: 'p', msg: 'refused' });
  });

  it('keeps the parent level, drops lines below it, and hands out children with the request binding', () => {
    const { log, lines } = capture();
    const r = requestLogger(log, { reqId: 'r-2' }, {});
    expect(r.level).toBe('info');
    r.debug('hidden');
    r.child({ part: 'x' }).info('shown');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ reqId: 'r-2', part: 'x', msg: 'shown' });
  });

  it('as the server logger: logs as the logger itself, and its children carry their bindings', () => {
    const { log, lines } = capture();
    const server = withLazyChildren(log);
    server.info({ port: 1 }, 'listening');
    server.child({ reqId: 'r-3' }).error('failed');
    expect(server.level).toBe('info');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatchObject({ level: 30, port: 1, msg: 'listening' });
    expect(lines[0]).not.toHaveProperty('reqId');
    expect(lines[1]).toMatchObject({ level: 50, reqId: 'r-3', msg: 'failed' });
  });
});

describe('withLazyChildren under fastify', () => {
  it('makes no pino child for a request that does not log, and the usual one for a request that does', async () => {
    const { default: Fastify, LogController } = await import('fastify');
    const { log, lines } = capture();
    const app = Fastify({ loggerInstance: withLazyChildren(log), logController: new LogController({ disableRequestLogging: true }) });
    app.get('/quiet', async () => 'ok');
    app.get('/loud', async (req) => {
      req.log.warn({ provider: 'p' }, 'refused');
      return 'ok';
    });
    await app.ready();
    // pino's `child` is shared by every pino logger: count the children made per request from here on.
    const made = vi.spyOn(Object.getPrototypeOf(log) as { child: typeof log.child }, 'child');
    try {
      expect((await app.inject({ method: 'GET', url: '/quiet' })).statusCode).toBe(200);
      expect(made).not.toHaveBeenCalled();
      expect((await app.inject({ method: 'GET', url: '/loud' })).statusCode).toBe(200);
      expect(made).toHaveBeenCalledTimes(1);
      expect(lines.at(-1)).toMatchObject({ level: 40, provider: 'p', msg: 'refused' });
      expect(lines.at(-1)).toHaveProperty('reqId');
    } finally {
      made.mockRestore();
      await app.close();
    }
  });
});
