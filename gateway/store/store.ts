// The one database seam: Postgres through a pg Pool, or PGlite in-process (in a worker thread). Same SQL on both.
import { join, resolve } from 'node:path';

/** Something that runs SQL: the store itself, or a transaction handle. */
export interface Queryable {
  /** One statement, `$n` parameters. NUMERIC and int8 come back as strings on both backends. */
  query<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<{ rows: T[] }>;
  /** A script of several statements, no parameters (migrations). */
  exec(sql: string): Promise<void>;
}

export interface Store extends Queryable {
  readonly kind: 'postgres' | 'pglite';
  /** Runs fn in one transaction: committed when it resolves, rolled back when it throws. */
  transaction<T>(fn: (q: Queryable) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

export interface StoreOptions {
  /** Postgres connection string; when absent the embedded PGlite is used. */
  databaseUrl?: string;
  /** Local state directory (PGlite data under `<dataDir>/pglite`). */
  dataDir?: string;
  /** Apply pending migrations before returning (default true). */
  migrate?: boolean;
}

/** Explicit option first, then TOLLGATE_DATA_DIR, then ./.tollgate. */
export function resolveDataDir(dataDir?: string, env: NodeJS.ProcessEnv = process.env): string {
  return resolve(dataDir ?? env.TOLLGATE_DATA_DIR ?? '.tollgate');
}

export async function openStore(options: StoreOptions = {}): Promise<Store> {
  const store = options.databaseUrl
    ? (await import('./pg-store.ts')).openPgStore(options.databaseUrl)
    : await (await import('./pglite-store.ts')).openPgliteStore(join(resolveDataDir(options.dataDir), 'pglite'));
  if (options.migrate !== false) {
    const { migrate } = await import('./migrate.ts');
    try {
      await migrate(store);
    } catch (err) {
      await store.close();
      throw err;
    }
  }
  return store;
}
