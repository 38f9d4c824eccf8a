// The ledger as the rest of the gateway sees it: record() on the request path (journal only; the relay goes
// through sink.ts),
// a background writer into the store, health for readiness, and the usage report.
import { join } from 'node:path';
import type { Store } from '../store/store.ts';
import { resolveDataDir } from '../store/open.ts';
import { Journal } from './journal.ts';
import type { JournalHealth, RejectedRow } from './journal.ts';
import { stderrLogger } from './logger.ts';
import type { LedgerLogger } from './logger.ts';
import type { RetryPolicy } from './retry-delay.ts';
import type { UsageReport, UsageReportQuery } from './report-types.ts';
import type { LedgerRow } from './row.ts';
import { usageReport } from './usage-report.ts';
import { adminUsage, recentRequests } from './admin-queries.ts';
import type { AdminUsage, AdminUsageQuery, RecentRequest, RecentRequestsQuery } from './admin-queries.ts';
import { writeUsageBatch } from './writer.ts';

export interface LedgerOptions {
  /** Owned by the caller: close() does not close it. */
  store: Store;
  /** Default `<dataDir>/journal` (see resolveDataDir). */
  journalDir?: string;
  /** Default 1 GiB. Past it record() throws LedgerFullError and health() is not ready. */
  maxJournalBytes?: number;
  /**
   * Longest a recorded row waits before its segment is sealed for the database. Default 250 on Postgres, 1000 on
   * PGlite: its statement costs more per batch (rollup upserts per touched bucket, planning; bench/ledger-throughput.ts),
   * and larger batches cost less CPU a row.
   */
  flushIntervalMs?: number;
  /**
   * Rows per segment and per database statement. Default 2000 on Postgres, 8000 on PGlite: each of its statements has a
   * fixed cost of a few ms in WebAssembly, paid per batch; the 1 s seal still bounds how long a row waits.
   */
  batchSize?: number;
  /**
   * Batches committing at once. Default 3 on Postgres (while one waits for its commit the others insert;
   * measured: +10% rows/s over 2 on two cores, more gains nothing), 1 on PGlite (one connection: nothing to overlap).
   */
  writers?: number;
  /** How long close() may spend draining. Default 5000. */
  closeTimeoutMs?: number;
  logger?: LedgerLogger;
  retry?: RetryPolicy;
  /** Told after each database commit: rows in it, seconds it took, whether it succeeded (metrics). */
  onCommit?: (rows: number, seconds: number, ok: boolean) => void;
}

export interface Ledger {
  /**
   * Durable when the promise resolves (the rows of one event-loop turn share one append to the local journal);
   * throws LedgerFullError at the bound, LedgerClosedError after close(); the promise rejects when the write failed.
   * The writer may take the row object itself (not a copy) to the database: do not change it, or its
   * detail, afterwards.
   */
  record(row: LedgerRow): Promise<void>;
  health(): JournalHealth;
  usageReport(q: UsageReportQuery): Promise<UsageReport>;
  /** The admin API's usage view (any organization, project, key or model; hour or day buckets). */
  adminUsage(q: AdminUsageQuery): Promise<AdminUsage>;
  /** The admin API's recent requests, newest first. */
  recentRequests(q: RecentRequestsQuery): Promise<{ rows: RecentRequest[]; more: boolean }>;
  /** Moves everything recorded so far into the database. */
  flush(): Promise<void>;
  /** Stops taking rows and drains within closeTimeoutMs; whatever is left replays at next start. */
  close(): Promise<void>;
}

export const DEFAULT_MAX_JOURNAL_BYTES = 1024 ** 3;

export function createLedger(options: LedgerOptions): Ledger {
  const { store } = options;
  const logger = options.logger ?? stderrLogger;
  const batchSize = options.batchSize ?? (store.kind === 'pglite' ? 8000 : 2000);
  const journal = new Journal({
    dir: options.journalDir ?? join(resolveDataDir(), 'journal'),
    maxBytes: options.maxJournalBytes ?? DEFAULT_MAX_JOURNAL_BYTES,
    segmentRows: batchSize,
    segmentMs: options.flushIntervalMs ?? (store.kind === 'pglite' ? 1000 : 250),
    batchSize,
    writers: options.writers ?? (store.kind === 'postgres' ? 3 : 1),
    commit: options.onCommit ? timed(options.onCommit, (rows) => commitRows(store, rows)) : (rows) => commitRows(store, rows),
    logger,
    retry: options.retry,
  });
  return {
    record: (row) => journal.record(row),
    health: () => journal.health(),
    usageReport: (q) => usageReport(store, q),
    adminUsage: (q) => adminUsage(store, q),
    recentRequests: (q) => recentRequests(store, q),
    flush: () => journal.flush(),
    close: () => journal.close(options.closeTimeoutMs ?? 5_000),
  };
}

function timed<T>(onCommit: NonNullable<LedgerOptions['onCommit']>, commit: (rows: LedgerRow[]) => Promise<T>): (rows: LedgerRow[]) => Promise<T> {
  return async (rows) => {
    const start = performance.now();
    try {
      const out = await commit(rows);
      onCommit(rows.length, (performance.now() - start) / 1000, true);
      return out;
    } catch (err) {
      onCommit(rows.length, (performance.now() - start) / 1000, false);
      throw err;
    }
  };
}

/**
 * Writes a batch; when the database rejects its data (not its availability), halves the batch
 * until the offending rows are isolated and returns them, so one bad row cannot block the rest.
 */
export async function commitRows(store: Store, rows: LedgerRow[]): Promise<RejectedRow[]> {
  try {
    await writeUsageBatch(store, rows);
    return [];
  } catch (err) {
    if (!isDataError(err)) throw err;
    if (rows.length === 1) return [{ row: rows[0], reason: (err as Error).message }];
    const mid = rows.length >> 1;
    return [...(await commitRows(store, rows.slice(0, mid))), ...(await commitRows(store, rows.slice(mid)))];
  }
}

// SQLSTATE classes 22 (data exception), 23 (integrity) and 54 (program limit): retrying the same
// rows cannot succeed. Anything else (connection, shutdown, resources) is worth retrying.
function isDataError(err: unknown): boolean {
  const code = (err as { code?: unknown }).code;
  return typeof code === 'string' && /^(22|23|54)/.test(code);
}
