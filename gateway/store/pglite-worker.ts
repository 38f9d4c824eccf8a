// The worker thread that owns the embedded PGlite (see pglite-store.ts). PGlite runs each statement synchronously in
// WebAssembly, so here it blocks this thread, not the one serving requests. Its WebAssembly runs as Liftoff code
// only (pglite-store.ts sets that before starting this thread): the optimising tier compiles Postgres' largest
// functions with hundreds of MB of transient memory and gains little for a ledger's batches.
// With `--init-only` it creates the data directory (initdb) and exits, taking initdb's second instance with it; that
// one runs as a child process (pglite-store.ts), since a thread's malloc arena would keep ~60 MB of it resident.
import { readlinkSync, writeFileSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';
import { parentPort } from 'node:worker_threads';
import { PGlite, types } from '@electric-sql/pglite';
import type { PgliteReply, PgliteRequest } from './pglite-protocol.ts';
import { errorFields } from './pglite-protocol.ts';

/** Niceness added to the gateway's (inherited): weighs ~10x less than it when both want one core. */
const NICER_BY = 10;
const send = (r: PgliteReply) => (parentPort ? parentPort.postMessage(r) : process.send!(r));
const done = () => (parentPort ? parentPort.close() : process.disconnect());
const dataDir = process.argv[2] || undefined;
const initOnly = process.argv[3] === '--init-only';

// Sized for one connection and a ledger that writes batches, not for a shared server: Postgres' defaults
// (128 MB shared_buffers, 100 connections' worth of shared memory) are touched as they are used and WebAssembly
// memory never shrinks, so they end up resident. Measured in bench/embedded-footprint.ts (docs/adr/0015). 4 MB of
// buffers (512 pages) hold what a ledger batch touches (the day partition's last pages, its key's right edge, the
// rollups); more were resident from the start and bought no CPU per batch (docs/adr/0015, addendum).
const START_PARAMS = [
  ...PGlite.defaultStartParams,
  '-c', 'shared_buffers=4MB',
  '-c', 'wal_buffers=1MB',
  '-c', 'max_connections=5',
  '-c', 'autovacuum_worker_slots=1',
  '-c', 'maintenance_work_mem=16MB',
  '-c', 'temp_buffers=2MB',
];

// initdb's options (a first boot only; a directory made before keeps what it has). Postgres 18 turned page checksums
// on by default: every page written computes one and every page read checks it, in WebAssembly here. PGlite already
// runs with fsync off, so a torn or lost page after a host crash is not something a checksum would save; the ledger's
// rows are safe in the journal until committed (docs/adr/0015, addendum on the ledger's cost per row).
const INITDB_PARAMS = ['--no-data-checksums'];

if (!parentPort) {
  // The first boot's init process: it goes when the gateway does (exit, crash, kill -9), ignores the Ctrl-C that
  // reaches the whole process group, and says who owns the directory meanwhile (pglite-store.ts waits for it).
  process.on('disconnect', () => process.exit(0));
  process.on('SIGINT', () => {});
  process.on('SIGTERM', () => {});
  if (dataDir) writeFileSync(`${dataDir}.pid`, String(process.pid));
}

// This thread only, below the gateway's priority (Linux schedules threads, and setpriority on a thread id applies to
// that thread): on a box with few cores a batch here (milliseconds of CPU) would otherwise take a core from requests
// in flight, which is the embedded store's latency tail; the ledger only needs the CPU left over, and the journal
// holds rows meanwhile. Not the lowest niceness: under sustained full load it must still keep up.
try {
  const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
  setPriority(tid, Math.min(19, getPriority(tid) + NICER_BY));
} catch {
  // no /proc (not Linux) or not permitted: run at the gateway's priority
}

try {
  // PGlite turns int8 into number/BigInt; keep it a string as pg does, so callers see one shape.
  const db = await PGlite.create({ dataDir, startParams: START_PARAMS, initDbStartParams: INITDB_PARAMS, parsers: { [types.INT8]: (v: string) => v } });
  if (initOnly) {
    await db.close();
    send({ id: 0, ok: true });
    done();
  } else {
    parentPort!.on('message', (m: PgliteRequest) => void serve(db, m));
    send({ id: 0, ok: true });
  }
} catch (err) {
  send({ id: 0, ok: false, error: errorFields(err) });
  done();
}

async function serve(db: PGlite, m: PgliteRequest): Promise<void> {
  let reply: PgliteReply;
  try {
    if (m.op === 'query') reply = { id: m.id, ok: true, rows: (await db.query(m.sql, m.params)).rows };
    else if (m.op === 'exec' && m.blob !== undefined) {
      const results = await db.exec(m.sql, { blob: new Blob([m.blob]) });
      reply = { id: m.id, ok: true, rows: results.at(-1)?.rows ?? [] };
    } else if (m.op === 'exec') {
      await db.exec(m.sql);
      reply = { id: m.id, ok: true };
    } else {
      if (!db.closed) await db.close();
      reply = { id: m.id, ok: true };
    }
  } catch (err) {
    reply = { id: m.id, ok: false, error: errorFields(err) };
  }
  send(reply);
  if (m.op === 'close') done();
}
