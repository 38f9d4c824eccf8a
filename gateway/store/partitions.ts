// Maintenance of usage_events' day partitions (migration 0002): creates the coming days before rows arrive, so the
// writer never waits on DDL and nothing is created on the request path; moves rows that reached the default partition
// into their day when it creates it; with a retention, drops whole days past it (usage_hourly is never touched).
// Runs at start and hourly, under a try-lock: with many pods, one does the work and the others skip.
import type { Queryable, Store } from './store.ts';

const DAY_MS = 86_400_000;
// Arbitrary; the same for every tollgate pod on one database (the migration lock uses another).
const MAINTENANCE_LOCK_KEY = '7402155019843650202';
const PARTITION_NAME = /^usage_events_p(\d{4})(\d{2})(\d{2})$/;

export interface PartitionOptions {
  /** The clock (epoch ms); tests move it. */
  now?: number;
  /** Days after today to have partitions for. Default 2. */
  daysAhead?: number;
  /** Keep raw rows for this many whole UTC days before today; undefined or 0 keeps them for ever. */
  retentionDays?: number;
}

export interface MaintenanceResult {
  /** False when another process held the maintenance lock (it does the work). */
  ran: boolean;
  created: string[];
  dropped: string[];
  /** Rows moved out of the default partition into a created day. */
  moved: number;
  /** Rows past retention deleted from the default partition. */
  purged: number;
}

export function partitionName(dayMs: number): string {
  return `usage_events_p${new Date(dayMs).toISOString().slice(0, 10).replaceAll('-', '')}`;
}

function dayOf(name: string): number | undefined {
  const m = PARTITION_NAME.exec(name);
  return m ? Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])) : undefined;
}

// Bounds go into DDL as literals (DDL takes no parameters); they are ISO strings made here, never input.
const literal = (ms: number) => `'${new Date(ms).toISOString()}'`;

export async function maintainPartitions(store: Store, opts: PartitionOptions = {}): Promise<MaintenanceResult> {
  const today = Math.floor((opts.now ?? Date.now()) / DAY_MS) * DAY_MS;
  const ahead = opts.daysAhead ?? 2;
  const result: MaintenanceResult = { ran: false, created: [], dropped: [], moved: 0, purged: 0 };
  return store.transaction(async (q) => {
    const { rows: lock } = await q.query<{ got: boolean }>('SELECT pg_try_advisory_xact_lock($1::bigint) AS got', [MAINTENANCE_LOCK_KEY]);
    if (!lock[0].got) return result;
    result.ran = true;
    const existing = new Set(await partitions(q));
    for (let day = today; day <= today + ahead * DAY_MS; day += DAY_MS) {
      const name = partitionName(day);
      if (existing.has(name)) continue;
      result.moved += await createDay(q, name, day);
      result.created.push(name);
    }
    if (opts.retentionDays) {
      const cutoff = today - opts.retentionDays * DAY_MS;
      for (const name of existing) {
        const day = dayOf(name);
        if (day === undefined || day + DAY_MS > cutoff) continue;
        // DETACH first: DROP of an attached partition also locks the parent; this way the lock is held only briefly.
        await q.exec(`ALTER TABLE usage_events DETACH PARTITION ${name}; DROP TABLE ${name}`);
        result.dropped.push(name);
      }
      const { rows } = await q.query<{ n: string }>(
        `WITH gone AS (DELETE FROM usage_events_default WHERE occurred_at < ${literal(cutoff)}::timestamptz RETURNING 1) SELECT count(*) AS n FROM gone`,
      );
      result.purged = Number(rows[0].n);
    }
    return result;
  });
}

async function partitions(q: Queryable): Promise<string[]> {
  const { rows } = await q.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
     WHERE i.inhparent = 'usage_events'::regclass`,
  );
  return rows.map((r) => r.name).filter((n) => PARTITION_NAME.test(n));
}

/**
 * Builds the day's table, moves in whatever the default partition holds for that day, then attaches it: attaching
 * locks the parent less than CREATE TABLE ... PARTITION OF, so writers keep inserting meanwhile. Returns rows moved.
 */
async function createDay(q: Queryable, name: string, day: number): Promise<number> {
  const from = `${literal(day)}::timestamptz`;
  const to = `${literal(day + DAY_MS)}::timestamptz`;
  await q.exec(`CREATE TABLE ${name} (LIKE usage_events INCLUDING DEFAULTS INCLUDING CONSTRAINTS)`);
  const { rows } = await q.query<{ n: string }>(
    `WITH moved AS (DELETE FROM usage_events_default WHERE occurred_at >= ${from} AND occurred_at < ${to} RETURNING *),
       ins AS (INSERT INTO ${name} SELECT * FROM moved RETURNING 1)
     SELECT count(*) AS n FROM ins`,
  );
  await q.exec(`ALTER TABLE usage_events ATTACH PARTITION ${name} FOR VALUES FROM (${from}) TO (${to})`);
  return Number(rows[0].n);
}

export interface PartitionMaintenance {
  stop(): void;
}

/** Runs maintainPartitions every intervalMs (default hourly) until stopped; a failure is reported and retried next time. */
export function schedulePartitionMaintenance(
  store: Store,
  opts: Omit<PartitionOptions, 'now'> & { intervalMs?: number; onError?: (err: Error) => void } = {},
): PartitionMaintenance {
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    maintainPartitions(store, opts)
      .catch((err: unknown) => opts.onError?.(err as Error))
      .finally(() => (running = false));
  }, opts.intervalMs ?? 3_600_000);
  // Never what keeps the process alive.
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
