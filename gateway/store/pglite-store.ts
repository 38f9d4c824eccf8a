// Store over an embedded PGlite (single connection), run in a child process: PGlite executes each statement
// synchronously in WebAssembly, and a ledger batch takes milliseconds to tens of milliseconds, which in the serving
// process stalls every request in flight (the latency tail at a steady rate). A process rather than a thread so that
// it runs with its own V8 flags (see pglite-process.ts) and its memory is returned when it exits. Statements run one
// at a time, in call order; a transaction holds the connection from BEGIN to COMMIT.
import { fork } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { PgliteReply, PgliteRequest } from './pglite-protocol.ts';
import { errorFrom } from './pglite-protocol.ts';
import type { Queryable, Store } from './store.ts';

const PROCESS_PATH = fileURLToPath(new URL('./pglite-process.ts', import.meta.url));
// Liftoff only: see pglite-process.ts. Small semi-spaces and V8's size-over-speed heuristics: the JS side holds little
// (PGlite's memory is WebAssembly's); together with a smaller shared_buffers they took ~20 MB off the idle process at
// no measured cost in CPU per batch (bench/pglite-loop-delay.ts, docs/adr/0015 addendum).
const EXEC_ARGV = ['--liftoff-only', '--max-semi-space-size=1', '--optimize-for-size'];

type Pending = { resolve: (r: PgliteReply & { ok: true }) => void; reject: (e: Error) => void };
type Op = { op: 'query'; sql: string; params?: unknown[] } | { op: 'exec'; sql: string; blob?: string } | { op: 'close' };

function spawnPglite(dataDir: string | undefined, initOnly: boolean): ChildProcess {
  return fork(PROCESS_PATH, [dataDir ?? '', ...(initOnly ? ['--init-only'] : [])], {
    execArgv: EXEC_ARGV,
    // Structured clone: Date and parsed jsonb arrive as they left; a batch is one message.
    serialization: 'advanced',
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    env: { ...process.env, NODE_OPTIONS: '' },
  });
}

// Generous: a first boot (initdb) takes seconds on a quiet machine and a minute on a very busy one. Past it the
// child is wedged (e.g. its directory was removed under it) and start fails with that, rather than waiting for ever.
const START_TIMEOUT_MS = 300_000;

/** Waits for the child's start reply; rejects with its error, when it exits first, or after START_TIMEOUT_MS. */
function started(child: ChildProcess): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      cleanup();
      child.kill('SIGKILL');
      reject(new Error(`PGlite did not start within ${START_TIMEOUT_MS / 1000} s`));
    }, START_TIMEOUT_MS);
    const onMessage = (r: PgliteReply) => {
      if (r.id !== 0) return;
      cleanup();
      if (r.ok) resolve();
      else reject(errorFrom(r.error));
    };
    const onExit = (code: number | null, signal: string | null) => {
      cleanup();
      reject(new Error(`PGlite process exited during start (${signal ?? `code ${code}`})`));
    };
    const onError = (err: Error) => {
      cleanup();
      reject(err);
    };
    const cleanup = () => {
      clearTimeout(timer);
      child.off('message', onMessage);
      child.off('exit', onExit);
      child.off('error', onError);
    };
    child.on('message', onMessage);
    child.on('exit', onExit);
    child.on('error', onError);
  });
}

/** The PGlite process a previous gateway left on this directory, if it still runs (see pglite-process.ts). */
function previousOwner(dataDir: string): number | undefined {
  try {
    const pid = Number(readFileSync(`${dataDir}.pid`, 'utf8'));
    // The pid may have been reused by something else since: only a PGlite process counts.
    if (pid && readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('pglite-process')) return pid;
  } catch {
    // no file, or no such process
  }
  return undefined;
}

/**
 * A gateway killed with SIGKILL leaves its PGlite process to notice the closed channel and exit, after the statement
 * it is running. Two instances on one directory would corrupt it, so wait for that exit (bounded), then end it.
 */
async function waitForPreviousOwner(dataDir: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (let pid = previousOwner(dataDir); pid !== undefined; pid = previousOwner(dataDir)) {
    if (Date.now() > deadline) {
      process.kill(pid, 'SIGKILL');
      await new Promise((r) => setTimeout(r, 100));
      continue;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** `dataDir` undefined means in memory (tests only). */
export async function openPgliteStore(dataDir?: string): Promise<Store> {
  if (dataDir) {
    mkdirSync(dataDir, { recursive: true });
    await waitForPreviousOwner(dataDir);
    // First boot: initdb in a process of its own that then exits, taking its ~240 MB (initdb's second PGlite
    // instance and the copy it leaves) with it; the serving process then opens the directory as on a restart.
    if (!existsSync(join(dataDir, 'PG_VERSION'))) {
      const init = spawnPglite(dataDir, true);
      const exited = new Promise((r) => init.once('exit', r));
      try {
        await started(init);
      } finally {
        if (init.exitCode === null && init.signalCode === null) await exited;
      }
    }
  }
  const child = spawnPglite(dataDir, false);
  const pending = new Map<number, Pending>();
  let nextId = 1;
  let gone: Error | undefined;
  // Referenced only while a statement is out: an idle store never keeps the process alive, a busy one does.
  const hold = (on: boolean) => {
    if (on) {
      child.ref();
      child.channel?.ref();
    } else {
      child.unref();
      child.channel?.unref();
    }
  };
  const settle = (id: number, fn: (p: Pending) => void) => {
    const p = pending.get(id);
    if (!p) return;
    pending.delete(id);
    if (pending.size === 0) hold(false);
    fn(p);
  };
  const fail = (err: Error) => {
    gone = err;
    for (const id of [...pending.keys()]) settle(id, (p) => p.reject(err));
  };
  try {
    await started(child);
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  }
  child.on('message', (r: PgliteReply) => settle(r.id, (p) => (r.ok ? p.resolve(r) : p.reject(errorFrom(r.error)))));
  child.on('error', fail);
  child.on('exit', (code, signal) => fail(new Error(`PGlite process exited (${signal ?? `code ${code}`})`)));
  hold(false);

  const call = (m: Op): Promise<PgliteReply & { ok: true }> => {
    if (gone) return Promise.reject(gone);
    const id = nextId++;
    return new Promise((resolve, reject) => {
      pending.set(id, { resolve, reject });
      hold(true);
      child.send({ id, ...m } satisfies PgliteRequest, (err) => {
        if (err) settle(id, (p) => p.reject(err));
      });
    });
  };
  const direct: Queryable = {
    async query<T>(sql: string, params?: unknown[]) {
      return { rows: (await call({ op: 'query', sql, params })).rows as T[] };
    },
    async exec(sql: string) {
      await call({ op: 'exec', sql });
    },
    async copyQuery<T>(script: string, data: string) {
      return { rows: (await call({ op: 'exec', sql: script, blob: data })).rows as T[] };
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
    copyQuery: <T>(script: string, data: string) => exclusive(() => direct.copyQuery!<T>(script, data)),
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
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        // It exits once PGlite is closed and the channel drops; a wedged one is not waited for.
        const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
        await exited;
        clearTimeout(timer);
      }
    },
  };
}
