// Store over an embedded PGlite (single connection), run in a worker thread: PGlite executes each statement
// synchronously in WebAssembly, and a ledger batch takes milliseconds to tens of milliseconds, which on the serving
// thread stalls every request in flight (the latency tail at a steady rate). A thread, not a child process: a second
// Node runtime cost ~45 MB of resident memory for nothing else (docs/adr/0015, addendum). Statements run one at a
// time, in call order; a transaction holds the connection from BEGIN to COMMIT.
import { fork } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import type { EventEmitter } from 'node:events';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { access } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { Worker } from 'node:worker_threads';
import type { PgliteReply, PgliteRequest } from './pglite-protocol.ts';
import { errorFrom } from './pglite-protocol.ts';
import type { Queryable, Store } from './store.ts';

const WORKER_URL = new URL('./pglite-worker.ts', import.meta.url);

type Pending = { resolve: (r: PgliteReply & { ok: true }) => void; reject: (e: Error) => void };
type Op = { op: 'query'; sql: string; params?: unknown[] } | { op: 'exec'; sql: string; blob?: string | Uint8Array } | { op: 'close' };

/**
 * WebAssembly in this process stays on V8's baseline tier (Liftoff) from here on. The optimising tier recompiles
 * Postgres' hot functions, some of them huge, with 300-500 MB of transient memory, and a ledger's batches do not run
 * long enough to pay that back (docs/adr/0015). V8's flags are per process; these two are read when a function would
 * tier up, so setting them now takes effect (`--liftoff-only` would not: its implications apply only at start). The
 * only other WebAssembly here is undici's HTTP parser: measured ~1 µs of CPU per upstream request more.
 */
function baselineWasmOnly(): void {
  setFlagsFromString('--no-wasm-dynamic-tiering');
  setFlagsFromString('--no-wasm-tier-up');
}

function startWorker(dataDir: string | undefined): Worker {
  return new Worker(WORKER_URL, {
    argv: [dataDir ?? ''],
    // Not the gateway's options (profilers, --input-type...): the worker needs none.
    execArgv: [],
    // Its JS holds little (PGlite's memory is WebAssembly's): a small young generation.
    resourceLimits: { maxYoungGenerationSizeMb: 2 },
  });
}

/**
 * First boot's initdb, in a child process that then exits: PGlite runs initdb in a second instance and copies its
 * result, and in a thread ~60 MB of that stayed resident in the thread's malloc arena after it ended.
 */
function startInitProcess(dataDir: string): ChildProcess {
  return fork(fileURLToPath(WORKER_URL), [dataDir, '--init-only'], {
    // V8's flags are per process: Liftoff only there too.
    execArgv: ['--liftoff-only', '--max-semi-space-size=1'],
    serialization: 'advanced',
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    env: { ...process.env, NODE_OPTIONS: '' },
  });
}

// Generous: a first boot (initdb) takes seconds on a quiet machine and a minute on a very busy one. Past it the
// worker is wedged (e.g. its directory was removed under it) and start fails with that, rather than waiting for ever.
const START_TIMEOUT_MS = 300_000;
// How long close() waits for the statement in progress (a batch takes well under a second; a wedged one never ends).
const CLOSE_WAIT_MS = 10_000;
// A dead worker is started again after this, doubling while starts fail, up to the second.
const RESTART_FIRST_MS = 1_000;
const RESTART_MAX_MS = 30_000;
const ok = () => true;

/** A serving worker on `dataDir`, once PGlite is open in it (`onSpawn` sees it before that); ended if it fails to. */
async function startServing(dataDir: string | undefined, onSpawn?: (w: Worker) => void): Promise<Worker> {
  const w = startWorker(dataDir);
  onSpawn?.(w);
  try {
    await started(w, () => void w.terminate());
  } catch (err) {
    await w.terminate();
    throw err;
  }
  return w;
}

/**
 * Waits for the start reply of a worker or the init process; rejects with its error, when it exits first, or after
 * START_TIMEOUT_MS (then `stop`s it).
 */
function started(w: EventEmitter, stop: () => void): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      cleanup();
      stop();
      reject(new Error(`PGlite did not start within ${START_TIMEOUT_MS / 1000} s`));
    }, START_TIMEOUT_MS);
    const onMessage = (r: PgliteReply) => {
      if (r.id !== 0) return;
      cleanup();
      if (r.ok) resolve();
      else reject(errorFrom(r.error));
    };
    const onExit = (code: number | null, signal?: string | null) => {
      cleanup();
      reject(new Error(`PGlite exited during start (${signal ?? `code ${code}`})`));
    };
    const onError = (err: Error) => {
      cleanup();
      reject(err);
    };
    const cleanup = () => {
      clearTimeout(timer);
      w.off('message', onMessage);
      w.off('exit', onExit);
      w.off('error', onError);
    };
    w.on('message', onMessage);
    w.on('exit', onExit);
    w.on('error', onError);
  });
}

/** A PGlite process still running on this directory: a first boot's init process, or an older version's store. */
function previousOwner(dataDir: string): number | undefined {
  try {
    const pid = Number(readFileSync(`${dataDir}.pid`, 'utf8'));
    // The pid may have been reused by something else since: only a PGlite process counts.
    if (pid && /pglite-(worker|process)/.test(readFileSync(`/proc/${pid}/cmdline`, 'utf8'))) return pid;
  } catch {
    // no file, or no such process
  }
  return undefined;
}

/**
 * A gateway killed with SIGKILL during a first boot (or an older version's, at any time) leaves its PGlite process to
 * notice the closed channel and exit, after the statement it is running. Two instances on one directory would
 * corrupt it, so wait for that exit (bounded), then end it. (The worker thread dies with its gateway.)
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

/** Ends the store's worker thread as a crash would (tests: the store starts another). */
export const END_WORKER = Symbol('end the PGlite worker');

/** `dataDir` undefined means in memory (tests only). */
export async function openPgliteStore(dataDir?: string, opts: { closeWaitMs?: number } = {}): Promise<Store> {
  baselineWasmOnly();
  // libuv's thread pool (the journal's file writes) starts with the first asynchronous fs call, and its threads
  // inherit the niceness of the thread that made it: make it from here, before the worker lowers its own.
  await access(fileURLToPath(WORKER_URL));
  if (dataDir) {
    mkdirSync(dataDir, { recursive: true });
    await waitForPreviousOwner(dataDir);
    // First boot: initdb in a process of its own that then exits, taking its ~240 MB (initdb's second PGlite
    // instance and the copy it leaves) with it; the serving worker then opens the directory as on a restart.
    if (!existsSync(join(dataDir, 'PG_VERSION'))) {
      const init = startInitProcess(dataDir);
      const exited = new Promise((r) => init.once('exit', r));
      try {
        await started(init, () => init.kill('SIGKILL'));
      } finally {
        if (init.exitCode === null && init.signalCode === null) await exited;
      }
    }
  }
  let worker = await startServing(dataDir);
  // Which worker a statement went to: a transaction's statements must all reach the one its BEGIN did.
  let generation = 0;
  const pending = new Map<number, Pending>();
  let nextId = 1;
  let gone: Error | undefined;
  let closed = false;
  let restartTimer: NodeJS.Timeout | undefined;
  let restartDelayMs = RESTART_FIRST_MS;
  // A replacement worker still opening the directory: close() ends it rather than leave it running on the files.
  let starting: Worker | undefined;
  // Referenced only while a statement is out: an idle store never keeps the process alive, a busy one does.
  const hold = (on: boolean) => {
    if (on) worker.ref();
    else worker.unref();
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
  /**
   * A worker thread that died is started again on the same directory, after a pause that grows while starts fail:
   * the store comes back by itself, as a Postgres server does after a restart. Until then every statement fails at
   * once, and the ledger keeps its rows in the journal and retries. Not on a directory that lost its database (no
   * PG_VERSION): a new empty one would have no tables, so that waits for the gateway's own restart (first boot).
   */
  const restartLater = () => {
    if (closed || dataDir === undefined || restartTimer !== undefined) return;
    restartTimer = setTimeout(() => void restart(), restartDelayMs);
    restartTimer.unref();
    restartDelayMs = Math.min(RESTART_MAX_MS, restartDelayMs * 2);
  };
  const restart = async () => {
    restartTimer = undefined;
    if (closed) return;
    if (!existsSync(join(dataDir!, 'PG_VERSION'))) return restartLater();
    let w: Worker;
    try {
      w = await startServing(dataDir, (s) => (starting = s));
    } catch {
      restartLater();
      return;
    } finally {
      starting = undefined;
    }
    if (closed) {
      await w.terminate();
      return;
    }
    worker = w;
    generation++;
    wire(w);
    gone = undefined;
    restartDelayMs = RESTART_FIRST_MS;
  };
  const wire = (w: Worker) => {
    w.on('message', (r: PgliteReply) => settle(r.id, (p) => (r.ok ? p.resolve(r) : p.reject(errorFrom(r.error)))));
    const died = (err: Error) => {
      if (w !== worker) return;
      fail(err);
      restartLater();
    };
    w.on('error', died);
    w.on('exit', (code) => died(new Error(`PGlite worker exited (code ${code})`)));
    hold(false);
  };
  wire(worker);

  const call = (m: Op, gen?: number): Promise<PgliteReply & { ok: true }> => {
    if (gone) return Promise.reject(gone);
    if (gen !== undefined && gen !== generation) return Promise.reject(new Error('PGlite worker restarted during the transaction'));
    const id = nextId++;
    return new Promise((resolve, reject) => {
      pending.set(id, { resolve, reject });
      hold(true);
      try {
        worker.postMessage({ id, ...m } satisfies PgliteRequest);
      } catch (err) {
        // not cloneable
        settle(id, (p) => p.reject(err as Error));
      }
    });
  };
  /** Statements to the current worker, or (`gen` given) only to the worker of that generation. */
  const on = (gen?: number): Queryable => ({
    async query<T>(sql: string, params?: unknown[]) {
      return { rows: (await call({ op: 'query', sql, params }, gen)).rows as T[] };
    },
    async exec(sql: string) {
      await call({ op: 'exec', sql }, gen);
    },
    async copyQuery<T>(script: string, data: string | Uint8Array) {
      // A view of a larger buffer would be cloned whole on its way to the worker: send exactly its bytes.
      const blob = typeof data === 'string' || data.byteLength === data.buffer.byteLength ? data : new Uint8Array(data);
      return { rows: (await call({ op: 'exec', sql: script, blob }, gen)).rows as T[] };
    },
  });
  const direct = on();

  // One connection: a transaction's statements must not interleave with anyone else's.
  let tail: Promise<unknown> = Promise.resolve();
  const exclusive = <T>(fn: () => Promise<T>): Promise<T> => {
    const run = tail.then(fn, fn);
    tail = run.catch(() => {});
    return run;
  };
  const store: Store & { [END_WORKER]: () => Promise<number> } = {
    [END_WORKER]: () => worker.terminate(),
    kind: 'pglite',
    query: (sql, params) => exclusive(() => direct.query(sql, params)),
    exec: (sql) => exclusive(() => direct.exec(sql)),
    copyQuery: <T>(script: string, data: string | Uint8Array) => exclusive(() => direct.copyQuery!<T>(script, data)),
    transaction: (fn) =>
      exclusive(async () => {
        // Every statement of it to the worker that began it: one started since would run them outside it.
        const tx = on(generation);
        await tx.exec('BEGIN');
        let out;
        try {
          out = await fn(tx);
        } catch (err) {
          await tx.exec('ROLLBACK').catch(() => {});
          throw err;
        }
        await tx.exec('COMMIT');
        return out;
      }),
    async close() {
      if (closed) return;
      closed = true;
      clearTimeout(restartTimer);
      if (starting !== undefined) await starting.terminate();
      // Closed after the statement in progress, if it ends in time; a wedged one is not waited for (the worker is ended,
      // as a crash would: what was committed is kept, and what was not is still in the journal).
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<void>((r) => (timer = setTimeout(r, opts.closeWaitMs ?? CLOSE_WAIT_MS)));
      const inTime = await Promise.race([exclusive(() => call({ op: 'close' })).then(ok, ok), late.then(() => false)]);
      clearTimeout(timer);
      // It exits once PGlite is closed and its port drops.
      if (worker.threadId !== -1) {
        const exited = new Promise((r) => worker.once('exit', r));
        const timer = setTimeout(() => void worker.terminate(), inTime ? 5_000 : 0);
        await exited;
        clearTimeout(timer);
      }
    },
  };
  return store;
}
