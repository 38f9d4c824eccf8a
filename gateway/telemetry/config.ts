// What telemetry a process runs, read from the standard OTEL_* variables plus tollgate's own (docs/observability.md).

export interface TelemetryConfig {
  /** TOLLGATE_TELEMETRY=off: no metrics, no spans, no access log (the "off" side of bench/telemetry-overhead.ts). */
  enabled: boolean;
  /** Spans are exported over OTLP/HTTP (the exporter reads OTEL_EXPORTER_OTLP_* itself). */
  otlpTraces: boolean;
  /** Spans are printed to stdout (OTEL_TRACES_EXPORTER=console), for local debugging. */
  consoleTraces: boolean;
  /** Metrics are pushed over OTLP/HTTP every exportIntervalMs, beside the Prometheus endpoint. */
  otlpMetrics: boolean;
  exportIntervalMs: number;
  sampler: string;
  samplerArg: string | undefined;
  serviceName: string;
}

const TRUE = new Set(['1', 'true', 'yes', 'on']);

function list(v: string | undefined): string[] {
  return (v ?? '')
    .split(',')
    .map((s) => s.trim().toLowerCase())
    .filter((s) => s !== '');
}

/**
 * Traces and OTLP metrics are on when an exporter is named (OTEL_TRACES_EXPORTER / OTEL_METRICS_EXPORTER = otlp)
 * or an OTLP endpoint is set and no exporter list says otherwise; `none` and OTEL_SDK_DISABLED turn them off.
 */
export function telemetryConfig(env: NodeJS.ProcessEnv = process.env): TelemetryConfig {
  const sdkDisabled = TRUE.has((env.OTEL_SDK_DISABLED ?? '').toLowerCase());
  const endpoint = (name: string) => (env[name] ?? '') !== '' || (env.OTEL_EXPORTER_OTLP_ENDPOINT ?? '') !== '';
  const traces = list(env.OTEL_TRACES_EXPORTER);
  const metrics = list(env.OTEL_METRICS_EXPORTER);
  const interval = Number(env.OTEL_METRIC_EXPORT_INTERVAL);
  return {
    enabled: (env.TOLLGATE_TELEMETRY ?? '').toLowerCase() !== 'off',
    otlpTraces: !sdkDisabled && (traces.length > 0 ? traces.includes('otlp') : endpoint('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT')),
    consoleTraces: !sdkDisabled && traces.includes('console'),
    otlpMetrics: !sdkDisabled && (metrics.length > 0 ? metrics.includes('otlp') : endpoint('OTEL_EXPORTER_OTLP_METRICS_ENDPOINT')),
    exportIntervalMs: Number.isFinite(interval) && interval > 0 ? interval : 60_000,
    sampler: (env.OTEL_TRACES_SAMPLER ?? 'parentbased_always_on').trim().toLowerCase(),
    samplerArg: env.OTEL_TRACES_SAMPLER_ARG,
    serviceName: env.OTEL_SERVICE_NAME || 'tollgate-gateway',
  };
}

/**
 * The admin (metrics) port from TOLLGATE_ADMIN_PORT, else TOLLGATE_METRICS_PORT (what the Helm chart sets), else 9464.
 * `0` or `off` turns the admin server off.
 */
export function adminPortFromEnv(env: NodeJS.ProcessEnv = process.env): number | false {
  const raw = (env.TOLLGATE_ADMIN_PORT ?? env.TOLLGATE_METRICS_PORT ?? '').trim().toLowerCase();
  if (raw === '') return 9464;
  if (raw === '0' || raw === 'off' || raw === 'false') return false;
  const port = Number(raw);
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new Error(`TOLLGATE_ADMIN_PORT must be a port number, 0 or off (got "${raw}")`);
  return port;
}
