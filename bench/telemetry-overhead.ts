// Telemetry on vs off: gateway CPU per request (issue 7 budget: on ≤ 1.1× off with no exporter configured).
//   node bench/telemetry-overhead.ts [--seconds 4] [--rounds 9] [--rate 300] [--json out.json]
// Variants, each its own gateway process against one fake upstream, loaded at the same time in each round at the same
// fixed rate (open loop), so what else the machine does touches every variant alike and CPU per request is compared
// at equal load (at saturation a slower variant batches less and looks worse than it is). The ratio is the median of
// the per-round ratios.
//   off     TOLLGATE_TELEMETRY=off: no metrics, no spans, no access log
//   on      the default: metrics, the access log (LOG_LEVEL=info, to a pipe), no trace exporter
//   traced  on + OTLP/HTTP traces to a local sink that accepts and discards them (every span sampled)
// It first prints the in-process cost of the telemetry code alone (bench/telemetry-path.ts), which no machine noise
// touches: on a shared machine the end-to-end ratio scatters by more than the difference it measures.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { chatBody, paced, saturate } from './load.ts';
import type { RunResult } from './load.ts';
import { us } from './stats.ts';
import { measureTelemetryPath } from './telemetry-path.ts';
import { startTollgate, startUpstream } from './targets.ts';
import type { RunningTollgate } from './targets.ts';

const { values } = parseArgs({ options: { seconds: { type: 'string' }, rounds: { type: 'string' }, rate: { type: 'string' }, json: { type: 'string' } } });
const seconds = Number(values.seconds ?? 4);
const rounds = Number(values.rounds ?? 9);
const rate = Number(values.rate ?? 300);
const path = measureTelemetryPath();

// The OTLP sink: answers every export with 200 and an empty protobuf body, like a collector that keeps nothing.
const sink = createServer((req, res) => {
  req.resume();
  req.on('end', () => res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end());
});
sink.listen(0, '127.0.0.1');
await new Promise((r) => sink.once('listening', r));
const sinkUrl = `http://127.0.0.1:${(sink.address() as AddressInfo).port}`;

const upstream = await startUpstream();
const common = { LOG_LEVEL: 'info', TOLLGATE_ADMIN_PORT: 'off' };
const variants: { name: string; gw: RunningTollgate }[] = [];
for (const [name, env] of [
  ['off', { ...common, TOLLGATE_TELEMETRY: 'off' }],
  ['on', common],
  ['traced', { ...common, OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_ENDPOINT: sinkUrl, OTEL_TRACES_SAMPLER: 'always_on' }],
] as const) {
  variants.push({ name, gw: await startTollgate({ name, upstreamUrl: upstream.target.origin, env }) });
}

const workloads = [
  { name: 'chat JSON', body: chatBody() },
  { name: 'chat stream (20 words)', body: chatBody({ stream: true, words: 20 }) },
];

const quantile = (xs: number[], q: number): number => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))];
const median = (xs: number[]): number => quantile(xs, 0.5);
const results: Record<string, Record<string, RunResult[]>> = {};
try {
  for (const w of workloads) {
    results[w.name] = {};
    for (const v of variants) {
      results[w.name][v.name] = [];
      await saturate(v.gw.target, w.body, { connections: 8, seconds: 2 }); // warm-up (JIT, pools), one at a time
    }
    for (let r = 0; r < rounds; r++) {
      const round = await Promise.all(variants.map((v) => paced(v.gw.target, w.body, { rate, seconds })));
      round.forEach((res, i) => {
        if (res.failed > 0) throw new Error(`${variants[i].name}: ${res.failed} failed requests\n${variants[i].gw.proc.logs()}`);
        results[w.name][variants[i].name].push(res);
      });
    }
  }
} finally {
  for (const v of variants) await v.gw.close();
  await upstream.close();
  sink.close();
}

const lines = [
  `Telemetry overhead: gateway CPU per request, median of ${rounds} rounds × ${seconds}s at ${rate} requests/s per variant, variants loaded together (node ${process.version}).`,
  '',
  '| workload | off (µs/req) | on (µs/req) | on/off: median (p25–p75) of paired rounds | traced (µs/req) | traced/off: median (p25–p75) | latency p50 ms off / on / traced |',
  '|---|---|---|---|---|---|---|',
];
const summary: Record<string, Record<string, number>> = {};
for (const w of workloads) {
  const cpu = (name: string) => median(results[w.name][name].map((x) => x.cpuPerRequest));
  const p50 = (name: string) => median(results[w.name][name].map((x) => x.latency.p50)).toFixed(2);
  const ratios = (name: string) => results[w.name][name].map((x, i) => x.cpuPerRequest / results[w.name].off[i].cpuPerRequest);
  const paired = (name: string) => `${median(ratios(name)).toFixed(2)}× (${quantile(ratios(name), 0.25).toFixed(2)}–${quantile(ratios(name), 0.75).toFixed(2)})`;
  summary[w.name] = { off: cpu('off'), on: cpu('on'), traced: cpu('traced'), onRatio: median(ratios('on')), tracedRatio: median(ratios('traced')) };
  lines.push(`| ${w.name} | ${us(cpu('off'))} | ${us(cpu('on'))} | ${paired('on')} | ${us(cpu('traced'))} | ${paired('traced')} | ${p50('off')} / ${p50('on')} / ${p50('traced')} |`);
}
lines.push(
  '',
  `Telemetry code alone, in process: ${path.defaultUs.toFixed(1)} µs per request (metrics + access line; metrics alone ${path.metricsOnlyUs.toFixed(1)} µs), ${path.tracedUs.toFixed(1)} µs with three spans made and exported; ` +
    `${((path.defaultUs / (summary[workloads[0].name].off * 1e6)) * 100).toFixed(1)}% of the off variant's ${workloads[0].name} CPU.`,
);
console.log(lines.join('\n'));
if (values.json) writeFileSync(values.json, JSON.stringify({ rounds, seconds, rate, path, summary, results }, null, 2));
