// How long and how hard each scenario runs: the full benchmark, and the smoke run CI uses to keep the harness alive.

export interface BenchPlan {
  name: 'full' | 'smoke';
  warmupSeconds: number;
  saturateSeconds: number;
  connections: number;
  rate: number;
  /** The fixed rate: `rateRounds` interleaved rounds of `rateSeconds` per target (bench/fixed-rate.ts). */
  rateSeconds: number;
  rateRounds: number;
  /** Rounds of the JSON scenario at saturation, interleaved across targets; the best round per target is reported. */
  rounds: number;
  sseSaturateSeconds: number;
  ttfbCount: number;
  chunkSeconds: number;
  chunkConcurrency: number;
  /** Concurrent slow streams wanted (capped by the fd limit: a relayed stream holds two sockets). */
  concurrentStreams: number;
  concurrentPaceMs: number;
  concurrentRampMs: number;
  ledgerRows: number;
  /** Runs of the Postgres ledger scenario (each on a fresh database); the median is reported. */
  ledgerRuns: number;
  seedRows: number;
  reportRepeats: number;
  profileSeconds: number;
  /**
   * bench/limits.ts: requests per segment (one state of one gateway in one round) and rounds; rounds of p99 at the
   * fixed rate (`rate` for `limitsRateSeconds`); requests per segment counted under callgrind (0: not run).
   */
  limitsRequests: number;
  limitsRounds: number;
  limitsRateRounds: number;
  limitsRateSeconds: number;
  limitsInstrRequests: number;
}

export const FULL: BenchPlan = {
  name: 'full',
  warmupSeconds: 2,
  saturateSeconds: 8,
  connections: 64,
  rate: 1000,
  rateSeconds: 2,
  rateRounds: 10,
  rounds: 2,
  sseSaturateSeconds: 6,
  ttfbCount: 400,
  chunkSeconds: 5,
  chunkConcurrency: 32,
  concurrentStreams: 10_000,
  concurrentPaceMs: 1200,
  concurrentRampMs: 20_000,
  ledgerRows: 200_000,
  ledgerRuns: 3,
  seedRows: 10_000_000,
  reportRepeats: 50,
  profileSeconds: 8,
  limitsRequests: 200,
  limitsRounds: 300,
  limitsRateRounds: 3,
  limitsRateSeconds: 8,
  limitsInstrRequests: 0,
};

export const SMOKE: BenchPlan = {
  name: 'smoke',
  warmupSeconds: 0.3,
  saturateSeconds: 1,
  connections: 16,
  rate: 200,
  rateSeconds: 1,
  rateRounds: 2,
  rounds: 1,
  sseSaturateSeconds: 1,
  ttfbCount: 20,
  chunkSeconds: 1,
  chunkConcurrency: 8,
  concurrentStreams: 200,
  concurrentPaceMs: 50,
  concurrentRampMs: 2000,
  ledgerRows: 5_000,
  ledgerRuns: 1,
  seedRows: 10_000,
  reportRepeats: 5,
  profileSeconds: 0,
  limitsRequests: 100,
  limitsRounds: 2,
  limitsRateRounds: 1,
  limitsRateSeconds: 1,
  limitsInstrRequests: 0,
};
