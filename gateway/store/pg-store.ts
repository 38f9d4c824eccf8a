// Store over a pg Pool. pg already returns NUMERIC and int8 as strings, which is what we want.
import pg from 'pg';
import { CopyScript } from './pg-copy.ts';
import type { Queryable, Store } from './store.ts';

export function openPgStore(connectionString: string, poolOptions: pg.PoolConfig = {}): Store {
  const pool = new pg.Pool({
    ...durable(connectionString),
    // The ledger's three writers plus room for the usage report and readiness checks.
    max: 6,
    connectionTimeoutMillis: 5_000,
    // A silently dropped network must surface as an error (the journal then backs off and retries)
    // rather than a query that waits forever; the pool discards a connection whose query timed out.
    keepAlive: true,
    query_timeout: 60_000,
    ...poolOptions,
  });
  // An idle client losing its server (restart, network cut) must not crash the process;
  // the next query gets a fresh connection or a clear error.
  pool.on('error', () => {});

  const handle = (c: pg.Pool | pg.PoolClient): Queryable => ({
    async query<T>(sql: string, params?: unknown[]) {
      const r = await c.query(sql, params);
      return { rows: r.rows as T[] };
    },
    async exec(sql: string) {
      await c.query(sql); // no parameters: simple protocol, several statements allowed
    },
    async copyIn(script: string, data: string | Uint8Array) {
      // A script takes a client of its own; a transaction's is already one.
      const client: pg.PoolClient = c instanceof pg.Pool ? await c.connect() : (c as pg.PoolClient);
      let broken: Error | undefined;
      // A lost connection also comes as the client's 'error' event, unhandled unless listened to (pool.query does too).
      const lost = (err: Error) => void (broken ??= err);
      if (client !== c) client.on('error', lost);
      try {
        await new Promise<void>((resolve, reject) => {
          const copy: pg.Submittable = new CopyScript(script, typeof data === 'string' ? Buffer.from(data) : data, (err) => (err ? reject(err) : resolve()));
          client.query(copy);
        });
      } catch (err) {
        // The server refused the script (an error with a severity; it answers ReadyForQuery next): the connection is
        // fine. Anything else (a lost connection, a timeout) leaves it unusable, and so does a FATAL or PANIC error:
        // the server closes the connection after it, and a client released before that close is noticed would be
        // handed to the next query, which fails with it.
        const severity = (err as { severity?: string }).severity;
        if (severity === undefined || severity === 'FATAL' || severity === 'PANIC') broken = err as Error;
        throw err;
      } finally {
        if (client !== c) {
          client.off('error', lost);
          client.release(broken);
        }
      }
    },
  });

  return {
    kind: 'postgres',
    ...handle(pool),
    async transaction<T>(fn: (q: Queryable) => Promise<T>): Promise<T> {
      const client = await pool.connect();
      let broken: Error | undefined;
      try {
        await client.query('BEGIN');
        const result = await fn(handle(client));
        await client.query('COMMIT');
        return result;
      } catch (err) {
        try {
          await client.query('ROLLBACK');
        } catch (rollbackErr) {
          broken = rollbackErr as Error; // the connection is unusable: drop it from the pool
        }
        throw err;
      } finally {
        client.release(broken);
      }
    },
    async close() {
      await pool.end();
    },
  };
}

// The journal deletes a batch's rows once its commit returns, so every commit must be durable whatever the server's,
// database's or role's default (synchronous_commit=off is a common tuning, and would lose those rows in a crash). Set
// in each connection's startup options, after any the URL gives (the later setting wins); pg would let the URL's own
// `options` replace ours, so those move into the same string.
const DURABLE = '-c synchronous_commit=on';

function durable(connectionString: string): { connectionString: string; options: string } {
  try {
    const url = new URL(connectionString);
    const own = url.searchParams.get('options');
    if (own !== null) {
      url.searchParams.delete('options');
      return { connectionString: url.toString(), options: `${own} ${DURABLE}` };
    }
  } catch {
    // Not a URL (a socket path with a database name): pg reads it as it is.
  }
  return { connectionString, options: DURABLE };
}
