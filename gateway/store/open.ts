// Opens the store: Postgres when a URL is given, else the embedded PGlite; migrations applied unless told otherwise.
import { join, resolve } from 'node:path';
import type { Store } from './store.ts';

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
