// CPU per access line at the default level: the fixed-schema line (writeAccessLine) against the same fields logged
// as an object through pino (how the line was written before), interleaved rounds in one process, to /dev/null.
//   node bench/access-line.ts [--lines 200000] [--rounds 5]
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import type { LedgerRow } from '../gateway/ledger/row.ts';
import type { RuntimeKey, UpstreamTarget } from '../gateway/snapshot/runtime.ts';
import { writeAccessLine } from '../gateway/telemetry/access-log.ts';
import type { AccessFacts } from '../gateway/telemetry/access-log.ts';
import type { ExchangeCall } from '../gateway/telemetry/exchange.ts';

const { values } = parseArgs({ options: { lines: { type: 'string', default: '200000' }, rounds: { type: 'string', default: '5' } } });
const n = Number(values.lines);
// Buffered like the gateway's access log (bufferedAccessLogger): the write syscalls are shared, the formatting is not.
const log = pino({ level: 'info' }, pino.destination({ dest: '/dev/null', sync: true, minLength: 3584 } as Parameters<typeof pino.destination>[0]));
const key = { id: 'k1', prefix: 'sk_live_Ab3d', organization: { id: 'acme' }, project: 'web' } as unknown as RuntimeKey;
const target = { provider: { id: 'openai' }, model: 'gpt-4o-mini-2024-07-18' } as unknown as UpstreamTarget;
const call = { key, model: { id: 'openai/gpt-4o-mini' }, clientModel: 'gpt-4o-mini', endpoint: '/api/v1/chat/completions', stream: false, protocol: 'openai' } as unknown as ExchangeCall;
const row = { input: 12, output: 48, cacheRead: 0, cacheWrite: 0, costPoints: '0.00003042', estimated: false } as LedgerRow;
const facts = (i: number): AccessFacts => ({ requestId: `req-${i}`, traceId: undefined, method: 'POST', endpoint: call.endpoint, key, call, target, status: 200, aborted: false, totalMs: 1.234567, upstreamMs: 1.0001, overheadMs: 0.234467, ttftMs: undefined, attempts: 1, errorType: undefined, row });
const r3 = (v: number) => Math.round(v * 1000) / 1000;

function viaPino(f: AccessFacts): void {
  const line: Record<string, unknown> = { reqId: f.requestId, method: f.method, endpoint: f.endpoint, status: f.status, latencyMs: r3(f.totalMs) };
  line.org = f.key!.organization.id;
  line.project = f.key!.project;
  line.keyPrefix = f.key!.prefix;
  line.clientModel = f.call!.clientModel;
  line.model = f.call!.model.id;
  line.stream = f.call!.stream;
  line.attempts = f.attempts;
  line.upstreamMs = r3(f.upstreamMs);
  line.overheadMs = r3(f.overheadMs);
  line.provider = f.target!.provider.id;
  line.upstreamModel = f.target!.model;
  line.inputTokens = f.row!.input;
  line.outputTokens = f.row!.output;
  line.cacheReadTokens = f.row!.cacheRead;
  line.cacheWriteTokens = f.row!.cacheWrite;
  line.cost = f.row!.costPoints;
  log.info(line, 'request');
}

const ways: Record<string, (f: AccessFacts) => void> = { 'pino object': viaPino, 'fixed-schema line': (f) => writeAccessLine(log, 'info', f) };
const per: Record<string, number[]> = {};
for (let round = 0; round <= Number(values.rounds); round++) {
  for (const [name, fn] of Object.entries(ways)) {
    const c0 = process.cpuUsage();
    for (let i = 0; i < n; i++) fn(facts(i));
    const c = process.cpuUsage(c0);
    if (round > 0) (per[name] ??= []).push((c.user + c.system) / n);
  }
}
const best = (xs: number[]) => Math.min(...xs);
const base = best(per['pino object']);
for (const [name, xs] of Object.entries(per)) console.log(`${name.padEnd(18)} best ${best(xs).toFixed(2)} µs/line (${(best(xs) / base).toFixed(2)}× pino object)  rounds: ${xs.map((x) => x.toFixed(2)).join(', ')}`);
