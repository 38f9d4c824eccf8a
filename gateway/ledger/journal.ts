// The local journal (DESIGN §7): record() appends one line to an append-only segment with one
// synchronous write, which survives a kill of the process. Segments are sealed by row count or
// age, and a background loop moves sealed segments into the database, deleting each only after
// its rows committed. Segments left by an earlier process are replayed at start; the request id
// makes every replay exactly once.
import { appendFileSync, closeSync, fstatSync, mkdirSync, openSync, readdirSync, readFileSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { LedgerClosedError, LedgerFullError } from './errors.ts';
import { parseJournalLine } from './journal-line.ts';
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
}

// <12-digit sequence>-<random>.jsonl: sorts in write order; the random part keeps two
// processes that (wrongly) share a directory from appending to one file.
const SEGMENT_NAME = /^(\d{12})-[0-9a-f]{8}\.jsonl$/;
const REJECTED_FILE = 'rejected.jsonl';

export class Journal {
  private readonly opts: JournalOptions;
  private readonly retry: RetryPolicy;
  private fd = -1;
  private current: Segment | null = null;
  private currentOpenedAt = 0;
  private readonly sealed: Segment[] = [];
  private nextSeq = 1;
  private bytes = 0;
  private rows = 0;
  private failures = 0;
  private retryAt = 0;
  private retryTimer: NodeJS.Timeout | undefined;
  private readonly roller: NodeJS.Timeout;
  private looping = false;
  private tail: Promise<unknown> = Promise.resolve();
  private closed = false;
  private stopped = false;

  constructor(opts: JournalOptions) {
    this.opts = opts;
    this.retry = opts.retry ?? DEFAULT_RETRY;
    mkdirSync(opts.dir, { recursive: true });
    this.adoptExistingSegments();
    this.roller = setInterval(() => this.rollByAge(), Math.max(10, opts.segmentMs / 2));
    this.roller.unref();
    this.pump();
  }

  /** The request path: one JSON.stringify, one write. Throws when the row is not durable. */
  record(row: LedgerRow): void {
    if (this.closed) throw new LedgerClosedError();
    if (this.bytes >= this.opts.maxBytes) {
      throw new LedgerFullError(`ledger journal full: ${this.bytes} bytes pending, bound ${this.opts.maxBytes}`);
    }
    const line = Buffer.from(JSON.stringify(row) + '\n');
    let seg: Segment;
    try {
      seg = this.current ?? this.openSegment();
      writeAll(this.fd, line);
    } catch (err) {
      // A partial line may be on disk: never append after it.
      this.sealAfterFailedWrite();
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOSPC' || code === 'EDQUOT') throw new LedgerFullError('ledger journal: disk full', { cause: err });
      throw err;
    }
    seg.rows++;
    seg.bytes += line.length;
    this.rows++;
    this.bytes += line.length;
    if (seg.rows >= this.opts.segmentRows) {
      this.seal();
      this.pump();
    }
  }

  health(): JournalHealth {
    const h: JournalHealth = { ready: true, journalBytes: this.bytes, pendingRows: this.rows };
    if (this.closed) {
      h.ready = false;
      h.reason = 'ledger closed';
    } else if (this.bytes >= this.opts.maxBytes) {
      h.ready = false;
      h.reason = `ledger journal full (${this.bytes} of ${this.opts.maxBytes} bytes); database ${this.failures > 0 ? 'unreachable' : 'draining'}`;
    }
    return h;
  }

  /** Moves everything recorded so far into the database; rejects on the first failed batch. */
  async flush(): Promise<void> {
    this.seal();
    const last = this.sealed.at(-1)?.seq;
    if (last === undefined) {
      await this.tail;
      return;
    }
    while (this.sealed.length > 0 && this.sealed[0].seq <= last) {
      try {
        await this.exclusive(() => this.moveBatch());
        this.succeeded();
      } catch (err) {
        this.failed(err);
        throw err;
      }
    }
  }

  /** Stops taking rows, then drains what it can within the deadline; the rest stays on disk. */
  async close(deadlineMs: number): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.roller);
    clearTimeout(this.retryTimer);
    this.seal();
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<'deadline'>((resolve) => {
      timer = setTimeout(() => resolve('deadline'), deadlineMs);
    });
    const drained = (async () => {
      while (!this.stopped && this.sealed.length > 0) await this.exclusive(() => this.moveBatch());
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
    this.current = { name, seq, bytes: 0, rows: 0 };
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
    else this.sealed.push(seg);
  }

  private sealAfterFailedWrite(): void {
    try {
      this.seal();
    } catch (err) {
      // Keep the segment queued with what we know of it; its complete lines still count.
      this.opts.logger.error({ err: String(err) }, 'ledger journal: could not seal segment after a failed write');
      if (this.current) this.sealed.push(this.current);
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

  /** Starts the background drain unless it runs already or waits out a backoff. */
  private pump(): void {
    if (this.looping || this.stopped || Date.now() < this.retryAt || this.sealed.length === 0) return;
    this.looping = true;
    void (async () => {
      try {
        while (!this.stopped && this.sealed.length > 0) {
          try {
            await this.exclusive(() => this.moveBatch());
            this.succeeded();
          } catch (err) {
            this.failed(err);
            return;
          }
        }
      } finally {
        this.looping = false;
      }
    })();
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

  /** One batch at a time, whoever asks (background loop, flush, close). */
  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.tail.then(fn, fn);
    this.tail = run.catch(() => {});
    return run;
  }

  /** Commits the oldest sealed segments (up to batchSize rows) and deletes them. */
  private async moveBatch(): Promise<void> {
    const take: Segment[] = [];
    let rowsTaken = 0;
    for (const s of this.sealed) {
      if (take.length > 0 && rowsTaken + s.rows > this.opts.batchSize) break;
      take.push(s);
      rowsTaken += s.rows;
    }
    if (take.length === 0) return;

    const rows: LedgerRow[] = [];
    for (const s of take) rows.push(...(await this.readSegment(s)));
    for (let i = 0; i < rows.length; i += this.opts.batchSize) {
      const rejected = await this.opts.commit(rows.slice(i, i + this.opts.batchSize));
      for (const r of rejected) this.setAside(r);
    }

    for (const s of take) {
      try {
        unlinkSync(join(this.opts.dir, s.name));
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      }
      this.bytes -= s.bytes;
      this.rows -= s.rows;
    }
    this.sealed.splice(0, take.length);
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

function writeAll(fd: number, buf: Buffer): void {
  let off = 0;
  // One write in practice; a short write (rare, e.g. a signal) continues where it stopped.
  while (off < buf.length) off += writeSync(fd, buf, off, buf.length - off);
}

function countLines(buf: Buffer): number {
  let n = 0;
  for (let i = buf.indexOf(10); i !== -1; i = buf.indexOf(10, i + 1)) n++;
  return n;
}
