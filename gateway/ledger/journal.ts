// The local journal (docs/contract.md, durability): record() queues one line, and all lines queued in one event-loop turn go to the
// append-only segment in one synchronous write (group commit), which survives a kill of the process;
// each row's promise resolves only after that write returned, so an answer never leaves before its row. Segments are sealed by row count or
// age, and a background loop moves sealed segments into the database, deleting each only after
// its rows committed. Segments left by an earlier process are replayed at start; the request id
// makes every replay exactly once. Up to `writers` batches (disjoint segments) commit at once, and
// the rows of recent segments stay in memory for them (within memoryRows), so the writer reads
// files back only for a backlog or a replay; the files stay the record until the commit.
import { appendFileSync, closeSync, fstatSync, ftruncateSync, mkdirSync, openSync, readdirSync, readFileSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { LedgerClosedError, LedgerFullError } from './errors.ts';
import { checkRow, parseJournalLine } from './journal-line.ts';
import type { LedgerLogger } from './logger.ts';
import { DEFAULT_RETRY, retryDelay } from './retry-delay.ts';
import type { RetryPolicy } from './retry-delay.ts';
import type { LedgerRow } from './row.ts';

/** A row (or raw line) the database will never accept, with why. */
export interface RejectedRow {
  row: unknown;
  reason: string;
}

export interface JournalOptions {
  dir: string;
  /** Past this many bytes of segments, record() throws LedgerFullError. */
  maxBytes: number;
  /** Seal the open segment at this many rows... */
  segmentRows: number;
  /** ...or when its first row is this old, whichever comes first. */
  segmentMs: number;
  /** Most rows handed to commit() at once. */
  batchSize: number;
  /** Batches committing at once, each with its own segments. Default 1. */
  writers?: number;
  /** Most rows kept in memory for the writer (beyond them it reads segment files). Default (writers + 2) × batchSize. */
  memoryRows?: number;
  /** Moves rows into the database; resolves once committed, with the rows it set aside. */
  commit: (rows: LedgerRow[]) => Promise<RejectedRow[]>;
  logger: LedgerLogger;
  retry?: RetryPolicy;
}

export interface JournalHealth {
  ready: boolean;
  reason?: string;
  journalBytes: number;
  pendingRows: number;
}

interface Segment {
  name: string;
  seq: number;
  bytes: number;
  rows: number;
  /** The rows as recorded, while within the memory budget; else the writer reads the file. */
  held?: LedgerRow[];
}

/** Segments being committed; `settled` resolves (never rejects) with the error, if any. */
interface Batch {
  segments: Segment[];
  settled: Promise<unknown>;
}

// <12-digit sequence>-<random>.jsonl: sorts in write order; the random part keeps two
// processes that (wrongly) share a directory from appending to one file.
const SEGMENT_NAME = /^(\d{12})-[0-9a-f]{8}\.jsonl$/;
const REJECTED_FILE = 'rejected.jsonl';
/** Most characters one group write holds (about 2,000 rows). */
const GROUP_MAX_CHARS = 1 << 20;
/** The group buffer's usual size; one grown past RETAINED_GROUP_BYTES by a burst is let go after its write. */
const GROUP_BYTES = 64 * 1024;
const RETAINED_GROUP_BYTES = 256 * 1024;

export class Journal {
  private readonly opts: JournalOptions;
  private readonly retry: RetryPolicy;
  private fd = -1;
  /** Rows taken this turn and not yet written: their lines, and the promise they share. */
  private queuedRows: LedgerRow[] = [];
  /**
   * The turn's lines as UTF-8, encoded as each row is recorded: no string per line with its newline, and no
   * flattening and copying of the turn's text at the write (garbage on every request otherwise). Reused per write.
   */
  private group = Buffer.allocUnsafe(GROUP_BYTES);
  private groupUsed = 0;
  private queuedBytes = 0;
  private written: Promise<void> | undefined;
  private settleWrite: (() => void) | undefined;
  private failWrite: ((err: unknown) => void) | undefined;
  private current: Segment | null = null;
  private currentOpenedAt = 0;
  /** Sealed and not being committed, in write order. */
  private readonly sealed: Segment[] = [];
  private readonly inFlight = new Set<Batch>();
  private readonly writers: number;
  private readonly memoryRows: number;
  private heldRows = 0;
  private pumpQueued = false;
  private nextSeq = 1;
  private bytes = 0;
  private rows = 0;
  private failures = 0;
  private retryAt = 0;
  private retryTimer: NodeJS.Timeout | undefined;
  private readonly roller: NodeJS.Timeout;
  private closed = false;
  private stopped = false;

  constructor(opts: JournalOptions) {
    this.opts = opts;
    this.retry = opts.retry ?? DEFAULT_RETRY;
    this.writers = Math.max(1, opts.writers ?? 1);
    this.memoryRows = opts.memoryRows ?? (this.writers + 2) * opts.batchSize;
    mkdirSync(opts.dir, { recursive: true });
    this.adoptExistingSegments();
    this.roller = setInterval(() => this.rollByAge(), Math.max(10, opts.segmentMs / 2));
    this.roller.unref();
    this.pump();
  }

  /**
   * The request path: serialises the row (once; the writer takes the object itself) and queues it for this turn's
   * write. Throws at once when the journal is closed or full; the promise rejects when the write failed, and then
   * none of that write's rows is on disk. Shared by every row of the turn.
   */
  record(row: LedgerRow): Promise<void> {
    if (this.closed) throw new LedgerClosedError();
    if (this.bytes + this.queuedBytes >= this.opts.maxBytes) {
      throw new LedgerFullError(`ledger journal full: ${this.bytes + this.queuedBytes} bytes pending, bound ${this.opts.maxBytes}`);
    }
    const json = JSON.stringify(row);
    this.queueLine(json);
    // Characters, not bytes: the bound check only needs the order of magnitude; the write counts exactly.
    this.queuedBytes += json.length + 1;
    this.queuedRows.push(row);
    if (this.written === undefined) {
      this.written = new Promise<void>((resolve, reject) => {
        this.settleWrite = resolve;
        this.failWrite = reject;
      });
      setImmediate(this.writeQueued);
    }
    const written = this.written;
    // A burst larger than any turn of real traffic (a bench loop, a replay tool) is written now, not held whole.
    if (this.queuedBytes >= GROUP_MAX_CHARS) this.writeQueued();
    return written;
  }

  /** Appends `json` and its newline to the group buffer, growing it first so the line is encoded whole. */
  private queueLine(json: string): void {
    let buf = this.group;
    // UTF-8 takes at most 3 bytes per UTF-16 code unit.
    const need = this.groupUsed + json.length * 3 + 1;
    if (need > buf.length) {
      const bigger = Buffer.allocUnsafe(Math.max(need, buf.length * 2));
      buf.copy(bigger, 0, 0, this.groupUsed);
      this.group = buf = bigger;
    }
    this.groupUsed += buf.write(json, this.groupUsed);
    buf[this.groupUsed++] = 0x0a;
  }

  /** Writes the rows queued this turn in one write, then settles their shared promise. */
  private readonly writeQueued = (): void => {
    const rows = this.queuedRows;
    if (rows.length === 0) return;
    const resolve = this.settleWrite!;
    const reject = this.failWrite!;
    // A view of the group buffer: written synchronously below, before any row of the next group is encoded into it.
    const buf = this.group.subarray(0, this.groupUsed);
    this.queuedRows = [];
    this.groupUsed = 0;
    this.queuedBytes = 0;
    if (this.group.length > RETAINED_GROUP_BYTES) this.group = Buffer.allocUnsafe(GROUP_BYTES);
    this.written = this.settleWrite = this.failWrite = undefined;
    let seg: Segment;
    try {
      seg = this.current ?? this.openSegment();
      writeAll(this.fd, buf, seg.bytes);
    } catch (err) {
      this.sealAfterFailedWrite();
      const code = (err as NodeJS.ErrnoException).code;
      reject(code === 'ENOSPC' || code === 'EDQUOT' ? new LedgerFullError('ledger journal: disk full', { cause: err }) : err);
      return;
    }
    if (seg.held) for (const row of rows) seg.held.push(row);
    seg.rows += rows.length;
    seg.bytes += buf.length;
    this.rows += rows.length;
    this.bytes += buf.length;
    resolve();
    if (seg.rows >= this.opts.segmentRows) {
      this.seal();
      this.pump();
    }
  };

  health(): JournalHealth {
    const bytes = this.bytes + this.queuedBytes;
    const h: JournalHealth = { ready: true, journalBytes: bytes, pendingRows: this.rows + this.queuedRows.length };
    if (this.closed) {
      h.ready = false;
      h.reason = 'ledger closed';
    } else if (bytes >= this.opts.maxBytes) {
      h.ready = false;
      h.reason = `ledger journal full (${bytes} of ${this.opts.maxBytes} bytes); database ${this.failures > 0 ? 'unreachable' : 'draining'}`;
    }
    return h;
  }

  /** Moves everything recorded so far into the database; rejects on the first failed batch. */
  async flush(): Promise<void> {
    this.writeQueued();
    this.seal();
    let last = this.sealed.at(-1)?.seq ?? 0;
    for (const b of this.inFlight) for (const seg of b.segments) last = Math.max(last, seg.seq);
    const waiting = () => this.sealed.length > 0 && this.sealed[0].seq <= last;
    for (;;) {
      // Not waiting out a backoff: the caller wants the answer now.
      if (waiting()) this.launch(true);
      const mine = [...this.inFlight].filter((b) => b.segments.some((seg) => seg.seq <= last));
      // With every writer busy on later segments, wait for one to come free.
      const watch = mine.length > 0 || !waiting() ? mine : [...this.inFlight];
      if (watch.length === 0) return; // done (or stopped: what is left stays journaled)
      const { batch, err } = await Promise.race(watch.map((b) => b.settled.then((e) => ({ batch: b, err: e }))));
      if (err !== undefined && mine.includes(batch)) throw err;
    }
  }

  /** Stops taking rows, then drains what it can within the deadline; the rest stays on disk. */
  async close(deadlineMs: number): Promise<void> {
    if (this.closed) return;
    // Rows already taken are written (their answers wait on it) before the journal stops.
    this.writeQueued();
    this.closed = true;
    clearInterval(this.roller);
    clearTimeout(this.retryTimer);
    this.seal();
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<'deadline'>((resolve) => {
      timer = setTimeout(() => resolve('deadline'), deadlineMs);
    });
    const drained = (async () => {
      while (!this.stopped && (this.sealed.length > 0 || this.inFlight.size > 0)) {
        this.launch(true);
        const err = await Promise.race([...this.inFlight].map((b) => b.settled));
        if (err !== undefined) throw err;
      }
      return 'drained' as const;
    })();
    drained.catch(() => {}); // also when it fails after the deadline won
    try {
      const outcome = await Promise.race([drained, deadline]);
      if (outcome === 'deadline') {
        this.opts.logger.warn({ pendingRows: this.rows }, 'ledger close deadline passed; rows stay journaled for the next start');
      }
    } catch (err) {
      this.opts.logger.warn({ err: String(err), pendingRows: this.rows }, 'ledger could not drain on close; rows stay journaled for the next start');
    } finally {
      clearTimeout(timer);
      this.stopped = true;
    }
  }

  private adoptExistingSegments(): void {
    const found: Segment[] = [];
    for (const name of readdirSync(this.opts.dir)) {
      const m = SEGMENT_NAME.exec(name);
      if (!m) continue;
      const path = join(this.opts.dir, name);
      const bytes = statSync(path).size;
      if (bytes === 0) {
        unlinkSync(path);
        continue;
      }
      found.push({ name, seq: Number(m[1]), bytes, rows: countLines(readFileSync(path)) });
    }
    found.sort((a, b) => a.seq - b.seq);
    for (const s of found) {
      this.sealed.push(s);
      this.bytes += s.bytes;
      this.rows += s.rows;
    }
    this.nextSeq = (found.at(-1)?.seq ?? 0) + 1;
    if (found.length > 0) {
      this.opts.logger.info({ segments: found.length, rows: this.rows, bytes: this.bytes }, 'replaying ledger journal');
    }
  }

  private openSegment(): Segment {
    const seq = this.nextSeq++;
    const name = `${String(seq).padStart(12, '0')}-${randomBytes(4).toString('hex')}.jsonl`;
    this.fd = openSync(join(this.opts.dir, name), 'a');
    // Hold the rows for the writer only while the budget has room for a whole segment more.
    const held = this.heldRows + this.opts.segmentRows <= this.memoryRows ? [] : undefined;
    this.current = { name, seq, bytes: 0, rows: 0, held };
    this.currentOpenedAt = Date.now();
    return this.current;
  }

  /** Closes the open segment and queues it for the database. */
  private seal(): void {
    const seg = this.current;
    if (!seg) return;
    // Count what is really on disk (a failed write may have left part of a line).
    const size = fstatSync(this.fd).size;
    this.bytes += size - seg.bytes;
    seg.bytes = size;
    closeSync(this.fd);
    this.fd = -1;
    this.current = null;
    if (size === 0) unlinkSync(join(this.opts.dir, seg.name));
    else this.queue(seg);
  }

  private queue(seg: Segment): void {
    this.heldRows += seg.held?.length ?? 0;
    this.sealed.push(seg);
  }

  private sealAfterFailedWrite(): void {
    try {
      this.seal();
    } catch (err) {
      // Keep the segment queued with what we know of it; its complete lines still count.
      this.opts.logger.error({ err: String(err) }, 'ledger journal: could not seal segment after a failed write');
      if (this.current) this.queue(this.current);
      try {
        closeSync(this.fd);
      } catch {
        // already unusable
      }
      this.fd = -1;
      this.current = null;
    }
  }

  private rollByAge(): void {
    // While the database is failing, roll by count only: no point making many tiny files.
    if (this.current && this.failures === 0 && Date.now() - this.currentOpenedAt >= this.opts.segmentMs) {
      this.seal();
      this.pump();
    }
  }

  /**
   * Starts the background drain, after the current burst of record() calls (a microtask later), so
   * a batch takes every segment sealed by then.
   */
  private pump(): void {
    if (this.pumpQueued) return;
    this.pumpQueued = true;
    queueMicrotask(() => {
      this.pumpQueued = false;
      this.launch(false);
    });
  }

  /** Starts batches while a writer is free; `force` ignores a backoff (flush, close). */
  private launch(force: boolean): void {
    while (!this.stopped && this.inFlight.size < this.writers && this.sealed.length > 0 && (force || Date.now() >= this.retryAt)) {
      // The oldest sealed segments, up to batchSize rows (at least one segment).
      let n = 0;
      let rows = 0;
      while (n < this.sealed.length && (n === 0 || rows + this.sealed[n].rows <= this.opts.batchSize)) rows += this.sealed[n++].rows;
      const batch: Batch = { segments: this.sealed.splice(0, n), settled: Promise.resolve() };
      this.inFlight.add(batch);
      batch.settled = this.moveBatch(batch.segments).then(
        () => {
          this.inFlight.delete(batch);
          this.succeeded();
          this.launch(false);
          return undefined;
        },
        (err: unknown) => {
          this.inFlight.delete(batch);
          this.requeue(batch.segments);
          this.failed(err);
          return err ?? new Error('ledger batch failed');
        },
      );
    }
  }

  /** Puts the segments of a failed batch back, in write order, for the next attempt. */
  private requeue(segments: Segment[]): void {
    this.sealed.push(...segments);
    this.sealed.sort((a, b) => a.seq - b.seq);
  }

  private succeeded(): void {
    if (this.failures > 0) this.opts.logger.info({ failures: this.failures, pendingRows: this.rows }, 'ledger database reachable again; draining journal');
    this.failures = 0;
    this.retryAt = 0;
  }

  private failed(err: unknown): void {
    this.failures++;
    const delay = retryDelay(this.failures, this.retry);
    this.retryAt = Date.now() + delay;
    if (this.closed) return; // close() reports what stays on disk
    this.opts.logger.warn(
      { err: String(err), failures: this.failures, retryInMs: Math.round(delay), pendingRows: this.rows, journalBytes: this.bytes },
      'ledger batch not committed; rows stay journaled',
    );
    clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => {
      this.retryAt = 0;
      // With nothing sealed to retry, seal the open segment so its rows get a try too.
      if (this.sealed.length === 0 && !this.closed) this.seal();
      this.pump();
    }, delay);
    this.retryTimer.unref();
  }

  /** Commits the segments' rows, then deletes the segments. */
  private async moveBatch(take: Segment[]): Promise<void> {
    const rows: LedgerRow[] = [];
    for (const s of take) {
      if (s.held) rows.push(...this.checked(s.held));
      else rows.push(...(await this.readSegment(s)));
    }
    for (let i = 0; i < rows.length; i += this.opts.batchSize) {
      const rejected = await this.opts.commit(rows.slice(i, i + this.opts.batchSize));
      for (const r of rejected) this.setAside(r);
    }

    // Each segment leaves the batch as it is deleted: should a deletion fail, only the rest is retried.
    while (take.length > 0) {
      const s = take[0];
      try {
        unlinkSync(join(this.opts.dir, s.name));
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      }
      take.shift();
      this.bytes -= s.bytes;
      this.rows -= s.rows;
      this.heldRows -= s.held?.length ?? 0;
      s.held = undefined;
    }
  }

  /** Rows still in memory pass the same checks as rows read back from a file. */
  private checked(held: LedgerRow[]): LedgerRow[] {
    const rows: LedgerRow[] = [];
    for (const row of held) {
      try {
        rows.push(checkRow(row));
      } catch (err) {
        this.setAside({ row, reason: (err as Error).message });
      }
    }
    return rows;
  }

  private async readSegment(s: Segment): Promise<LedgerRow[]> {
    let text: string;
    try {
      text = await readFile(join(this.opts.dir, s.name), 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      this.opts.logger.warn({ segment: s.name }, 'ledger journal segment vanished');
      return [];
    }
    const lines = text.split('\n');
    const torn = lines.pop();
    if (torn) {
      // The process died inside record(): that row's response never completed, so it is not billed.
      this.opts.logger.warn({ segment: s.name, bytes: Buffer.byteLength(torn) }, 'ledger journal: dropping torn last line');
    }
    const rows: LedgerRow[] = [];
    for (const line of lines) {
      if (line === '') continue;
      try {
        rows.push(parseJournalLine(line));
      } catch (err) {
        this.setAside({ row: line, reason: (err as Error).message });
      }
    }
    return rows;
  }

  private setAside(r: RejectedRow): void {
    this.opts.logger.error({ reason: r.reason }, `ledger row set aside in ${REJECTED_FILE}`);
    appendFileSync(join(this.opts.dir, REJECTED_FILE), JSON.stringify({ at: new Date().toISOString(), ...r }) + '\n');
  }
}

/**
 * One write in practice; a short write (rare, e.g. a signal) continues where it stopped. When a write fails, the
 * file is cut back to `size` (its length before) so no row of a refused group is replayed and billed later.
 */
function writeAll(fd: number, buf: Buffer, size: number): void {
  let off = 0;
  try {
    while (off < buf.length) off += writeSync(fd, buf, off, buf.length - off);
  } catch (err) {
    if (off > 0) {
      try {
        ftruncateSync(fd, size);
      } catch {
        // The seal that follows counts what is on disk; a torn last line is dropped at replay.
      }
    }
    throw err;
  }
}

function countLines(buf: Buffer): number {
  let n = 0;
  for (let i = buf.indexOf(10); i !== -1; i = buf.indexOf(10, i + 1)) n++;
  return n;
}
