// Every gateway metric, created once per process. Names and buckets follow the GenAI semantic conventions where
// they define the metric; tollgate.* is ours. docs/observability.md lists each with its meaning.
import type { Counter, Histogram, Meter } from '@opentelemetry/api';
import type { LocalHistogram, LocalHistograms } from './local-histograms.ts';
import { SummedCounter } from './summed-counter.ts';

// Bucket boundaries the conventions advise (gen-ai-metrics.md), so dashboards built for them fit.
const TOKEN_BUCKETS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864];
const DURATION_BUCKETS = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92];
const TTFT_BUCKETS = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10];
const TPOT_BUCKETS = [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5];
// The gateway's own time is sub-millisecond when healthy: fine buckets from 50 µs up.
const OVERHEAD_BUCKETS = [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1];
const COMMIT_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const BATCH_BUCKETS = [1, 5, 10, 25, 50, 100, 250, 500, 1000, 2000, 5000];

export interface GatewayInstruments {
  // Recorded on every request: aggregated locally (local-histograms.ts), no attribute hashing per record.
  tokenUsage: LocalHistogram;
  requestDuration: LocalHistogram;
  timeToFirstToken: LocalHistogram;
  timePerOutputToken: LocalHistogram;
  requests: SummedCounter;
  costPoints: SummedCounter;
  upstreamErrors: Counter;
  overhead: LocalHistogram;
  ledgerBatchSize: Histogram;
  ledgerCommitDuration: Histogram;
  ledgerCommitFailures: Counter;
}

export function createInstruments(meter: Meter, local: LocalHistograms): GatewayInstruments {
  return {
    tokenUsage: local.create('gen_ai.client.token.usage', {
      description: 'Tokens per billed request, by gen_ai.token.type (input includes cache reads and writes).',
      unit: '{token}',
      boundaries: TOKEN_BUCKETS,
    }),
    requestDuration: local.create('gen_ai.server.request.duration', {
      description: 'Time from the request arriving to the last byte of the response, for requests that resolved a model.',
      unit: 's',
      boundaries: DURATION_BUCKETS,
    }),
    timeToFirstToken: local.create('gen_ai.server.time_to_first_token', {
      description: 'Streams: time from the request arriving to the first upstream body chunk.',
      unit: 's',
      boundaries: TTFT_BUCKETS,
    }),
    timePerOutputToken: local.create('gen_ai.server.time_per_output_token', {
      description: 'Streams: time after the first chunk divided by the output tokens after the first.',
      unit: 's',
      boundaries: TPOT_BUCKETS,
    }),
    // Added on every request: summed here, reported at collection (no attribute hashing per request).
    requests: new SummedCounter(meter, 'tollgate.requests', {
      description: 'Requests answered, by endpoint and HTTP status.',
      unit: '{request}',
    }),
    costPoints: new SummedCounter(meter, 'tollgate.cost_points', {
      description: 'Cost points billed, by organization and model. A float sum: the ledger is the exact record.',
      unit: '{point}',
    }),
    upstreamErrors: meter.createCounter('tollgate.upstream.errors', {
      description: 'Failed upstream attempts, by provider and error.type (timeout, unavailable, an HTTP status, stream_interrupted).',
      unit: '{error}',
    }),
    overhead: local.create('tollgate.gateway.overhead', {
      description: 'Gateway time per proxied request: total time minus time spent waiting on the upstream.',
      unit: 's',
      boundaries: OVERHEAD_BUCKETS,
    }),
    ledgerBatchSize: meter.createHistogram('tollgate.ledger.batch_size', {
      description: 'Rows per database commit of the ledger writer.',
      unit: '{row}',
      advice: { explicitBucketBoundaries: BATCH_BUCKETS },
    }),
    ledgerCommitDuration: meter.createHistogram('tollgate.ledger.commit.duration', {
      description: 'Time of one ledger batch commit into the database (successful or not).',
      unit: 's',
      advice: { explicitBucketBoundaries: COMMIT_BUCKETS },
    }),
    ledgerCommitFailures: meter.createCounter('tollgate.ledger.commit.failures', {
      description: 'Ledger batch commits that failed (rows stay journaled and are retried).',
      unit: '{commit}',
    }),
  };
}
