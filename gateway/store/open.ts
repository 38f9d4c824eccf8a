// Opens the store: Postgres when a URL is given, else the embedded PGlite; migrations applied unless told otherwise,
// then the coming partitions made and the retention applied.
import { join, resolve } from 'node:path';
import type { Store } from './store.ts';

export interface StoreOptions {
  /** Postgres connection string; when absent the embedded PGlite is used. */
  databaseUrl?: string;
  /** Local state directory (PGlite data under `<dataDir>/pglite`). */
  dataDir?: string;
  /** Apply pending migrations before returning (default true). */
  migrate?: boolean;
  /**
   * Days of raw usage_events to keep (whole UTC days before today); older day partitions are dropped, the hourly
   * rollups kept. Default: TOLLGATE_USAGE_RETENTION_DAYS, else for ever. Applies when migrating.
   */
  retentionDays?: number;
}

/** The retention option, else TOLLGATE_USAGE_RETENTION_DAYS; undefined keeps raw rows for ever. */
export function resolveRetentionDays(days?: number, env: NodeJS.ProcessEnv = process.env): number | undefined {
  const raw = days ?? (env.TOLLGATE_USAGE_RETENTION_DAYS ? Number(env.TOLLGATE_USAGE_RETENTION_DAYS) : undefined);
  if (raw === undefined || raw === 0) return undefined;
  if (!Number.isInteger(raw) || raw < 1) throw new RangeError(`usage retention must be a whole number of days ≥ 1 (0 or unset: keep for ever), got ${String(raw)}`);
  return raw;
}

/** Explicit option first, then TOLLGATE_DATA_DIR, then ./.tollgate. */
export function resolveDataDir(dataDir?: string, env: NodeJS.ProcessEnv = process.env): string {
  return resolve(dataDir ?? env.TOLLGATE_DATA_DIR ?? '.tollgate');
}

export async function openStore(options: StoreOptions = {}): Promise<Store> {
  const store = options.databaseUrl
    ? (await import('./pg-store.ts')).openPgStore(options.databaseUrl)
    : await (await import('./pglite-store.ts')).openPgliteStore(join(resolveDataDir(options.dataDir), 'pglite'));
  if (options.migrate === false) return store;
  const { migrate } = await import('./migrate.ts');
  const { maintainPartitions, schedulePartitionMaintenance } = await import('./partitions.ts');
  let retentionDays: number | undefined;
  try {
    retentionDays = resolveRetentionDays(options.retentionDays);
    await migrate(store);
    // The coming days' partitions exist before the first row is written (and again every hour, off the request path).
    await maintainPartitions(store, { retentionDays });
  } catch (err) {
    await store.close();
    throw err;
  }
  const maintenance = schedulePartitionMaintenance(store, {
    retentionDays,
    onError: (err) => console.error(`tollgate store: partition maintenance failed, retried in an hour: ${err.message}`),
  });
  return {
    ...store,
    close() {
      maintenance.stop();
      return store.close();
    },
  };
}
