// In-house migration runner: numbered .sql files, applied in order, in one transaction,
// under an advisory lock so pods starting together apply each migration once.
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Store } from './store.ts';

export const MIGRATIONS_DIR = fileURLToPath(new URL('./migrations/', import.meta.url));

// Arbitrary constant; only has to be the same for every tollgate pod on one database.
const MIGRATION_LOCK_KEY = '7402155019843650201';

const FILE_NAME = /^(\d{4})_([a-z0-9_]+)\.sql$/;

export interface Migration {
  version: string;
  name: string;
  sql: string;
}

export function readMigrations(dir: string = MIGRATIONS_DIR): Migration[] {
  return readdirSync(dir)
    .filter((f) => FILE_NAME.test(f))
    .sort()
    .map((f) => {
      const [, version, name] = FILE_NAME.exec(f)!;
      return { version, name, sql: readFileSync(`${dir}/${f}`, 'utf8') };
    });
}

/** Applies pending migrations; returns the versions it applied (empty when up to date). */
export async function migrate(store: Store, migrations: Migration[] = readMigrations()): Promise<string[]> {
  return store.transaction(async (q) => {
    // Transaction-scoped: released by COMMIT/ROLLBACK, so a crashed pod cannot leave it held.
    await q.query('SELECT pg_advisory_xact_lock($1::bigint)', [MIGRATION_LOCK_KEY]);
    await q.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version text PRIMARY KEY,
      name text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now()
    )`);
    const { rows } = await q.query<{ version: string }>('SELECT version FROM schema_migrations');
    const done = new Set(rows.map((r) => r.version));
    const applied: string[] = [];
    for (const m of migrations) {
      if (done.has(m.version)) continue;
      await q.exec(m.sql);
      await q.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [m.version, m.name]);
      applied.push(m.version);
    }
    return applied;
  });
}
