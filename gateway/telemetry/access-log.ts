// The one access-log line per request. Built from fields chosen one by one: never a key, a provider credential,
// a body, a URL query (Gemini's `?key=`) or a header value.
import { writeSync } from 'node:fs';
import { pino } from 'pino';
import type { Logger } from 'pino';
import type { LedgerRow } from '../ledger/row.ts';
import type { RuntimeKey, UpstreamTarget } from '../snapshot/runtime.ts';
import type { ExchangeCall } from './exchange.ts';

export interface AccessFacts {
  requestId: string;
  traceId: string | undefined;
  method: string;
  endpoint: string;
  key: RuntimeKey | undefined;
  call: ExchangeCall | undefined;
  target: UpstreamTarget | undefined;
  status: number;
  aborted: boolean;
  totalMs: number;
  upstreamMs: number;
  overheadMs: number;
  ttftMs: number | undefined;
  attempts: number;
  errorType: string | undefined;
  row: LedgerRow | undefined;
}

/**
 * A duration in ms rounded to the µs, as `String(Math.round(v * 1000) / 1000)` writes it, from integer parts: a
 * double's shortest-text conversion costs ~60 ns more, and a line carries three or four of them. Exact for the
 * same reason the division is: us / 1000 is the double nearest the decimal whole.fff, which is what reads back.
 */
export function msText(v: number): string {
  const us = Math.round(v * 1000);
  // Negative, NaN or past 2^31 µs (~36 minutes): the plain conversion.
  if (!(us >= 0 && us < 2147483648)) return String(us / 1000);
  const frac = us % 1000;
  const whole = (us - frac) / 1000;
  if (frac === 0) return '' + whole;
  // Trailing zeros of the fraction are not written.
  if (frac % 100 === 0) return whole + '.' + frac / 100;
  if (frac % 10 === 0) return whole + (frac < 100 ? '.0' : '.') + frac / 10;
  return whole + (frac < 10 ? '.00' : frac < 100 ? '.0' : '.') + frac;
}
const LEVEL_NUMBERS = { debug: 20, info: 30, error: 50 } as const;

/**
 * Writes the one access line as pino would (same level, time, pid and hostname, then the fields, then
 * `"msg":"request"`), but built as one string from a fixed schema: no object per line, no generic serializer.
 * Measured at the default level as pino's largest cost per request (bench/telemetry-path.ts). Fields, all optional
 * but reqId, method, endpoint, status and latencyMs: reqId, traceId, method, endpoint, org, project, keyPrefix,
 * clientModel, model, provider, upstreamModel, attempts, stream, status, aborted, latencyMs, upstreamMs, overheadMs,
 * ttftMs, inputTokens, outputTokens, cacheReadTokens, cacheWriteTokens, cost, estimated, error.
 */
export function writeAccessLine(log: Logger, level: keyof typeof LEVEL_NUMBERS, f: AccessFacts): void {
  const l = log as unknown as Record<symbol, unknown>;
  const stream = l[pino.symbols.streamSym] as { write(s: string): unknown } | undefined;
  if (!stream) return;
  let s = `{"level":${LEVEL_NUMBERS[level]},"time":${Date.now()}${(l[pino.symbols.chindingsSym] as string | undefined) ?? ''},"reqId":${q(f.requestId)}`;
  if (f.traceId) s += `,"traceId":${q(f.traceId)}`;
  s += `,"method":${q(f.method)},"endpoint":${q(f.endpoint)}`;
  if (f.key) s += keyFields(f.key);
  const c = f.call;
  if (c) s += `,"clientModel":${q(c.clientModel)},"model":${q(c.model.id)}`;
  if (f.target) s += targetFields(f.target);
  if (c) s += `,"attempts":${f.attempts},"stream":${c.stream}`;
  s += `,"status":${f.status}`;
  if (f.aborted) s += ',"aborted":true';
  s += `,"latencyMs":${msText(f.totalMs)}`;
  if (c) {
    s += `,"upstreamMs":${msText(f.upstreamMs)},"overheadMs":${msText(f.overheadMs)}`;
    if (f.ttftMs !== undefined) s += `,"ttftMs":${msText(f.ttftMs)}`;
  }
  const r = f.row;
  if (r) {
    s += `,"inputTokens":${r.input},"outputTokens":${r.output},"cacheReadTokens":${r.cacheRead},"cacheWriteTokens":${r.cacheWrite},"cost":${q(r.costPoints)}`;
    if (r.estimated) s += ',"estimated":true';
  }
  if (f.errorType) s += `,"error":${q(f.errorType)}`;
  stream.write(s + ',"msg":"request"}\n');
}

/** JSON string literal; the values are ids, names and decimals, so JSON.stringify's escaping is the rare path. */
function q(v: string): string {
  for (let i = 0; i < v.length; i++) {
    const c = v.charCodeAt(i);
    // Controls, quote, backslash, and surrogates (a lone one is escaped): let JSON.stringify decide.
    if (c < 0x20 || c === 0x22 || c === 0x5c || (c >= 0xd800 && c <= 0xdfff)) return JSON.stringify(v);
  }
  return `"${v}"`;
}

// A key's and a target's fields are the same on every line of theirs: built once per snapshot object.
const keyFieldsOf = new WeakMap<RuntimeKey, string>();
const targetFieldsOf = new WeakMap<UpstreamTarget, string>();

function keyFields(k: RuntimeKey): string {
  let s = keyFieldsOf.get(k);
  if (s === undefined) keyFieldsOf.set(k, (s = `,"org":${q(k.organization.id)},"project":${q(k.project)},"keyPrefix":${q(k.prefix)}`));
  return s;
}

function targetFields(t: UpstreamTarget): string {
  let s = targetFieldsOf.get(t);
  if (s === undefined) targetFieldsOf.set(t, (s = `,"provider":${q(t.provider.id)},"upstreamModel":${q(t.model)}`));
  return s;
}

/**
 * The access log's own stdout writer: whole lines gathered into blocks of at most 4096 bytes (atomic on a pipe that
 * other processes share, so no other writer splits a line), each block one synchronous write once it passes
 * 3.5 KB, or every 200 ms, and at exit. A SIGKILL loses at most the last 200 ms of access lines (the ledger is the
 * billing record).
 */
export function bufferedAccessLogger(level: string): Logger {
  return pino({ level }, new LineBlocks(1, 200));
}

const MAX_BLOCK = 4096;
const MIN_BLOCK = 3584;
/** How long a full stdout may hold the writer up before the block is dropped (every wait is bounded). */
const MAX_BLOCKED_MS = 1000;
const sleeper = new Int32Array(new SharedArrayBuffer(4));
/** Every writer, flushed by one exit listener (a listener each would pile up in a process that starts many gateways). */
const atExit = new Set<LineBlocks>();

/**
 * Why not pino's own buffered destination (sonic-boom): asynchronous, each write goes through libuv's thread pool,
 * whose hand-off costs several times the write itself (~20 µs of CPU per 4 KB write against ~5 µs synchronous,
 * bench/access-write.ts); synchronous, it measures its whole pending buffer on every line, which flattens it: ~2 KB
 * allocated per request. Here a line is encoded straight into the pending block's bytes: no byte count of its own, no
 * string of the block to flatten and encode again at the write.
 */
export class LineBlocks {
  private readonly block = Buffer.allocUnsafe(MAX_BLOCK);
  private used = 0;
  private readonly fd: number;

  constructor(fd: number, periodMs: number) {
    this.fd = fd;
    setInterval(() => this.flush(), periodMs).unref();
    if (atExit.size === 0) process.once('exit', () => atExit.forEach((b) => b.flush()));
    atExit.add(this);
  }

  write(line: string): boolean {
    let n = this.block.write(line, this.used);
    // Encoding stops short (never inside a character) only with under 4 bytes left: only then is the length asked.
    if (n > MAX_BLOCK - this.used - 4 && n !== Buffer.byteLength(line)) {
      // Lines are never split across blocks: this one starts the next.
      this.flush();
      n = this.block.write(line, 0);
      if (n > MAX_BLOCK - 4 && n !== Buffer.byteLength(line)) {
        // Longer than a block: written alone, whole.
        const whole = Buffer.from(line);
        writeBlock(this.fd, whole, whole.length);
        return true;
      }
    }
    this.used += n;
    if (this.used >= MIN_BLOCK) this.flush();
    return true;
  }

  /** Writes what is pending now (pino calls this from `logger.flush`). */
  flush(cb?: (err?: Error) => void): void {
    if (this.used > 0) {
      const n = this.used;
      this.used = 0;
      writeBlock(this.fd, this.block, n);
    }
    cb?.();
  }
}

/** The first `size` bytes of `buf` written whole: a full non-blocking pipe is retried (bounded), any other failure drops them. */
function writeBlock(fd: number, buf: Buffer, size: number): void {
  let off = 0;
  let blockedSince = 0;
  for (;;) {
    try {
      off += writeSync(fd, buf, off, size - off);
      if (off >= size) return;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'EAGAIN' && code !== 'EWOULDBLOCK') return;
      const now = Date.now();
      if (blockedSince === 0) blockedSince = now;
      else if (now - blockedSince > MAX_BLOCKED_MS) return;
      Atomics.wait(sleeper, 0, 0, 5);
    }
  }
}
