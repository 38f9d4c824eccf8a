import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
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
