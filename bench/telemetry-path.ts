// CPU of the telemetry code alone for one proxied request, in process (no sockets, so no noise from the machine):
// the per-request context, the relay's calls, eight metric data points and the access-log line (to /dev/null).
// Run alone: node bench/telemetry-path.ts
import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import type { ExportResult } from '@opentelemetry/core';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace';
import type { FastifyRequest } from 'fastify';
import { pino } from 'pino';
import type { LedgerRow } from '../gateway/ledger/row.ts';
import type { RuntimeKey, UpstreamTarget } from '../gateway/snapshot/runtime.ts';
import type { ExchangeCall } from '../gateway/telemetry/exchange.ts';
import { LiveExchange } from '../gateway/telemetry/exchange.ts';
import { Telemetry } from '../gateway/telemetry/telemetry.ts';

/** Accepts spans and keeps none: the cost of making and ending spans, without a network. */
class DiscardingExporter implements SpanExporter {
  export(_spans: ReadableSpan[], done: (r: ExportResult) => void): void {
    done({ code: 0 });
  }
  shutdown(): Promise<void> {
    return Promise.resolve();
  }
}

const key = { id: 'k1', prefix: 'sk_live_Ab3d', organization: { id: 'acme' }, project: 'web' } as unknown as RuntimeKey;
const target = { provider: { id: 'openai', baseUrl: 'https://api.openai.com/v1' }, model: 'gpt-4o-mini-2024-07-18', weight: 1 } as unknown as UpstreamTarget;
const call = { key, model: { id: 'openai/gpt-4o-mini' }, clientModel: 'gpt-4o-mini', endpoint: '/api/v1/chat/completions', stream: true, protocol: 'openai' } as unknown as ExchangeCall;
const row = { requestId: 'r', organization: 'acme', input: 12, output: 48, cacheRead: 0, cacheWrite: 0, reasoning: 0, artifacts: 0, estimated: false, costPoints: '0.00003042' } as LedgerRow;

function oneRequest(t: Telemetry, i: number): void {
  const res = Object.assign(new EventEmitter(), { headersSent: true, statusCode: 200, writableFinished: true }) as unknown as ServerResponse;
  const req = { id: `req-${i}`, method: 'POST', url: '/api/v1/chat/completions', headers: {}, routeOptions: { url: '/api/v1/chat/completions' }, body: undefined } as unknown as FastifyRequest;
  const x = new LiveExchange(t, req, res);
  res.on('close', x.onClose);
  x.admitted(key);
  x.upstreamStart(call, target);
  x.upstreamHeaders({ traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' });
  x.upstreamAnswered(200);
  // A 20-chunk stream.
  for (let k = 0; k < 20; k++) x.firstByte();
  x.billed(row, performance.now());
  x.upstreamDone();
  x.relayEnd();
  res.emit('close');
}

/** Microseconds of CPU per request for the default telemetry (metrics + access log) and with spans exported. */
export function measureTelemetryPath(n = 100_000): { defaultUs: number; metricsOnlyUs: number; tracedUs: number; baselineUs: number } {
  const log = pino({ level: 'info' }, pino.destination({ dest: '/dev/null', sync: true }));
  const measure = (t: Telemetry | undefined): number => {
    const run = (i: number) => (t ? oneRequest(t, i) : new EventEmitter().on('close', () => {}).emit('close'));
    for (let i = 0; i < n / 5; i++) run(i);
    const c0 = process.cpuUsage();
    for (let i = 0; i < n; i++) run(i);
    const c = process.cpuUsage(c0);
    return (c.user + c.system) / n;
  };
  const baselineUs = measure(undefined);
  const defaultUs = measure(new Telemetry({ env: {}, logger: log })) - baselineUs;
  const metricsOnlyUs = measure(new Telemetry({ env: {} })) - baselineUs;
  const tracedUs = measure(new Telemetry({ env: { OTEL_TRACES_SAMPLER: 'always_on' }, logger: log, spanExporter: new DiscardingExporter() })) - baselineUs;
  return { defaultUs, metricsOnlyUs, tracedUs, baselineUs };
}

if (import.meta.main) {
  const r = measureTelemetryPath();
  console.log(`telemetry path per request: ${r.defaultUs.toFixed(1)} µs (metrics + access log; metrics alone ${r.metricsOnlyUs.toFixed(1)} µs), ${r.tracedUs.toFixed(1)} µs with three spans made and exported`);
}
