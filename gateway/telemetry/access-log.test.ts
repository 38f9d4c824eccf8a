// The hand-built access line must be a pino line like any other: same level/time/pid/hostname, valid JSON whatever
// the strings hold, and only the fields chosen.
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { LedgerRow } from '../ledger/row.ts';
import type { RuntimeKey, UpstreamTarget } from '../snapshot/runtime.ts';
import { LineBlocks, msText, writeAccessLine } from './access-log.ts';
import type { AccessFacts } from './access-log.ts';
import type { ExchangeCall } from './exchange.ts';

function capture(level = 'info') {
  const lines: string[] = [];
  const log = pino({ level }, { write: (s: string) => lines.push(s) });
  return { log, lines };
}

const key = { id: 'k1', prefix: 'sk_live_Ab3d', organization: { id: 'acme "west"' }, project: 'web\nline' } as unknown as RuntimeKey;
const target = { provider: { id: 'openai' }, model: 'gpt-4o-mini-2024-07-18' } as unknown as UpstreamTarget;
const call = { key, model: { id: 'openai/gpt-4o-mini' }, clientModel: 'gpt-4o-mini', endpoint: '/api/v1/chat/completions', stream: true, protocol: 'openai' } as unknown as ExchangeCall;
const row = { input: 12, output: 48, cacheRead: 3, cacheWrite: 0, costPoints: '0.00003042', estimated: true } as LedgerRow;

const facts = (over: Partial<AccessFacts> = {}): AccessFacts => ({
  requestId: 'req-1',
  traceId: undefined,
  method: 'POST',
  endpoint: '/api/v1/chat/completions',
  key: undefined,
  call: undefined,
  target: undefined,
  status: 200,
  aborted: false,
  totalMs: 1.23456,
  upstreamMs: 1.0001,
  overheadMs: 0.23446,
  ttftMs: undefined,
  attempts: 0,
  errorType: undefined,
  row: undefined,
  ...over,
});

describe('access line', () => {
  it('carries pino\'s own fields and every chosen field of a billed stream', () => {
    const { log, lines } = capture();
    log.info({ a: 1 }, 'other');
    writeAccessLine(log, 'info', facts({ key, call, target, row, traceId: '4bf92f3577b34da6a3ce929d0e0e4736', ttftMs: 0.5, attempts: 1, aborted: true }));
    expect(lines).toHaveLength(2);
    expect(lines[1].endsWith('\n')).toBe(true);
    const other = JSON.parse(lines[0]);
    const line = JSON.parse(lines[1]);
    expect(line).toEqual({
      level: 30,
      time: expect.any(Number),
      pid: other.pid,
      hostname: other.hostname,
      reqId: 'req-1',
      traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
      method: 'POST',
      endpoint: '/api/v1/chat/completions',
      org: 'acme "west"',
      project: 'web\nline',
      keyPrefix: 'sk_live_Ab3d',
      clientModel: 'gpt-4o-mini',
      model: 'openai/gpt-4o-mini',
      provider: 'openai',
      upstreamModel: 'gpt-4o-mini-2024-07-18',
      attempts: 1,
      stream: true,
      status: 200,
      aborted: true,
      latencyMs: 1.235,
      upstreamMs: 1,
      overheadMs: 0.234,
      ttftMs: 0.5,
      inputTokens: 12,
      outputTokens: 48,
      cacheReadTokens: 3,
      cacheWriteTokens: 0,
      cost: '0.00003042',
      estimated: true,
      msg: 'request',
    });
    expect(line.time).toBeGreaterThanOrEqual(other.time);
  });

  it('writes a refused request with only what is known, at the level asked', () => {
    const { log, lines } = capture('debug');
    writeAccessLine(log, 'error', facts({ status: 503, errorType: 'unavailable' }));
    writeAccessLine(log, 'debug', facts({ endpoint: '/healthz', method: 'GET' }));
    const [a, b] = lines.map((l) => JSON.parse(l));
    expect(a).toMatchObject({ level: 50, status: 503, error: 'unavailable', msg: 'request' });
    expect(Object.keys(a)).not.toContain('org');
    expect(Object.keys(a)).not.toContain('upstreamMs');
    expect(b).toMatchObject({ level: 20, endpoint: '/healthz', method: 'GET' });
  });
});

describe('access line blocks', () => {
  it('writes whole lines in blocks of at most 4096 bytes, and what is pending on flush', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-access-'));
    const path = join(dir, 'out.log');
    const fd = openSync(path, 'w');
    try {
      const blocks = new LineBlocks(fd, 60_000);
      const lines: string[] = [];
      // Multi-byte characters: the bound counts bytes, not characters.
      for (let i = 0; i < 40; i++) lines.push(JSON.stringify({ i, model: 'é'.repeat(150 + i) }) + '\n');
      for (const l of lines) blocks.write(l);
      const before = readFileSync(path);
      expect(before.length).toBeGreaterThan(0);
      expect(before.length).toBeLessThan(Buffer.byteLength(lines.join('')));
      // Nothing written so far ends inside a line.
      expect(before.toString('utf8').endsWith('\n')).toBe(true);
      blocks.flush();
      expect(readFileSync(path, 'utf8')).toBe(lines.join(''));
    } finally {
      closeSync(fd);
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('writes a line longer than a block alone and whole, after the lines before it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-access-'));
    const path = join(dir, 'out.log');
    const fd = openSync(path, 'w');
    try {
      const blocks = new LineBlocks(fd, 60_000);
      const short = JSON.stringify({ n: 1 }) + '\n';
      const long = JSON.stringify({ model: 'é'.repeat(3000) }) + '\n';
      blocks.write(short);
      blocks.write(long);
      expect(readFileSync(path, 'utf8')).toBe(short + long);
      blocks.write(short);
      blocks.flush();
      expect(readFileSync(path, 'utf8')).toBe(short + long + short);
    } finally {
      closeSync(fd);
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('is a pino destination: lines of the logger land in it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-access-'));
    const path = join(dir, 'out.log');
    const fd = openSync(path, 'w');
    try {
      const blocks = new LineBlocks(fd, 60_000);
      const log = pino({ level: 'info' }, blocks);
      writeAccessLine(log, 'info', facts());
      expect(readFileSync(path, 'utf8')).toBe('');
      log.flush();
      expect(JSON.parse(readFileSync(path, 'utf8'))).toMatchObject({ level: 30, reqId: 'req-1', msg: 'request' });
    } finally {
      closeSync(fd);
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('access line durations', () => {
  it('writes a duration as the µs-rounded number would print, for any value', () => {
    const asNumber = (v: number) => String(Math.round(v * 1000) / 1000);
    fc.assert(
      fc.property(fc.oneof(fc.double({ min: 0, max: 4e6, noNaN: true }), fc.double(), fc.integer({ min: 0, max: 2 ** 31 }).map((us) => us / 1000)), (v) => {
        expect(msText(v)).toBe(asNumber(v));
      }),
      { numRuns: 20_000 },
    );
    for (const v of [0, -0, 0.0004, 0.0005, 0.001, 0.01, 0.1, 1, 1.5, 9.999, 9.9995, 10.05, 2147483.647, 2147483.648, -1.5, Number.NaN, Infinity]) {
      expect(msText(v)).toBe(asNumber(v));
    }
  });

  it('puts it in the line as written', () => {
    const { log, lines } = capture();
    writeAccessLine(log, 'info', facts({ call, totalMs: 12.3406, upstreamMs: 0.0004, overheadMs: 7.01 }));
    expect(lines[0]).toContain('"latencyMs":12.341,');
    expect(JSON.parse(lines[0])).toMatchObject({ latencyMs: 12.341, upstreamMs: 0, overheadMs: 7.01 });
  });
});
