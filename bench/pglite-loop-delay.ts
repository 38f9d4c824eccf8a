// Event-loop delay on the thread that serves requests while the ledger writer commits batches into PGlite: what the
// latency tail at a steady rate sees of the database work.
//   node bench/pglite-loop-delay.ts [--seconds 8] [--rows 250] [--root DIR]
// --rows: rows per batch (250 is one flush interval at 1,000 req/s); --root: another checkout to measure instead.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import type * as Migrate from '../gateway/store/migrate.ts';
import type * as PgliteStore from '../gateway/store/pglite-store.ts';
import type * as Writer from '../gateway/ledger/writer.ts';
import { benchRow } from './ledger-throughput.ts';

const { values } = parseArgs({ options: { seconds: { type: 'string', default: '8' }, rows: { type: 'string', default: '250' }, root: { type: 'string', default: '.' } } });
const root = resolve(values.root);
const { openPgliteStore } = (await import(join(root, 'gateway/store/pglite-store.ts'))) as typeof PgliteStore;
const { migrate } = (await import(join(root, 'gateway/store/migrate.ts'))) as typeof Migrate;
const { writeUsageBatch } = (await import(join(root, 'gateway/ledger/writer.ts'))) as typeof Writer;

const dir = mkdtempSync(join(tmpdir(), 'tollgate-pglite-delay-'));
const store = await openPgliteStore(dir);
try {
  await migrate(store);
  const rows = Number(values.rows);
  const h = monitorEventLoopDelay({ resolution: 1 });
  h.enable();
  let batches = 0;
  const t0 = performance.now();
  while (performance.now() - t0 < Number(values.seconds) * 1000) {
    await writeUsageBatch(store, Array.from({ length: rows }, (_, i) => benchRow(`d${batches}`, i, Date.now())));
    batches++;
    // Room between batches, as a writer fed by a steady request rate has.
    await new Promise((r) => setTimeout(r, 20));
  }
  h.disable();
  const ms = (ns: number) => (ns / 1e6).toFixed(1);
  console.log(`${root}: ${batches} batches of ${rows} rows; event-loop delay p50 ${ms(h.percentile(50))} ms, p99 ${ms(h.percentile(99))} ms, max ${ms(h.max)} ms`);
} finally {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
}
