// The operator's metrics (issue 7): reconciles by kind and result, the snapshot it writes, keys, invalid resources.
// The operator calls these; startOperatorTelemetry() gives it the same /metrics admin endpoint as the gateway.
import type { Counter, Gauge, Histogram, Meter } from '@opentelemetry/api';
import type { AdminLogger, AdminServer } from '../gateway/admin/server.ts';
import { startAdminServer } from '../gateway/admin/server.ts';
import { createTelemetry } from '../gateway/telemetry/telemetry.ts';
import type { Telemetry } from '../gateway/telemetry/telemetry.ts';

const RECONCILE_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export type ReconcileResult = 'success' | 'error' | 'conflict' | 'requeue';

export class OperatorMetrics {
  private readonly reconciles: Counter;
  private readonly reconcileDuration: Histogram;
  private readonly snapshotSize: Gauge;
  private readonly snapshotShards: Gauge;
  private readonly apiKeys: Gauge;
  private readonly invalid: Gauge;

  constructor(meter: Meter) {
    this.reconciles = meter.createCounter('tollgate.operator.reconciles', { description: 'Reconciles, by kind and result.', unit: '{reconcile}' });
    this.reconcileDuration = meter.createHistogram('tollgate.operator.reconcile.duration', {
      description: 'Time of one reconcile, by kind and result.',
      unit: 's',
      advice: { explicitBucketBoundaries: RECONCILE_BUCKETS },
    });
    this.snapshotSize = meter.createGauge('tollgate.operator.snapshot.size', { description: 'Bytes of the last snapshot written (all its Secrets).', unit: 'By' });
    this.snapshotShards = meter.createGauge('tollgate.operator.snapshot.shards', { description: 'Secrets (base + key shards) the last snapshot was written to.', unit: '{shard}' });
    this.apiKeys = meter.createGauge('tollgate.operator.api_keys', { description: 'API keys in the last snapshot written.', unit: '{key}' });
    this.invalid = meter.createGauge('tollgate.operator.invalid_resources', { description: 'Resources left out of the snapshot because they are invalid, by kind.', unit: '{resource}' });
  }

  /** One reconcile of `kind` ended with `result` after `seconds`. `kind` is a resource kind or `Snapshot`. */
  reconciled(kind: string, result: ReconcileResult, seconds: number): void {
    const a = { 'tollgate.kind': kind, 'tollgate.result': result };
    this.reconciles.add(1, a);
    this.reconcileDuration.record(seconds, a);
  }

  /** A snapshot was written: its total size and how many Secrets it spans. */
  snapshotWritten(bytes: number, shards: number, keys: number): void {
    this.snapshotSize.record(bytes);
    this.snapshotShards.record(shards);
    this.apiKeys.record(keys);
  }

  /** How many resources of `kind` are invalid right now (call with 0 once they are fixed). */
  invalidResources(kind: string, count: number): void {
    this.invalid.record(count, { 'tollgate.kind': kind });
  }
}

export interface OperatorTelemetry {
  metrics: OperatorMetrics;
  telemetry: Telemetry;
  admin: AdminServer | undefined;
  close(): Promise<void>;
}

/** Metrics for the operator process, with /metrics on `adminPort` (false: no server, e.g. in tests). */
export async function startOperatorTelemetry(opts: { adminPort: number | false; host?: string; env?: NodeJS.ProcessEnv; log?: AdminLogger }): Promise<OperatorTelemetry> {
  const telemetry = await createTelemetry({ env: opts.env, serviceName: 'tollgate-operator' });
  const admin = opts.adminPort === false ? undefined : await startAdminServer({ port: opts.adminPort, host: opts.host, prometheus: telemetry.prometheus, log: opts.log });
  return {
    metrics: new OperatorMetrics(telemetry.meter),
    telemetry,
    admin,
    async close() {
      await admin?.close();
      await telemetry.shutdown();
    },
  };
}
