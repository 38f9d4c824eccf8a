// The one access-log line per request. Built from fields chosen one by one: never a key, a provider credential,
// a body, a URL query (Gemini's `?key=`) or a header value.
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

const ms = (v: number): number => Math.round(v * 1000) / 1000;
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
  s += `,"latencyMs":${ms(f.totalMs)}`;
  if (c) {
    s += `,"upstreamMs":${ms(f.upstreamMs)},"overheadMs":${ms(f.overheadMs)}`;
    if (f.ttftMs !== undefined) s += `,"ttftMs":${ms(f.ttftMs)}`;
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
 * The access log's own stdout writer, buffered: one write syscall per ~4 KB of lines (or every 200 ms) instead of one
 * per request. The write is synchronous: an asynchronous fs.write goes through libuv's thread pool, and the hand-off
 * (queue, wake a worker, wake the loop for the callback) costs several times the write itself: ~20 µs of CPU per
 * 4 KB write against ~5 µs here (bench/access-write.ts). The main logger writes synchronously too, so neither can split the
 * other's line, and every write stays at most 4096 bytes of whole lines, atomic on a pipe that other processes share.
 * pino flushes it at exit; a SIGKILL loses at most the last 200 ms of access lines (the ledger is the billing record).
 */
export function bufferedAccessLogger(level: string): Logger {
  return pino({ level }, pino.destination({ dest: 1, sync: true, minLength: 3584, maxWrite: 4096, periodicFlush: 200 } as Parameters<typeof pino.destination>[0]));
}
