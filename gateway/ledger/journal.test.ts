// The journal's own mechanics, with the database replaced by a commit function under test control.
// (ledger.test.ts runs the same journal against real databases.)
import { closeSync, readdirSync, readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { tempDir } from '../../test/support/databases.ts';
import { ledgerRow } from '../../test/support/ledger-rows.ts';
import { LedgerFullError } from './errors.ts';
import { Journal } from './journal.ts';
import type { JournalOptions } from './journal.ts';
import type { LedgerRow } from './row.ts';

const quiet = { info() {}, warn() {}, error() {} };
const dirs: string[] = [];
const journals: Journal[] = [];

afterEach(async () => {
  for (const j of journals.splice(0)) await j.close(100);
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

async function openJournal(o: Partial<JournalOptions> = {}) {
  const dir = await tempDir('tollgate-journal-');
  dirs.push(dir);
  const committed: LedgerRow[][] = [];
  const journal = new Journal({
    dir,
    maxBytes: 1024 ** 3,
    segmentRows: 1000,
    segmentMs: 60_000,
    batchSize: 1000,
    commit: async (rows) => {
      committed.push(rows);
      return [];
    },
    logger: quiet,
    retry: { baseMs: 10, capMs: 40 },
    ...o,
  });
  journals.push(journal);
  const files = () => readdirSync(dir).filter((f) => f.endsWith('.jsonl')).sort();
  return { dir, journal, committed, files };
}

/** A commit that waits until open() (rows pile up in sealed segments meanwhile). */
function held() {
  let open!: () => void;
  const gate = new Promise<void>((r) => (open = r));
  const committed: LedgerRow[][] = [];
  return {
    committed,
    open,
    commit: async (rows: LedgerRow[]) => {
      await gate;
      committed.push(rows);
      return [];
    },
  };
}

describe('journal', () => {
  it('has the row on disk, as one JSON line, when record() resolves', async () => {
    const { dir, journal, files } = await openJournal();
    const row = ledgerRow({ detail: { text: 'line\nbreak', emoji: '💸' } });
    await journal.record(row);
    const text = readFileSync(join(dir, files()[0]), 'utf8');
    expect(text.endsWith('\n')).toBe(true);
    expect(text.split('\n')).toHaveLength(2);
    expect(JSON.parse(text)).toEqual(row);
    expect(journal.health()).toEqual({ ready: true, journalBytes: Buffer.byteLength(text), pendingRows: 1 });
  });

  it('writes the rows of one event-loop turn in one write, each resolved only after it', async () => {
    const { dir, journal, files } = await openJournal();
    const rows = Array.from({ length: 5 }, () => ledgerRow());
    const written = rows.map((r) => journal.record(r));
    // Taken, not yet written: nothing on disk, all five share one write.
    expect(files()).toEqual([]);
    expect(new Set(written).size).toBe(1);
    expect(journal.health()).toMatchObject({ ready: true, pendingRows: 5 });
    let resolved = false;
    void written[0].then(() => (resolved = true));
    await Promise.resolve();
    expect(resolved).toBe(false);
    await Promise.all(written);
    const lines = readFileSync(join(dir, files()[0]), 'utf8').split('\n').filter(Boolean);
    expect(lines.map((l) => JSON.parse(l).requestId)).toEqual(rows.map((r) => r.requestId));
    // The next turn is the next write.
    await journal.record(ledgerRow());
    expect(readFileSync(join(dir, files()[0]), 'utf8').split('\n').filter(Boolean)).toHaveLength(6);
  });

  it('writes a turn larger than its group buffer, with multi-byte text, byte for byte as the rows serialise', async () => {
    const { dir, journal, files } = await openJournal();
    // ~200 KB of UTF-8 in one turn: the group buffer grows mid-turn; the next, small turn reuses a fresh one.
    const rows = Array.from({ length: 40 }, (_, i) => ledgerRow({ detail: { text: `€${i}`.repeat(1200), emoji: '💸'.repeat(300) } }));
    await Promise.all(rows.map((r) => journal.record(r)));
    const small = ledgerRow();
    await journal.record(small);
    const expected = [...rows, small].map((r) => JSON.stringify(r) + '\n').join('');
    expect(readFileSync(join(dir, files()[0]))).toEqual(Buffer.from(expected));
    expect(journal.health().journalBytes).toBe(Buffer.byteLength(expected));
  });

  it('rejects every row of a failed write and leaves none of them on disk to be billed later', async () => {
    const { dir, journal, files, committed } = await openJournal();
    await journal.record(ledgerRow({ requestId: 'before' }));
    const segment = join(dir, files()[0]);
    // The segment's descriptor is closed under the journal: its next write fails (EBADF), as a failing disk would.
    const fd = (journal as unknown as { fd: number }).fd;
    closeSync(fd);
    const refused = [journal.record(ledgerRow()), journal.record(ledgerRow())];
    for (const p of refused) await expect(p).rejects.toThrow();
    expect(readFileSync(segment, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l).requestId)).toEqual(['before']);
    // The journal carries on in a new segment.
    await journal.record(ledgerRow({ requestId: 'after' }));
    await journal.flush();
    expect(committed.flat().map((r) => r.requestId)).toEqual(['before', 'after']);
  });

  it('seals a segment at segmentRows and starts the next one on the next row', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const { journal, committed, files } = await openJournal({
      segmentRows: 3,
      commit: async (rows) => {
        await gate;
        committed.push(rows);
        return [];
      },
    });
    for (let i = 0; i < 7; i++) await journal.record(ledgerRow());
    expect(files()).toHaveLength(3);
    expect(files().map((f) => f.slice(0, 12))).toEqual(['000000000001', '000000000002', '000000000003']);
    release();
    await journal.flush();
    expect(committed.flat()).toHaveLength(7);
    expect(files()).toEqual([]);
  });

  it('seals by age so a quiet pod still reaches the database quickly', async () => {
    const { journal, committed } = await openJournal({ segmentMs: 40 });
    journal.record(ledgerRow());
    await vi.waitFor(() => expect(committed.flat()).toHaveLength(1), { timeout: 2_000, interval: 10 });
  });

  it('merges small segments into one batch and splits a large one into batchSize pieces', async () => {
    const gate = held();
    const { journal, committed } = await openJournal({ segmentRows: 4, batchSize: 10, commit: gate.commit });
    for (let i = 0; i < 23; i++) await journal.record(ledgerRow());
    gate.open();
    await journal.flush();
    const committedBatches = gate.committed;
    // The first segment went alone (the writer was free); the rest sealed while it waited and merged.
    expect(committedBatches.map((b) => b.length)).toEqual([4, 8, 8, 3]);
    expect(committed).toEqual([]);

    // A segment written with a larger batch size (an earlier configuration) is cut to size.
    const big = await openJournal({ segmentRows: 50, batchSize: 50, commit: () => Promise.reject(new Error('down')) });
    for (let i = 0; i < 45; i++) big.journal.record(ledgerRow());
    await big.journal.close(1_000);
    expect(big.files()).toHaveLength(1);
    const small = await openJournal({ dir: big.dir, batchSize: 20 });
    await small.journal.flush();
    expect(small.committed.map((b) => b.length)).toEqual([20, 20, 5]);
  });

  it('commits up to `writers` batches at once, each segment exactly once, and flush() waits for all', async () => {
    let inFlight = 0;
    let most = 0;
    const gates: (() => void)[] = [];
    const { journal, committed, files } = await openJournal({
      segmentRows: 2,
      batchSize: 2,
      writers: 2,
      commit: async (rows) => {
        most = Math.max(most, ++inFlight);
        await new Promise<void>((r) => gates.push(r));
        inFlight--;
        committed.push(rows);
        return [];
      },
    });
    const rows = Array.from({ length: 7 }, () => ledgerRow());
    for (const r of rows) await journal.record(r);
    const flushed = journal.flush();
    await vi.waitFor(() => expect(gates).toHaveLength(2));
    await new Promise((r) => setTimeout(r, 20));
    expect(gates).toHaveLength(2); // no third batch while two are in flight
    // Release whatever is waiting until flush() is done.
    let done = false;
    void flushed.then(() => (done = true));
    while (!done) {
      gates.splice(0).forEach((open) => open());
      await new Promise((r) => setTimeout(r, 5));
    }
    expect(most).toBe(2);
    expect(committed.flat().map((r) => r.requestId).sort()).toEqual(rows.map((r) => r.requestId).sort());
    expect(files()).toEqual([]);
    expect(journal.health()).toEqual({ ready: true, journalBytes: 0, pendingRows: 0 });
  });

  it('puts a failed batch back while another commits, and commits its rows once on retry', async () => {
    let failNext = true;
    const { journal, committed, files } = await openJournal({
      segmentRows: 3,
      batchSize: 3,
      writers: 2,
      commit: async (rows) => {
        if (failNext) {
          failNext = false;
          throw Object.assign(new Error('connection reset'), { code: 'ECONNRESET' });
        }
        committed.push(rows);
        return [];
      },
    });
    const rows = Array.from({ length: 6 }, () => ledgerRow());
    for (const r of rows) await journal.record(r);
    await vi.waitFor(() => expect(committed.flat()).toHaveLength(6), { timeout: 3_000, interval: 5 });
    expect(new Set(committed.flat().map((r) => r.requestId)).size).toBe(6);
    expect(files()).toEqual([]);
  });

  it('hands the writer the recorded rows from memory, and reads files back only beyond memoryRows', async () => {
    const gate = held();
    const { journal } = await openJournal({ segmentRows: 2, batchSize: 2, memoryRows: 4, commit: gate.commit });
    const rows = Array.from({ length: 8 }, () => ledgerRow());
    for (const r of rows) await journal.record(r);
    gate.open();
    await journal.flush();
    const seen = gate.committed.flat();
    expect(seen).toEqual(rows);
    // The first two segments fit the budget: the very objects recorded. The rest came from their files.
    expect(seen.map((r, i) => r === rows[i])).toEqual([true, true, true, true, false, false, false, false]);
  });

  it('retries with growing, jittered delays and commits the rows once the database answers', async () => {
    const attempts: number[] = [];
    let failuresLeft = 4;
    const { journal, committed, files } = await openJournal({
      segmentRows: 5,
      retry: { baseMs: 20, capMs: 80 },
      commit: async (rows) => {
        attempts.push(performance.now());
        if (failuresLeft-- > 0) throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
        committed.push(rows);
        return [];
      },
    });
    for (let i = 0; i < 5; i++) journal.record(ledgerRow());
    await vi.waitFor(() => expect(committed.flat()).toHaveLength(5), { timeout: 3_000, interval: 5 });
    expect(attempts).toHaveLength(5);
    const gaps = attempts.slice(1).map((t, i) => t - attempts[i]);
    // Delay n lies in [ceiling/2, ceiling] with ceiling = min(80, 20 * 2^(n-1)): 10+, 20+, 40+, 40+ ms.
    expect(gaps[0]).toBeGreaterThanOrEqual(9);
    expect(gaps[1]).toBeGreaterThanOrEqual(19);
    expect(gaps[2]).toBeGreaterThanOrEqual(39);
    expect(gaps[3]).toBeGreaterThanOrEqual(39);
    expect(files()).toEqual([]);
  });

  it('does not cut tiny segments by age while the database is failing', async () => {
    let up = false;
    const { journal, committed, files } = await openJournal({
      segmentRows: 1000,
      segmentMs: 20,
      retry: { baseMs: 200, capMs: 200 },
      commit: async (rows) => {
        if (!up) throw new Error('down');
        committed.push(rows);
        return [];
      },
    });
    journal.record(ledgerRow());
    await vi.waitFor(() => expect(journal.health().pendingRows).toBe(1), { timeout: 1_000 });
    await new Promise((r) => setTimeout(r, 60)); // the first attempt has failed by now
    for (let i = 0; i < 20; i++) {
      journal.record(ledgerRow());
      await new Promise((r) => setTimeout(r, 10));
    }
    expect(files().length).toBeLessThanOrEqual(2);
    up = true;
    await vi.waitFor(() => expect(committed.flat()).toHaveLength(21), { timeout: 3_000, interval: 10 });
  });

  it('refuses rows past the byte bound and takes them again once drained', async () => {
    let up = false;
    const { journal } = await openJournal({
      maxBytes: 5_000,
      segmentRows: 5,
      segmentMs: 30,
      retry: { baseMs: 10, capMs: 10 },
      commit: async () => {
        if (!up) throw new Error('down');
        return [];
      },
    });
    let accepted = 0;
    expect(() => {
      for (;;) {
        journal.record(ledgerRow());
        accepted++;
      }
    }).toThrow(LedgerFullError);
    expect(accepted).toBeGreaterThan(3);
    expect(journal.health()).toMatchObject({ ready: false, pendingRows: accepted });
    await vi.waitFor(() => expect(journal.health().reason).toMatch(/journal full .* database unreachable/), { timeout: 1_000 });
    up = true;
    await vi.waitFor(() => expect(journal.health()).toEqual({ ready: true, journalBytes: 0, pendingRows: 0 }), { timeout: 3_000, interval: 10 });
    journal.record(ledgerRow());
  });
});
