// Event-loop delay on the thread that serves requests while the ledger writer commits batches into PGlite: what the
// latency tail at a steady rate sees of the database work. Also PGlite's CPU per batch (its worker thread, or the child
// process older checkouts run it in: what competes with requests for the cores), the rest of this process's CPU per
// batch (building and handing over the batch) and, for a child process, its RSS at the end.
//   node bench/pglite-loop-delay.ts [--seconds 8] [--rows 250] [--gap 20] [--root DIR]
// --rows: rows per batch (1,000 is one seal interval at 1,000 req/s); --gap: ms between batches; --root: another
// checkout to measure instead (run it alternately with this one for a before/after in one sitting).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import type * as Migrate from '../gateway/store/migrate.ts';
import type * as PgliteStore from '../gateway/store/pglite-store.ts';
import type * as Writer from '../gateway/ledger/writer.ts';
import { benchRow } from './ledger-throughput.ts';
import { readdirSync, readFileSync } from 'node:fs';
import { cpuSecondsFine, memory, processTree } from './proc.ts';

const { values } = parseArgs({ options: { seconds: { type: 'string', default: '8' }, rows: { type: 'string', default: '250' }, gap: { type: 'string', default: '20' }, root: { type: 'string', default: '.' } } });
const root = resolve(values.root);
const { openPgliteStore } = (await import(join(root, 'gateway/store/pglite-store.ts'))) as typeof PgliteStore;
const { migrate } = (await import(join(root, 'gateway/store/migrate.ts'))) as typeof Migrate;
const { writeUsageBatch } = (await import(join(root, 'gateway/ledger/writer.ts'))) as typeof Writer;

const dir = mkdtempSync(join(tmpdir(), 'tollgate-pglite-delay-'));
const store = await openPgliteStore(dir);
try {
  await migrate(store);
  // PGlite's CPU: its child process, or else its worker thread in this one (Node names it WorkerThread).
  const child = processTree(process.pid).find((p) => p !== process.pid);
  const thread = readdirSync('/proc/self/task').find((t) => readFileSync(`/proc/self/task/${t}/comm`, 'utf8').trim() === 'WorkerThread');
  const threadCpu = () => (thread === undefined ? 0 : Number(readFileSync(`/proc/self/task/${thread}/schedstat`, 'utf8').split(' ', 1)[0]) / 1e9);
  const childCpu = () => (child === undefined ? threadCpu() : cpuSecondsFine(child));
  const rows = Number(values.rows);
  const h = monitorEventLoopDelay({ resolution: 1 });
  h.enable();
  let batches = 0;
  const cpu0 = childCpu();
  const own0 = process.cpuUsage();
  const t0 = performance.now();
  while (performance.now() - t0 < Number(values.seconds) * 1000) {
    await writeUsageBatch(store, Array.from({ length: rows }, (_, i) => benchRow(`d${batches}`, i, Date.now())));
    batches++;
    // Room between batches, as a writer fed by a steady request rate has.
    await new Promise((r) => setTimeout(r, Number(values.gap)));
  }
  h.disable();
  const perBatch = ((childCpu() - cpu0) * 1000) / batches;
  const own = process.cpuUsage(own0);
  // process.cpuUsage counts every thread: take PGlite's worker out.
  const ownPerBatch = ((own.user + own.system) / 1000 - (child === undefined ? (childCpu() - cpu0) * 1000 : 0)) / batches;
  const rss = child === undefined ? 0 : memory(child).rss / 2 ** 20;
  const ms = (ns: number) => (ns / 1e6).toFixed(1);
  console.log(
    `${root}: ${batches} batches of ${rows} rows; event-loop delay p50 ${ms(h.percentile(50))} ms, p99 ${ms(h.percentile(99))} ms, max ${ms(h.max)} ms; ` +
      `PGlite ${child === undefined ? 'thread' : 'process'} ${perBatch.toFixed(1)} ms CPU a batch${child === undefined ? '' : `, RSS ${rss.toFixed(0)} MB`}; the rest of this process ${ownPerBatch.toFixed(1)} ms CPU a batch`,
  );
} finally {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
}
