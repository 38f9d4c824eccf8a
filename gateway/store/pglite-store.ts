// Store over an in-process PGlite (single connection; PGlite serialises queries and transactions itself).
import { mkdirSync } from 'node:fs';
import { PGlite, types } from '@electric-sql/pglite';
import type { Transaction } from '@electric-sql/pglite';
import type { Queryable, Store } from './store.ts';

/** `dataDir` undefined means in memory (tests only). */
export async function openPgliteStore(dataDir?: string): Promise<Store> {
  if (dataDir) mkdirSync(dataDir, { recursive: true });
  // PGlite turns int8 into number/BigInt; keep it a string as pg does, so callers see one shape.
  const db = await PGlite.create({ dataDir, parsers: { [types.INT8]: (v: string) => v } });

  const handle = (c: PGlite | Transaction): Queryable => ({
    async query<T>(sql: string, params?: unknown[]) {
      const r = await c.query<T>(sql, params);
      return { rows: r.rows };
    },
    async exec(sql: string) {
      await c.exec(sql);
    },
  });

  return {
    kind: 'pglite',
    ...handle(db),
    transaction: (fn) => db.transaction((tx) => fn(handle(tx))),
    async close() {
      if (!db.closed) await db.close();
    },
  };
}
