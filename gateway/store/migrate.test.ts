import { describe, expect, it } from 'vitest';
import { BACKENDS, countRows, useTestDatabase } from '../../test/support/databases.ts';
import { migrate, readMigrations } from './migrate.ts';

describe.each(BACKENDS)('migrations on %s', (backend) => {
  const db = useTestDatabase(backend, { migrate: false });

  it('finds the numbered SQL files in order', () => {
    const versions = readMigrations().map((m) => m.version);
    expect(versions[0]).toBe('0001');
    expect([...versions].sort()).toEqual(versions);
  });

  it('applies every migration once, records it, and is a no-op on re-run', async () => {
    const { store } = db();
    const all = readMigrations().map((m) => m.version);
    expect(await migrate(store)).toEqual(all);
    expect(await migrate(store)).toEqual([]);
    expect(await countRows(store, 'schema_migrations')).toBe(all.length);
    expect(await countRows(store, 'usage_events')).toBe(0);
    expect(await countRows(store, 'usage_hourly')).toBe(0);
  });

  it('lets several starters race: each migration is applied exactly once', async () => {
    const d = db();
    // Postgres: separate pools, as separate pods would be. PGlite: one instance, concurrent callers.
    const stores = backend === 'postgres' ? [d.openStore(), d.openStore(), d.openStore(), d.openStore()] : [d.store, d.store, d.store];
    await d.store.exec('DROP TABLE usage_events; DROP TABLE usage_hourly; DROP TABLE schema_migrations');
    const results = await Promise.all(stores.map((s) => migrate(s)));
    expect(results.flat()).toEqual(readMigrations().map((m) => m.version));
    expect(await countRows(d.store, 'schema_migrations')).toBe(readMigrations().length);
  });

  it('rolls back a failing migration completely', async () => {
    const { store } = db();
    const bad = [...readMigrations(), { version: '9999', name: 'broken', sql: 'CREATE TABLE half_done (x int); SELECT no_such_column FROM half_done;' }];
    await expect(migrate(store, bad)).rejects.toThrow(/no_such_column/);
    expect(await countRows(store, 'schema_migrations', 'version = $1', ['9999'])).toBe(0);
    expect(await countRows(store, 'pg_tables', "tablename = 'half_done'")).toBe(0);
  });
});
