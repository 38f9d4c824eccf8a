// Which exporters run for which OTEL_* environment, and the admin port rules.
import { describe, expect, it } from 'vitest';
import { adminPortFromEnv, telemetryConfig } from './config.ts';

describe('telemetryConfig', () => {
  it('exports nothing by default: no tracer, metrics only on /metrics', () => {
    expect(telemetryConfig({})).toMatchObject({ enabled: true, otlpTraces: false, consoleTraces: false, otlpMetrics: false, sampler: 'parentbased_always_on', serviceName: 'tollgate-gateway' });
  });

  it('an OTLP endpoint turns both OTLP exporters on, unless an exporter list says otherwise', () => {
    expect(telemetryConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })).toMatchObject({ otlpTraces: true, otlpMetrics: true });
    expect(telemetryConfig({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://c:4318/v1/traces' })).toMatchObject({ otlpTraces: true, otlpMetrics: false });
    expect(telemetryConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_EXPORTER: 'none', OTEL_METRICS_EXPORTER: 'prometheus' })).toMatchObject({ otlpTraces: false, otlpMetrics: false });
    expect(telemetryConfig({ OTEL_TRACES_EXPORTER: 'otlp,console' })).toMatchObject({ otlpTraces: true, consoleTraces: true });
  });

  it('OTEL_SDK_DISABLED wins over everything; TOLLGATE_TELEMETRY=off turns per-request telemetry off', () => {
    expect(telemetryConfig({ OTEL_SDK_DISABLED: 'true', OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c' })).toMatchObject({ otlpTraces: false, otlpMetrics: false });
    expect(telemetryConfig({ TOLLGATE_TELEMETRY: 'OFF' }).enabled).toBe(false);
  });

  it('reads the sampler, the export interval and the service name', () => {
    expect(telemetryConfig({ OTEL_TRACES_SAMPLER: 'TraceIdRatio', OTEL_TRACES_SAMPLER_ARG: '0.25', OTEL_METRIC_EXPORT_INTERVAL: '15000', OTEL_SERVICE_NAME: 'gw' })).toMatchObject({
      sampler: 'traceidratio',
      samplerArg: '0.25',
      exportIntervalMs: 15000,
      serviceName: 'gw',
    });
    expect(telemetryConfig({ OTEL_METRIC_EXPORT_INTERVAL: 'soon' }).exportIntervalMs).toBe(60000);
  });
});

describe('adminPortFromEnv', () => {
  it('defaults to 9464, follows TOLLGATE_ADMIN_PORT then the chart’s TOLLGATE_METRICS_PORT, and 0/off turn it off', () => {
    expect(adminPortFromEnv({})).toBe(9464);
    expect(adminPortFromEnv({ TOLLGATE_METRICS_PORT: '9100' })).toBe(9100);
    expect(adminPortFromEnv({ TOLLGATE_ADMIN_PORT: '9200', TOLLGATE_METRICS_PORT: '9100' })).toBe(9200);
    expect(adminPortFromEnv({ TOLLGATE_ADMIN_PORT: '0' })).toBe(false);
    expect(adminPortFromEnv({ TOLLGATE_ADMIN_PORT: 'off' })).toBe(false);
    expect(() => adminPortFromEnv({ TOLLGATE_ADMIN_PORT: '70000' })).toThrow(/TOLLGATE_ADMIN_PORT/);
  });
});
