import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { END_WORKER, openPgliteStore } from './pglite-store.ts';

const STORE = fileURLToPath(new URL('./pglite-store.ts', import.meta.url));

// In a fresh process, so the store is the first to start libuv's thread pool (vitest's own process already has one).
const PROBE = `
import { readdirSync, readFileSync } from 'node:fs';
const { openPgliteStore } = await import(${JSON.stringify(STORE)});
const store = await openPgliteStore();
await store.query('SELECT 1');
const threads = readdirSync('/proc/self/task').map((tid) => {
  const stat = readFileSync('/proc/self/task/' + tid + '/stat', 'utf8');
  return { name: readFileSync('/proc/self/task/' + tid + '/comm', 'utf8').trim(), nice: Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]) };
});
await store.close();
console.log(JSON.stringify(threads));
`;

describe.runIf(existsSync('/proc/thread-self'))('PGlite store threads', () => {
  it('runs PGlite below the gateway priority, and only PGlite: libuv pool (journal writes) and V8 threads stay', () => {
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', PROBE], { encoding: 'utf8', env: { ...process.env, NODE_OPTIONS: '' } });
    const threads = JSON.parse(out.trim().split('\n').at(-1)!) as { name: string; nice: number }[];
    const main = threads.find((t) => t.name !== 'WorkerThread' && t === threads[0])!;
    const lowered = threads.filter((t) => t.nice !== main.nice);
    expect(lowered.map((t) => t.name)).toEqual(['WorkerThread']);
    expect(lowered[0].nice).toBe(Math.min(19, main.nice + 10));
    expect(threads.filter((t) => t.name === 'libuv-worker').length).toBeGreaterThan(0);
  });
});

describe('PGlite data directory', () => {
  // A first boot runs initdb in its own process (pglite-store.ts): page checksums cost CPU on every page written
  // and read, and Postgres 18 turns them on unless told not to.
  it('is created without page checksums', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pglite-initdb-'));
    const store = await openPgliteStore(join(dir, 'data'));
    try {
      const { rows } = await store.query<{ data_checksums: string }>('SHOW data_checksums');
      expect(rows).toEqual([{ data_checksums: 'off' }]);
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('PGlite store close', () => {
  it('does not wait for a wedged statement: the statement fails and close returns', async () => {
    // In memory (no data directory): a statement that holds the worker far longer than close waits for.
    const store = await openPgliteStore(undefined, { closeWaitMs: 300 });
    const wedged = store.query('SELECT pg_sleep(60)').then(
      () => 'finished',
      (err: Error) => err.message,
    );
    await new Promise((r) => setTimeout(r, 100));
    await store.close();
    expect(await wedged).toMatch(/exited/);
  }, 30_000);
});

describe('PGlite store after its worker dies', () => {
  it('starts another on the same directory: what was committed is there, and a transaction never straddles the two', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pglite-restart-'));
    const store = await openPgliteStore(join(dir, 'data'));
    try {
      await store.exec('CREATE TABLE t (a int); INSERT INTO t VALUES (1)');
      // A transaction whose worker dies between two statements fails whole, even once another worker is up.
      const tx = store.transaction(async (q) => {
        await q.exec('INSERT INTO t VALUES (2)');
        await (store as unknown as Record<symbol, () => Promise<number>>)[END_WORKER]();
        await new Promise((r) => setTimeout(r, 2500));
        await q.exec('INSERT INTO t VALUES (3)');
      });
      await expect(tx).rejects.toThrow();
      let rows: { n: string }[] | undefined;
      for (let i = 0; i < 50 && !rows; i++) {
        rows = await store.query<{ n: string }>('SELECT count(*) AS n, max(a) AS m FROM t').then(
          (r) => r.rows,
          () => undefined,
        );
        if (!rows) await new Promise((r) => setTimeout(r, 200));
      }
      expect(rows).toEqual([{ n: '1', m: 1 }]);
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 30_000);
});

describe.runIf(existsSync('/proc/thread-self'))('PGlite store closed while a new worker starts', () => {
  it('ends the worker being started: no second PGlite is left on the directory', async () => {
    const threads = () => readdirSync('/proc/self/task').filter((t) => readFileSync(`/proc/self/task/${t}/comm`, 'utf8').trim() === 'WorkerThread').length;
    const dir = mkdtempSync(join(tmpdir(), 'pglite-restart-close-'));
    const before = threads();
    const store = await openPgliteStore(join(dir, 'data'));
    try {
      await (store as unknown as Record<symbol, () => Promise<number>>)[END_WORKER]();
      // The replacement starts 1 s after the death and takes a while to open the directory: close during that.
      await new Promise((r) => setTimeout(r, 1100));
    } finally {
      await store.close();
    }
    expect(threads()).toBe(before);
    rmSync(dir, { recursive: true, force: true });
  }, 30_000);
});
