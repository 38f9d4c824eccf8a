import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BACKENDS, tempDir, useTestDatabase } from '../../test/support/databases.ts';
import { readMigrations } from './migrate.ts';
import { openStore, resolveDataDir } from './open.ts';

describe.each(BACKENDS)('store on %s', (backend) => {
  const db = useTestDatabase(backend, { migrate: false });

  it('says which backend it is', () => {
    expect(db().store.kind).toBe(backend);
  });

  it('returns NUMERIC and int8 as exact strings, timestamptz as Date, jsonb parsed', async () => {
    const { rows } = await db().store.query<Record<string, unknown>>(
      `SELECT 0.0000001::numeric AS tiny, 123456789012345678901234567890.000000001::numeric AS huge,
              9007199254740993::bigint AS big, sum(x) AS total, '2025-01-01T00:00:00Z'::timestamptz AS at,
              '{"a":[1,"x"]}'::jsonb AS doc
       FROM (VALUES (1::bigint), (2::bigint)) v(x)`,
    );
    expect(rows[0]).toEqual({
      tiny: '0.0000001',
      huge: '123456789012345678901234567890.000000001',
      big: '9007199254740993',
      total: '3',
      at: new Date('2025-01-01T00:00:00Z'),
      doc: { a: [1, 'x'] },
    });
  });

  it('commits a transaction that resolves and rolls back one that throws', async () => {
    const { store } = db();
    await store.exec('CREATE TABLE tx_probe (v text); CREATE TABLE tx_probe2 (v text)');
    await store.transaction(async (q) => {
      await q.query('INSERT INTO tx_probe VALUES ($1)', ['kept']);
    });
    await expect(
      store.transaction(async (q) => {
        await q.query('INSERT INTO tx_probe VALUES ($1)', ['lost']);
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    const { rows } = await store.query<{ v: string }>('SELECT v FROM tx_probe');
    expect(rows).toEqual([{ v: 'kept' }]);
  });

  it('keeps the SQLSTATE of a failed statement (the ledger tells bad data from an unreachable database by it)', async () => {
    const err = await db().store.query('SELECT 1/0').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as { code?: string }).code).toBe('22012');
  });

  it('runs a statement from outside a transaction only after that transaction ends', async () => {
    const { store } = db();
    await store.exec('CREATE TABLE tx_order (v text)');
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const tx = store.transaction(async (q) => {
      await q.query('INSERT INTO tx_order VALUES ($1)', ['in tx']);
      await held;
      await q.query('DELETE FROM tx_order');
    });
    const outside = store.query<{ n: string }>('SELECT count(*) AS n FROM tx_order');
    await new Promise((r) => setTimeout(r, 20));
    release();
    await tx;
    // Postgres answers from its own snapshot (0 rows committed); PGlite's one connection waits for the commit.
    expect((await outside).rows[0].n).toBe('0');
  });

  it('is what openStore() opens, migrated: PGlite under <dataDir>/pglite without a URL, a pg pool with one', async () => {
    const dataDir = await tempDir();
    const url = db().databaseUrl;
    // PGlite: its own directory (one instance per data directory); Postgres: this test database.
    const store = await openStore(url ? { databaseUrl: url, dataDir } : { dataDir });
    try {
      expect(store.kind).toBe(backend);
      if (!url) expect(existsSync(join(dataDir, 'pglite', 'PG_VERSION'))).toBe(true);
      const { rows } = await store.query<{ version: string }>('SELECT version FROM schema_migrations ORDER BY version');
      expect(rows.map((r) => r.version)).toEqual(readMigrations().map((m) => m.version));
    } finally {
      await store.close();
      await rm(dataDir, { recursive: true, force: true });
    }
    // A PGlite first boot runs initdb: seconds on a quiet machine, far more on a loaded one.
  }, 120_000);

  it('takes a transaction-scoped advisory lock', async () => {
    const got = await db().store.transaction(async (q) => {
      await q.query('SELECT pg_advisory_xact_lock($1::bigint)', ['42']);
      const { rows } = await q.query<{ n: string }>(
        "SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND objid = 42 AND granted",
      );
      return rows[0].n;
    });
    expect(got).toBe('1');
  });
});

describe('openStore', () => {
  it('resolves the data directory: option, then TOLLGATE_DATA_DIR, then ./.tollgate', () => {
    expect(resolveDataDir('/srv/a', { TOLLGATE_DATA_DIR: '/srv/b' })).toBe('/srv/a');
    expect(resolveDataDir(undefined, { TOLLGATE_DATA_DIR: '/srv/b' })).toBe('/srv/b');
    expect(resolveDataDir(undefined, {})).toBe(join(process.cwd(), '.tollgate'));
  });
});
