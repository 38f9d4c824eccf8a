// One process's telemetry: the meter (always, for /metrics), the tracer (only when an exporter is configured), and
// the access log. Nothing is registered globally, so several gateways in one process (tests) keep theirs apart.
import type { Meter, Tracer } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import type { IMetricReader, PushMetricExporter } from '@opentelemetry/sdk-metrics';
import { MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import type { SpanExporter, SpanProcessor } from '@opentelemetry/sdk-trace';
import { BatchSpanProcessor, ConsoleSpanExporter, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import type { Logger } from 'pino';
import type { Ledger } from '../ledger/ledger.ts';
import type { SnapshotHolder } from '../snapshot/holder.ts';
import type { TelemetryConfig } from './config.ts';
import { telemetryConfig } from './config.ts';
import type { GatewayInstruments } from './instruments.ts';
import { createInstruments } from './instruments.ts';
import { LocalHistograms } from './local-histograms.ts';
import { observeProcess } from './process-metrics.ts';
import type { ProcessMetrics } from './process-metrics.ts';
import { samplerFromConfig } from './sampler.ts';

export const SCOPE = 'tollgate';

export interface TelemetryOptions {
  /** Where OTEL_* and TOLLGATE_TELEMETRY are read; default process.env. */
  env?: NodeJS.ProcessEnv;
  /** Spans also go here, synchronously, and tracing is on whatever the env says (tests inject an in-memory exporter). */
  spanExporter?: SpanExporter;
  /** The access log goes here (pino); silent when absent. */
  logger?: Logger;
  /** Resource service.name when OTEL_SERVICE_NAME is not set. */
  serviceName?: string;
  /** OTLP exporters, made by createTelemetry() when the environment asks for them. */
  otlp?: { spans?: SpanExporter; metrics?: PushMetricExporter };
}

export class Telemetry {
  readonly config: TelemetryConfig;
  readonly enabled: boolean;
  readonly meter: Meter;
  readonly instruments: GatewayInstruments;
  /** Undefined when no span exporter is configured: the request path then builds no span and no attribute. */
  readonly tracer: Tracer | undefined;
  readonly propagator = new W3CTraceContextPropagator();
  readonly prometheus: PrometheusExporter;
  readonly log: Logger | undefined;
  private readonly meterProvider: MeterProvider;
  private readonly processMetrics: ProcessMetrics;
  private readonly tracerProvider: TracerProvider | undefined;

  constructor(opts: TelemetryOptions = {}) {
    const env = opts.env ?? process.env;
    this.config = telemetryConfig(env);
    this.enabled = this.config.enabled;
    this.log = opts.logger;
    const resource = defaultResource()
      .merge(resourceFromAttributes({ 'service.name': env.OTEL_SERVICE_NAME || opts.serviceName || this.config.serviceName, ...(env.POD_NAME ? { 'k8s.pod.name': env.POD_NAME } : {}) }))
      .merge(detectResources({ detectors: [envDetector] }));
    // The per-request histograms are aggregated here and collected by every reader beside the SDK's own metrics.
    const local = new LocalHistograms(SCOPE);
    this.prometheus = new PrometheusExporter({ preventServerStart: true, withoutScopeInfo: true, metricProducers: [local] });
    const readers: IMetricReader[] = [this.prometheus];
    if (this.enabled && opts.otlp?.metrics) readers.push(new PeriodicExportingMetricReader({ exporter: opts.otlp.metrics, exportIntervalMillis: this.config.exportIntervalMs, metricProducers: [local] }));
    this.meterProvider = new MeterProvider({ resource, readers });
    this.meter = this.meterProvider.getMeter(SCOPE);
    this.instruments = createInstruments(this.meter, local);
    this.processMetrics = observeProcess(this.meter);

    const processors: SpanProcessor[] = [];
    if (this.enabled) {
      if (opts.spanExporter) processors.push(new SimpleSpanProcessor({ exporter: opts.spanExporter }));
      if (opts.otlp?.spans) processors.push(new BatchSpanProcessor({ exporter: opts.otlp.spans }));
      if (this.config.consoleTraces) processors.push(new BatchSpanProcessor({ exporter: new ConsoleSpanExporter() }));
    }
    if (processors.length > 0) {
      this.tracerProvider = new TracerProvider({ resource, sampler: samplerFromConfig(this.config.sampler, this.config.samplerArg), spanProcessors: processors });
      this.tracer = this.tracerProvider.getTracer(SCOPE);
    }
  }

  /** Ledger queue depth and journal size, read when metrics are collected (no cost per request). */
  observeLedger(ledger: Pick<Ledger, 'health'>): void {
    const depth = this.meter.createObservableGauge('tollgate.ledger.queue_depth', { description: 'Ledger rows journaled and not yet committed to the database.', unit: '{row}' });
    const size = this.meter.createObservableGauge('tollgate.ledger.journal.size', { description: 'Bytes of journal segments on disk waiting for the database.', unit: 'By' });
    const ready = this.meter.createObservableGauge('tollgate.ledger.ready', { description: '1 when the ledger takes rows, 0 when the journal is full or closed.' });
    this.meter.addBatchObservableCallback(
      (r) => {
        const h = ledger.health();
        r.observe(depth, h.pendingRows);
        r.observe(size, h.journalBytes);
        r.observe(ready, h.ready ? 1 : 0);
      },
      [depth, size, ready],
    );
  }

  /** The snapshot this pod serves: version (as an attribute of an info gauge), generation and age. */
  observeSnapshot(holder: SnapshotHolder): void {
    const info = this.meter.createObservableGauge('tollgate.snapshot.info', { description: 'Always 1; tollgate.snapshot.version names the snapshot served.' });
    const generation = this.meter.createObservableGauge('tollgate.snapshot.generation', { description: 'Source generation of the snapshot served.' });
    const age = this.meter.createObservableGauge('tollgate.snapshot.age', { description: 'Seconds since the snapshot served was loaded.', unit: 's' });
    this.meter.addBatchObservableCallback(
      (r) => {
        const s = holder.current;
        if (!s) return;
        r.observe(info, 1, { 'tollgate.snapshot.version': s.version });
        r.observe(generation, s.generation);
        r.observe(age, (Date.now() - s.loadedAt) / 1000);
      },
      [info, generation, age],
    );
  }

  /** The ledger writer's hook: one database commit of `rows` rows took `seconds`. */
  readonly ledgerCommitted = (rows: number, seconds: number, ok: boolean): void => {
    if (!this.enabled) return;
    this.instruments.ledgerBatchSize.record(rows);
    this.instruments.ledgerCommitDuration.record(seconds);
    if (!ok) this.instruments.ledgerCommitFailures.add(1);
  };

  async forceFlush(): Promise<void> {
    await Promise.all([this.tracerProvider?.forceFlush(), this.meterProvider.forceFlush()]);
  }

  async shutdown(): Promise<void> {
    this.processMetrics.stop();
    await Promise.allSettled([this.tracerProvider?.shutdown(), this.meterProvider.shutdown(), this.flushLog()]);
  }

  /** Writes out buffered access lines; never waits more than a second. */
  private flushLog(): Promise<void> {
    const log = this.log;
    if (!log) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, 1000);
      timer.unref();
      log.flush(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }
}

/** A Telemetry with the OTLP exporters the environment asks for (loaded only then: they are not on the default path). */
export async function createTelemetry(opts: Omit<TelemetryOptions, 'otlp'> = {}): Promise<Telemetry> {
  const config = telemetryConfig(opts.env ?? process.env);
  const otlp: TelemetryOptions['otlp'] = {};
  if (config.enabled && config.otlpTraces) otlp.spans = new (await import('@opentelemetry/exporter-trace-otlp-http')).OTLPTraceExporter();
  if (config.enabled && config.otlpMetrics) otlp.metrics = new (await import('@opentelemetry/exporter-metrics-otlp-http')).OTLPMetricExporter();
  return new Telemetry({ ...opts, otlp });
}
