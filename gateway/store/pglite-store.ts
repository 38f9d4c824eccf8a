// Store over an embedded PGlite (single connection), run in a worker thread: PGlite executes each statement
// synchronously in WebAssembly, and a ledger batch takes milliseconds to tens of milliseconds, which on the main thread
// stalls every request in flight (the latency tail at a steady rate). Statements run one at a time, in call order; a
// transaction holds the connection from BEGIN to COMMIT.
import { mkdirSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import type { PgliteReply, PgliteRequest } from './pglite-protocol.ts';
import { errorFrom } from './pglite-protocol.ts';
import type { Queryable, Store } from './store.ts';

type Pending = { resolve: (r: PgliteReply & { ok: true }) => void; reject: (e: Error) => void };
type Op = { op: 'query'; sql: string; params?: unknown[] } | { op: 'exec'; sql: string } | { op: 'close' };

/** `dataDir` undefined means in memory (tests only). */
export async function openPgliteStore(dataDir?: string): Promise<Store> {
  if (dataDir) mkdirSync(dataDir, { recursive: true });
  const worker = new Worker(new URL('./pglite-worker.ts', import.meta.url), { workerData: { dataDir } });
  const pending = new Map<number, Pending>();
  let nextId = 1;
  let gone: Error | undefined;
  // Referenced only while a statement is out: an idle store never keeps the process alive, a busy one does.
  worker.unref();
  const settle = (id: number, fn: (p: Pending) => void) => {
    const p = pending.get(id);
    if (!p) return;
    pending.delete(id);
    if (pending.size === 0) worker.unref();
    fn(p);
  };
  const ready = new Promise<void>((resolve, reject) => pending.set(0, { resolve: () => resolve(), reject }));
  worker.ref();
  worker.on('message', (r: PgliteReply) => settle(r.id, (p) => (r.ok ? p.resolve(r) : p.reject(errorFrom(r.error)))));
  const fail = (err: Error) => {
    gone = err;
    for (const id of [...pending.keys()]) settle(id, (p) => p.reject(err));
  };
  worker.on('error', fail);
  worker.on('exit', (code) => fail(new Error(`PGlite worker exited (code ${code})`)));
  await ready;

  const call = (m: Op): Promise<PgliteReply & { ok: true }> => {
    if (gone) return Promise.reject(gone);
    const id = nextId++;
    return new Promise((resolve, reject) => {
      pending.set(id, { resolve, reject });
      worker.ref();
      worker.postMessage({ id, ...m } satisfies PgliteRequest);
    });
  };
  const direct: Queryable = {
    async query<T>(sql: string, params?: unknown[]) {
      return { rows: (await call({ op: 'query', sql, params })).rows as T[] };
    },
    async exec(sql: string) {
      await call({ op: 'exec', sql });
    },
  };

  // One connection: a transaction's statements must not interleave with anyone else's.
  let tail: Promise<unknown> = Promise.resolve();
  const exclusive = <T>(fn: () => Promise<T>): Promise<T> => {
    const run = tail.then(fn, fn);
    tail = run.catch(() => {});
    return run;
  };
  let closed = false;

  return {
    kind: 'pglite',
    query: (sql, params) => exclusive(() => direct.query(sql, params)),
    exec: (sql) => exclusive(() => direct.exec(sql)),
    transaction: (fn) =>
      exclusive(async () => {
        await direct.exec('BEGIN');
        let out;
        try {
          out = await fn(direct);
        } catch (err) {
          await direct.exec('ROLLBACK').catch(() => {});
          throw err;
        }
        await direct.exec('COMMIT');
        return out;
      }),
    async close() {
      if (closed) return;
      closed = true;
      await exclusive(() => call({ op: 'close' })).catch(() => {});
      await worker.terminate();
    },
  };
}
