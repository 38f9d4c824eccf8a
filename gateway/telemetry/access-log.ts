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

export interface AccessLine {
  reqId: string;
  traceId?: string;
  method: string;
  endpoint: string;
  org?: string;
  project?: string;
  keyPrefix?: string;
  clientModel?: string;
  model?: string;
  provider?: string;
  upstreamModel?: string;
  attempts?: number;
  stream?: boolean;
  status: number;
  aborted?: true;
  latencyMs: number;
  upstreamMs?: number;
  overheadMs?: number;
  ttftMs?: number;
  // Flat, not nested: cheaper to serialize on every request, and as easy to query.
  inputTokens?: number;
  outputTokens?: number;
  cacheReadTokens?: number;
  cacheWriteTokens?: number;
  cost?: string;
  estimated?: true;
  error?: string;
}

const ms = (v: number): number => Math.round(v * 1000) / 1000;

export function accessLine(f: AccessFacts): AccessLine {
  const line: AccessLine = { reqId: f.requestId, method: f.method, endpoint: f.endpoint, status: f.status, latencyMs: ms(f.totalMs) };
  if (f.traceId) line.traceId = f.traceId;
  if (f.key) {
    line.org = f.key.organization.id;
    line.project = f.key.project;
    line.keyPrefix = f.key.prefix;
  }
  if (f.aborted) line.aborted = true;
  if (f.call) {
    line.clientModel = f.call.clientModel;
    line.model = f.call.model.id;
    line.stream = f.call.stream;
    line.attempts = f.attempts;
    line.upstreamMs = ms(f.upstreamMs);
    line.overheadMs = ms(f.overheadMs);
    if (f.ttftMs !== undefined) line.ttftMs = ms(f.ttftMs);
  }
  if (f.target) {
    line.provider = f.target.provider.id;
    line.upstreamModel = f.target.model;
  }
  const r = f.row;
  if (r) {
    line.inputTokens = r.input;
    line.outputTokens = r.output;
    line.cacheReadTokens = r.cacheRead;
    line.cacheWriteTokens = r.cacheWrite;
    line.cost = r.costPoints;
    if (r.estimated) line.estimated = true;
  }
  if (f.errorType) line.error = f.errorType;
  return line;
}

/**
 * The access log's own stdout writer, buffered: one write syscall per ~4 KB of lines (or every 200 ms) instead of one
 * per request, measured as the largest single cost of telemetry (bench/telemetry-overhead.ts). Writes stay at most
 * 4096 bytes of whole lines, so they are atomic on a pipe and never split a line of the main (synchronous) logger.
 * pino flushes it at exit; a SIGKILL loses at most the last 200 ms of access lines (the ledger is the billing record).
 */
export function bufferedAccessLogger(level: string): Logger {
  return pino({ level }, pino.destination({ dest: 1, sync: false, minLength: 3584, maxWrite: 4096, periodicFlush: 200 } as Parameters<typeof pino.destination>[0]));
}
