// The local histograms must export exactly what the SDK's own histogram would for the same records.
import { AggregationTemporality, DataPointType, InMemoryMetricExporter, MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import type { HistogramMetricData } from '@opentelemetry/sdk-metrics';
import { describe, expect, it } from 'vitest';
import { LocalHistograms } from './local-histograms.ts';

const BOUNDARIES = [0.01, 0.02, 0.04, 0.08];

async function exported(record: (local: LocalHistograms, sdk: (v: number, a: Record<string, string>) => void) => void) {
  const local = new LocalHistograms('tollgate');
  const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000, metricProducers: [local] });
  const provider = new MeterProvider({ readers: [reader] });
  const sdk = provider.getMeter('tollgate').createHistogram('sdk.duration', { unit: 's', advice: { explicitBucketBoundaries: BOUNDARIES } });
  record(local, (v, a) => sdk.record(v, a));
  await reader.forceFlush();
  const metrics = exporter.getMetrics().flatMap((r) => r.scopeMetrics.flatMap((s) => s.metrics)) as HistogramMetricData[];
  await provider.shutdown();
  return metrics;
}

describe('local histograms', () => {
  it('bucket, count, sum, min and max as the SDK histogram does, one point per key', async () => {
    const values = [0, 0.005, 0.01, 0.0100001, 0.02, 0.05, 0.08, 0.5, 3, -1, Number.NaN];
    const metrics = await exported((local, sdk) => {
      const h = local.create('local.duration', { description: 'd', unit: 's', boundaries: BOUNDARIES });
      for (const v of values) {
        h.record(v, 'a', () => ({ route: 'a' }));
        sdk(v, { route: 'a' });
      }
      h.record(0.03, 'b', () => ({ route: 'b' }));
      sdk(0.03, { route: 'b' });
      local.create('never.recorded', { description: 'd', unit: 's', boundaries: BOUNDARIES });
    });
    const byName = new Map(metrics.map((m) => [m.descriptor.name, m]));
    expect(byName.has('never.recorded')).toBe(false);
    const mine = byName.get('local.duration')!;
    const theirs = byName.get('sdk.duration')!;
    expect(mine.dataPointType).toBe(DataPointType.HISTOGRAM);
    expect(mine.aggregationTemporality).toBe(AggregationTemporality.CUMULATIVE);
    expect(mine.descriptor).toMatchObject({ description: 'd', unit: 's' });
    const points = (m: HistogramMetricData) => m.dataPoints.map((p) => ({ attributes: p.attributes, value: p.value })).sort((x, y) => String(x.attributes.route).localeCompare(String(y.attributes.route)));
    expect(points(mine)).toEqual(points(theirs));
  });
});
