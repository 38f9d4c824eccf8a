import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it, vi } from 'vitest';
import { BACKENDS, countRows, useTestDatabase } from '../../test/support/databases.ts';
import { freshProject, ledgerRow } from '../../test/support/ledger-rows.ts';
import type { Store } from '../store/store.ts';
import { LedgerClosedError, LedgerFullError } from './errors.ts';
import { createLedger } from './ledger.ts';
import type { Ledger, LedgerOptions } from './ledger.ts';
import type { LedgerLogger } from './logger.ts';
import type { LedgerRow } from './row.ts';
import { writeUsageBatch } from './writer.ts';

const FAST_RETRY = { baseMs: 10, capMs: 50 };

function capturingLogger() {
  const lines: { level: string; msg: string; obj: object }[] = [];
  const at = (level: string) => (obj: object, msg: string) => void lines.push({ level, msg, obj });
  const logger: LedgerLogger = { info: at('info'), warn: at('warn'), error: at('error') };
  return { logger, lines };
}

async function billed(store: Store, project: string) {
  const events = await countRows(store, 'usage_events', 'project = $1', [project]);
  const { rows } = await store.query<{ n: string | null }>('SELECT sum(request_count) AS n FROM usage_hourly WHERE project = $1', [project]);
  return { events, rollup: Number(rows[0].n ?? 0) };
}

function segments(dir: string): string[] {
  return readdirSync(dir).filter((f) => /^\d{12}-[0-9a-f]{8}\.jsonl$/.test(f));
}

describe.each(BACKENDS)('ledger on %s', (backend) => {
  const db = useTestDatabase(backend);
  let n = 0;
  const journalDir = () => join(db().dir, `journal-${++n}`);
  const open = (o: Partial<LedgerOptions> & { journalDir: string }): Ledger =>
    createLedger({ store: db().store, logger: capturingLogger().logger, retry: FAST_RETRY, ...o });

  it('records to the journal and flush() moves the rows into the database', async () => {
    const dir = journalDir();
    const ledger = open({ journalDir: dir, flushIntervalMs: 60_000 });
    const project = freshProject();
    for (let i = 0; i < 25; i++) ledger.record(ledgerRow({ project }));
    expect(ledger.health()).toMatchObject({ ready: true, pendingRows: 25 });
    expect(ledger.health().journalBytes).toBeGreaterThan(0);

    await ledger.flush();
    expect(await billed(db().store, project)).toEqual({ events: 25, rollup: 25 });
    expect(ledger.health()).toEqual({ ready: true, journalBytes: 0, pendingRows: 0 });
    expect(segments(dir)).toEqual([]);
    await ledger.close();
  });

  it('drains in the background within the flush interval', async () => {
    const ledger = open({ journalDir: journalDir(), flushIntervalMs: 50 });
    const project = freshProject();
    for (let i = 0; i < 10; i++) ledger.record(ledgerRow({ project }));
    await vi.waitFor(async () => expect(await billed(db().store, project)).toEqual({ events: 10, rollup: 10 }), { timeout: 5_000, interval: 25 });
    expect(ledger.health().pendingRows).toBe(0);
    await ledger.close();
  });

  it('replays segments left by a crashed process exactly once, also rows committed before the crash', async () => {
    const dir = journalDir();
    const project = freshProject();
    const down = await db().interruptible({ startDown: true });
    // The "crashed" process: its database never answered, and it never got to close().
    const crashedLog = capturingLogger();
    const crashed = createLedger({ store: down.store, journalDir: dir, batchSize: 100, flushIntervalMs: 60_000, retry: { baseMs: 60_000, capMs: 60_000 }, logger: crashedLog.logger });
    const rows: LedgerRow[] = Array.from({ length: 430 }, (_, i) => ledgerRow({ project, occurredAt: Date.UTC(2025, 0, 1) + i * 10_000 }));
    for (const r of rows) await crashed.record(r);
    expect(segments(dir).length).toBe(5); // four sealed at 100 rows, one still open
    // Its one write attempt must have failed before the database returns, or it would still be in flight
    // (a pool waits for a connection) and commit behind the restarted ledger's back: this process is "dead".
    await expect.poll(() => crashedLog.lines.some((l) => l.level === 'warn'), { timeout: 10_000 }).toBe(true);
    await down.up();
    // Some rows reached the database before the crash (committed, segment not yet deleted).
    await writeUsageBatch(db().store, rows.slice(0, 150));

    const { logger, lines } = capturingLogger();
    const restarted = createLedger({ store: db().store, journalDir: dir, batchSize: 100, logger });
    expect(restarted.health().pendingRows).toBe(430);
    await restarted.flush();
    expect(await billed(db().store, project)).toEqual({ events: 430, rollup: 430 });
    expect(segments(dir)).toEqual([]);
    expect(lines.some((l) => l.msg === 'replaying ledger journal')).toBe(true);

    // A second restart finds nothing to replay and changes nothing.
    const again = createLedger({ store: db().store, journalDir: dir, logger });
    await again.flush();
    expect(await billed(db().store, project)).toEqual({ events: 430, rollup: 430 });
    await restarted.close();
    await again.close();
  });

  it('drops a torn last line, keeps the rows before it, and never appends after it', async () => {
    const dir = journalDir();
    const project = freshProject();
    const whole = [ledgerRow({ project }), ledgerRow({ project }), ledgerRow({ project })];
    const torn = JSON.stringify(ledgerRow({ project })).slice(0, 40);
    const name = '000000000007-0123abcd.jsonl';
    (await import('node:fs')).mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, name), whole.map((r) => JSON.stringify(r) + '\n').join('') + torn);

    const { logger, lines } = capturingLogger();
    const ledger = createLedger({ store: db().store, journalDir: dir, flushIntervalMs: 60_000, logger });
    await ledger.record(ledgerRow({ project }));
    // The new row went to a new segment, after the old one in order.
    expect(segments(dir).sort()).toEqual([name, expect.stringMatching(/^000000000008-/)]);
    expect(readFileSync(join(dir, name), 'utf8').endsWith(torn)).toBe(true);

    await ledger.flush();
    expect(await billed(db().store, project)).toEqual({ events: 4, rollup: 4 });
    expect(lines.filter((l) => l.msg.includes('torn'))).toHaveLength(1);
    expect(segments(dir)).toEqual([]);
    await ledger.close();
  });

  it('keeps rows journaled while the database is down, refuses past the bound, then drains exactly once', async () => {
    const dir = journalDir();
    const project = freshProject();
    const link = await db().interruptible();
    const { logger, lines } = capturingLogger();
    const ledger = createLedger({ store: link.store, journalDir: dir, maxJournalBytes: 150_000, batchSize: 100, flushIntervalMs: 20, retry: FAST_RETRY, logger });

    for (let i = 0; i < 30; i++) ledger.record(ledgerRow({ project }));
    await ledger.flush();
    await link.down();

    let recorded = 30;
    let refusal: unknown;
    for (let i = 0; i < 10_000 && !refusal; i++) {
      try {
        ledger.record(ledgerRow({ project }));
        recorded++;
      } catch (err) {
        refusal = err;
      }
    }
    expect(refusal).toBeInstanceOf(LedgerFullError);
    expect(refusal).toMatchObject({ code: 'LEDGER_FULL' });
    expect(recorded).toBeGreaterThan(100);
    const full = ledger.health();
    expect(full.ready).toBe(false);
    expect(full.reason).toMatch(/journal full/);
    expect(full.journalBytes).toBeGreaterThanOrEqual(150_000);
    expect(full.pendingRows).toBe(recorded - 30);
    await expect(ledger.flush()).rejects.toThrow();
    expect(() => ledger.record(ledgerRow({ project }))).toThrow(LedgerFullError);
    await vi.waitFor(() => expect(lines.filter((l) => l.msg.includes('not committed')).length).toBeGreaterThan(2), { timeout: 5_000 });

    await link.up();
    await vi.waitFor(() => expect(ledger.health()).toEqual({ ready: true, journalBytes: 0, pendingRows: 0 }), { timeout: 10_000, interval: 20 });
    expect(await billed(db().store, project)).toEqual({ events: recorded, rollup: recorded });
    expect(lines.some((l) => l.msg.includes('reachable again'))).toBe(true);

    ledger.record(ledgerRow({ project }));
    await ledger.flush();
    expect(await billed(db().store, project)).toEqual({ events: recorded + 1, rollup: recorded + 1 });
    await ledger.close();
  });

  it('keeps memory bounded through a long outage: 200,000 rows go to disk, not the heap', { timeout: 180_000 }, async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const dir = journalDir();
    const project = freshProject();
    const link = await db().interruptible({ startDown: true });
    const ledger = createLedger({ store: link.store, journalDir: dir, retry: { baseMs: 50, capMs: 200 }, logger: capturingLogger().logger });
    const total = 200_000;
    const template = ledgerRow({ project });

    gc();
    const heapBefore = process.memoryUsage().heapUsed;
    const started = performance.now();
    for (let i = 0; i < total; i++) ledger.record({ ...template, requestId: `mem-${project}-${i}`, occurredAt: template.occurredAt + i });
    const recordMs = performance.now() - started;
    gc();
    const heapGrowth = process.memoryUsage().heapUsed - heapBefore;
    const health = ledger.health();
    console.log(
      `[ledger journal] ${backend}: ${total} rows journaled while the database was down: ${((recordMs * 1000) / total).toFixed(2)} µs/record, ` +
        `${(health.journalBytes / 2 ** 20).toFixed(1)} MiB on disk, heap growth ${(heapGrowth / 2 ** 20).toFixed(1)} MiB`,
    );
    expect(health).toMatchObject({ ready: true, pendingRows: total });
    expect(health.journalBytes).toBeGreaterThan(total * 200);
    expect(heapGrowth).toBeLessThan(16 * 2 ** 20);

    await link.up();
    const drainStart = performance.now();
    let peakHeap = 0;
    await vi.waitFor(
      () => {
        gc();
        peakHeap = Math.max(peakHeap, process.memoryUsage().heapUsed - heapBefore);
        expect(ledger.health().pendingRows).toBe(0);
      },
      { timeout: 150_000, interval: 100 },
    );
    console.log(`[ledger journal] ${backend}: drained ${total} rows in ${((performance.now() - drainStart) / 1000).toFixed(1)} s, live heap growth at most ${(peakHeap / 2 ** 20).toFixed(1)} MiB`);
    expect(peakHeap).toBeLessThan(32 * 2 ** 20);
    expect(await billed(db().store, project)).toEqual({ events: total, rollup: total });
    await ledger.close();
  });

  it('close() drains what it can; what it cannot stays on disk for the next start', async () => {
    const project = freshProject();
    const dirA = journalDir();
    const a = open({ journalDir: dirA, flushIntervalMs: 60_000 });
    for (let i = 0; i < 40; i++) a.record(ledgerRow({ project }));
    await a.close();
    expect(await billed(db().store, project)).toEqual({ events: 40, rollup: 40 });
    expect(() => a.record(ledgerRow({ project }))).toThrow(LedgerClosedError);
    expect(a.health()).toMatchObject({ ready: false, reason: 'ledger closed' });

    const dirB = journalDir();
    const link = await db().interruptible();
    const b = createLedger({ store: link.store, journalDir: dirB, flushIntervalMs: 60_000, closeTimeoutMs: 300, retry: FAST_RETRY, logger: capturingLogger().logger });
    await link.down();
    for (let i = 0; i < 15; i++) b.record(ledgerRow({ project }));
    const closing = performance.now();
    await b.close();
    expect(performance.now() - closing).toBeLessThan(3_000);
    expect(segments(dirB)).toHaveLength(1);
    await link.up();

    const c = open({ journalDir: dirB });
    await c.flush();
    expect(await billed(db().store, project)).toEqual({ events: 55, rollup: 55 });
    await c.close();
  });

  it('sets aside a row the database can never take, without blocking the rows around it', async () => {
    const dir = journalDir();
    const project = freshProject();
    const { logger, lines } = capturingLogger();
    const ledger = createLedger({ store: db().store, journalDir: dir, flushIntervalMs: 60_000, logger });
    for (let i = 0; i < 20; i++) ledger.record(ledgerRow({ project }));
    // Passes the journal's checks but is out of timestamptz range: only the database can refuse it.
    ledger.record(ledgerRow({ project, requestId: 'too-old', occurredAt: -8.6e15 }));
    ledger.record(ledgerRow({ project, requestId: 'bad-count', input: -1 }));
    for (let i = 0; i < 20; i++) ledger.record(ledgerRow({ project }));
    await ledger.flush();

    expect(await billed(db().store, project)).toEqual({ events: 40, rollup: 40 });
    const rejected = readFileSync(join(dir, 'rejected.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    expect(rejected).toHaveLength(2);
    expect(rejected.map((r) => (typeof r.row === 'string' ? JSON.parse(r.row).requestId : r.row.requestId)).sort()).toEqual(['bad-count', 'too-old']);
    expect(lines.filter((l) => l.level === 'error')).toHaveLength(2);
    expect(ledger.health().pendingRows).toBe(0);
    await ledger.close();
  });

  it('serves the usage report from what it recorded', async () => {
    const ledger = open({ journalDir: journalDir() });
    const project = freshProject();
    ledger.record(ledgerRow({ project, occurredAt: Date.UTC(2025, 0, 1, 9, 30), costPoints: '0.1', originalCost: '0.2' }));
    ledger.record(ledgerRow({ project, occurredAt: Date.UTC(2025, 0, 1, 9, 31), costPoints: '0.2', originalCost: '0.4' }));
    await ledger.flush();
    const report = await ledger.usageReport({ project, from: new Date(Date.UTC(2025, 0, 1)), to: new Date(Date.UTC(2025, 0, 2)) });
    expect(report.totals).toMatchObject({ request_count: 2, cost_points: '0.3', original_cost: '0.6' });
    await ledger.close();
  });
});
