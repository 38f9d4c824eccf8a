// Fresh, isolated databases for tests: every backend this machine has (PGlite always, Postgres when DATABASE_URL is
// set: by the environment, or by the global setup from a testcontainers container), so one suite proves the same SQL on both.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import { openPgStore } from '../../gateway/store/pg-store.ts';
import { openPgliteStore } from '../../gateway/store/pglite-store.ts';
import { migrate } from '../../gateway/store/migrate.ts';
import type { Queryable, Store } from '../../gateway/store/store.ts';
import { startTcpProxy } from './tcp-proxy.ts';

export type Backend = 'pglite' | 'postgres';

/** The backends to run database tests against, for `describe.each`. */
export const BACKENDS: Backend[] = process.env.DATABASE_URL ? ['pglite', 'postgres'] : ['pglite'];

export interface TestDatabase {
  readonly backend: Backend;
  /** The store on this test database (PGlite: the current instance, see interruptible()). */
  readonly store: Store;
  /** Postgres only: URL of this database. */
  readonly databaseUrl?: string;
  /** A temp directory for this database's local state (journal, PGlite files); removed by drop(). */
  readonly dir: string;
  /** Opens another independent store on the same database (Postgres only: PGlite is one connection). */
  openStore(): Store;
  /**
   * A store on this database whose connection the test can cut and restore.
   * Postgres: a pool behind a TCP proxy. PGlite: this database's own store, closed and reopened.
   */
  interruptible(opts?: { startDown?: boolean }): Promise<{ store: Store; down(): Promise<void>; up(): Promise<void> }>;
  drop(): Promise<void>;
}

export async function tempDir(prefix = 'tollgate-test-'): Promise<string> {
  return mkdtemp(join(tmpdir(), prefix));
}

export async function createTestDatabase(backend: Backend, opts: { migrate?: boolean } = {}): Promise<TestDatabase> {
  const db = backend === 'postgres' ? await createPostgresDatabase() : await createPgliteDatabase();
  if (opts.migrate !== false) await migrate(db.store);
  return db;
}

/** One fresh database per describe block: created before its tests, dropped after. */
export function useTestDatabase(backend: Backend, opts: { migrate?: boolean } = {}): () => TestDatabase {
  let db: TestDatabase | undefined;
  beforeAll(async () => {
    db = await createTestDatabase(backend, opts);
  });
  afterAll(async () => {
    await db?.drop();
  });
  return () => {
    if (!db) throw new Error('test database used outside a test');
    return db;
  };
}

/** Row count of a table, as a number. */
export async function countRows(q: Queryable, table: string, where = 'true', params: unknown[] = []): Promise<number> {
  const { rows } = await q.query<{ n: string }>(`SELECT count(*) AS n FROM ${table} WHERE ${where}`, params);
  return Number(rows[0].n);
}

async function createPostgresDatabase(): Promise<TestDatabase> {
  const serverUrl = process.env.DATABASE_URL;
  if (!serverUrl) throw new Error('DATABASE_URL is not set');
  const name = `tollgate_t_${randomBytes(6).toString('hex')}`;
  await admin(serverUrl, `CREATE DATABASE ${name}`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  const databaseUrl = url.toString();
  const dir = await tempDir();
  const store = openPgStore(databaseUrl);
  const extra: Store[] = [];
  const cleanups: (() => Promise<void>)[] = [];
  return {
    backend: 'postgres',
    store,
    databaseUrl,
    dir,
    openStore() {
      const s = openPgStore(databaseUrl);
      extra.push(s);
      return s;
    },
    async interruptible(opts = {}) {
      const proxy = await startTcpProxy({ host: url.hostname, port: Number(url.port || 5432) }, opts);
      const proxied = new URL(databaseUrl);
      proxied.hostname = '127.0.0.1';
      proxied.port = String(proxy.port);
      const s = openPgStore(proxied.toString(), { connectionTimeoutMillis: 2_000 });
      cleanups.push(async () => {
        await proxy.close();
        await s.close();
      });
      return { store: s, down: proxy.down, up: proxy.up };
    },
    async drop() {
      for (const c of cleanups) await c();
      for (const s of extra) await s.close();
      await store.close();
      await admin(serverUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await rm(dir, { recursive: true, force: true });
    },
  };
}

async function createPgliteDatabase(): Promise<TestDatabase> {
  const dir = await tempDir();
  const dataDir = join(dir, 'pglite');
  let current = await openPgliteStore(dataDir);
  // PGlite allows one instance per data directory, so an outage closes this very instance and
  // the recovery opens a new one on the same files; callers keep one stable Store object.
  const store: Store = {
    kind: 'pglite',
    query: (sql, params) => current.query(sql, params),
    exec: (sql) => current.exec(sql),
    // The ledger writer loads batches through it: without it the tests would miss PGlite's own path.
    copyQuery: (script, data) => current.copyQuery!(script, data),
    transaction: (fn) => current.transaction(fn),
    close: () => current.close(),
  };
  return {
    backend: 'pglite',
    store,
    dir,
    openStore() {
      throw new Error('PGlite is a single connection: use the one store');
    },
    async interruptible(opts = {}) {
      const down = async () => {
        await current.close();
      };
      const up = async () => {
        await current.close();
        current = await openPgliteStore(dataDir);
      };
      if (opts.startDown) await down();
      return { store, down, up };
    },
    async drop() {
      await current.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

async function admin(serverUrl: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}
