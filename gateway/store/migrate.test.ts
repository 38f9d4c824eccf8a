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
    expect(await countRows(store, 'usage_hourly_keys')).toBe(0);
  });

  it('lets several starters race: each migration is applied exactly once', async () => {
    const d = db();
    // Postgres: separate pools, as separate pods would be. PGlite: one instance, concurrent callers.
    const stores = backend === 'postgres' ? [d.openStore(), d.openStore(), d.openStore(), d.openStore()] : [d.store, d.store, d.store];
    await d.store.exec('DROP TABLE usage_events; DROP TABLE usage_hourly; DROP TABLE usage_hourly_keys; DROP TABLE schema_migrations');
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

  it('0005 backfills the per-key rollup from rows already in the ledger and leaves their new columns NULL', async () => {
    const { store } = db();
    await store.exec('DROP SCHEMA public CASCADE; CREATE SCHEMA public');
    await migrate(store, readMigrations().filter((m) => m.version < '0005'));
    const insert = `INSERT INTO usage_events (request_id, occurred_at, organization, project, api_key_id, client_model, model_id, provider,
      upstream_model, endpoint, stream, input, output, cache_read, cache_write, reasoning, artifacts, cache_explicit_read, estimated, cost_points, original_cost)
      VALUES ($1, $2, 'org', 'proj', $3, $4, 'model-id', 'p', 'u', '/api/v1/chat/completions', false, 10, 20, 1, 0, 0, 0, 0, false, $5, $5)`;
    await store.query(insert, ['r1', '2026-11-24T10:15:00Z', 'k1', 'm', '0.1']);
    await store.query(insert, ['r2', '2026-11-24T10:45:00Z', 'k1', 'm', '0.0000001']);
    await store.query(insert, ['r3', '2026-11-24T11:05:00Z', 'k1', '', '1']);
    await store.query(insert, ['r4', '2026-11-24T10:20:00Z', 'k2', 'm', '2']);
    expect(await migrate(store)).toEqual(['0005', ...readMigrations().filter((m) => m.version > '0005').map((m) => m.version)]);
    const { rows } = await store.query('SELECT api_key_id, hour, client_model, organization, project, request_count::int AS n, input::int, cost_points::text AS cost FROM usage_hourly_keys ORDER BY 1, 2, 3');
    expect(rows).toEqual([
      { api_key_id: 'k1', hour: new Date('2026-11-24T10:00:00Z'), client_model: 'm', organization: 'org', project: 'proj', n: 2, input: 20, cost: '0.1000001' },
      { api_key_id: 'k1', hour: new Date('2026-11-24T11:00:00Z'), client_model: 'model-id', organization: 'org', project: 'proj', n: 1, input: 10, cost: '1' },
      { api_key_id: 'k2', hour: new Date('2026-11-24T10:00:00Z'), client_model: 'm', organization: 'org', project: 'proj', n: 1, input: 10, cost: '2' },
    ]);
    expect(await countRows(store, 'usage_events', 'status IS NULL AND latency_ms IS NULL AND key_prefix IS NULL')).toBe(4);
  });
  it('0006 drops the per-key index on usage_events and every partition, keeping the others', async () => {
    const { store } = db();
    await store.exec('DROP SCHEMA public CASCADE; CREATE SCHEMA public');
    await migrate(store, readMigrations().filter((m) => m.version < '0006'));
    await store.exec("CREATE TABLE usage_events_p20261124 PARTITION OF usage_events FOR VALUES FROM ('2026-11-24') TO ('2026-11-25')");
    const keyIndexes = () => countRows(store, 'pg_indexes', "tablename LIKE 'usage_events%' AND indexdef LIKE '%(api_key_id, occurred_at)%'");
    expect(await keyIndexes()).toBe(3); // parent, default partition, the day
    expect(await migrate(store)).toContain('0006');
    expect(await keyIndexes()).toBe(0);
    expect(await countRows(store, 'pg_indexes', "tablename = 'usage_events_p20261124' AND indexdef LIKE '%(occurred_at, request_id)%'")).toBe(1);
  });
  it('0007 makes (occurred_at, request_id) the key of usage_events and every partition, in place of both indexes', async () => {
    const { store } = db();
    await store.exec('DROP SCHEMA public CASCADE; CREATE SCHEMA public');
    await migrate(store, readMigrations().filter((m) => m.version < '0007'));
    await store.exec("CREATE TABLE usage_events_p20261124 PARTITION OF usage_events FOR VALUES FROM ('2026-11-24') TO ('2026-11-25')");
    const insert = `INSERT INTO usage_events (request_id, occurred_at, organization, project, api_key_id, client_model, model_id, provider,
      upstream_model, endpoint, stream, input, output, cache_read, cache_write, reasoning, artifacts, cache_explicit_read, estimated, cost_points, original_cost)
      VALUES ($1, '2026-11-24T10:15:00Z', 'org', 'proj', 'k', 'm', 'model-id', 'p', 'u', '/api/v1/chat/completions', false, 1, 1, 0, 0, 0, 0, 0, false, 1, 1)
      ON CONFLICT (request_id, occurred_at) DO NOTHING`;
    await store.query(insert, ['r1']);
    expect(await migrate(store)).toContain('0007');
    const indexes = (where: string) => countRows(store, 'pg_indexes', `tablename = 'usage_events_p20261124' AND ${where}`);
    expect(await indexes("indexdef LIKE 'CREATE UNIQUE INDEX % (occurred_at, request_id)'")).toBe(1);
    expect(await indexes("indexdef LIKE '%(request_id%'")).toBe(0);
    expect(await indexes('true')).toBe(2); // the key and (project, occurred_at)
    // The key still keeps a replay out.
    await store.query(insert, ['r1']);
    await store.query(insert, ['r2']);
    expect(await countRows(store, 'usage_events')).toBe(2);
  });
});
