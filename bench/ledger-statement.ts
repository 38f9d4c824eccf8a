// The ledger statement alone (writeUsageBatch), this checkout against another in ONE run: each round writes the
// same number of fresh rows through each tree's writer into its own store, interleaved, and reads the CPU it took in
// this process (the writer's share of the gateway) and in the database (Postgres: the backends of its bench database;
// PGlite: its worker thread, or its child process in older trees), per row, from the scheduler's nanosecond clock.
//   node bench/ledger-statement.ts [--baseline DIR] [--store postgres|pglite|both] [--rows 2000] [--batches 10]
//     [--rounds 5] [--replay] [--one-bucket]
// --rows: rows per batch (the Postgres writer seals every 250 ms, so 2,000 is ~8,000 rows/s); --replay: every batch
// is written twice, and the second write (all replays) is what is measured; --one-bucket: every row of one project, key
// and model (as one client's traffic, e.g. bench/cpu-per-request.ts), where the default spreads rows over 50
// projects and keys and 4 models (100 rollup buckets a batch).
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import type { LedgerRow } from '../gateway/ledger/row.ts';
import type { Store } from '../gateway/store/store.ts';
import type * as OpenModule from '../gateway/store/open.ts';
import type * as WriterModule from '../gateway/ledger/writer.ts';
import { createBenchDatabase, DEFAULT_POSTGRES_URL } from './databases.ts';
import type { BenchDatabase } from './databases.ts';
import { benchRow } from './ledger-throughput.ts';
import { cpuSecondsFine } from './proc.ts';
import { median } from './stats.ts';

const { values } = parseArgs({
  options: {
    baseline: { type: 'string' },
    store: { type: 'string', default: 'both' },
    rows: { type: 'string', default: '2000' },
    batches: { type: 'string', default: '10' },
    rounds: { type: 'string', default: '5' },
    replay: { type: 'boolean', default: false },
    'one-bucket': { type: 'boolean', default: false },
  },
});
const rowsPerBatch = Number(values.rows);
const batches = Number(values.batches);
const rounds = Number(values.rounds);

type Write = (q: Store, rows: readonly LedgerRow[]) => Promise<number>;
interface Side {
  name: string;
  store: Store;
  write: Write;
  /** CPU seconds so far of what serves this store's statements outside this process. */
  dbCpu(): Promise<number>;
  /** The database's CPU is this process's too (a PGlite worker thread): taken out of the writer's own. */
  inProcess?: boolean;
  cleanup(): Promise<void>;
  own: number[];
  db: number[];
  wall: number[];
}

function pgliteChildren(): Set<number> {
  const out = new Set<number>();
  for (const tid of readdirSync('/proc/self/task')) {
    for (const p of readFileSync(`/proc/self/task/${tid}/children`, 'utf8').split(' ').filter(Boolean)) {
      if (readFileSync(`/proc/${p}/cmdline`, 'utf8').includes('pglite-process')) out.add(Number(p));
    }
  }
  return out;
}

/** Niceness of a thread of this process (field 19 of its stat). */
function threadNice(tid: string): number {
  const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
}

/** Threads of this process running below its main thread's priority: a PGlite worker renices its own thread. */
function nicerThreads(): Set<string> {
  const main = threadNice(String(process.pid));
  const out = new Set<string>();
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      if (threadNice(tid) > main) out.add(tid);
    } catch {
      // ended meanwhile
    }
  }
  return out;
}

const threadCpu = (tid: string): number => {
  try {
    return Number(readFileSync(`/proc/self/task/${tid}/schedstat`, 'utf8').split(' ', 1)[0]) / 1e9;
  } catch {
    return 0;
  }
};

async function openSide(root: string, label: string, kind: 'postgres' | 'pglite'): Promise<Side> {
  const { openStore } = (await import(join(root, 'gateway/store/open.ts'))) as typeof OpenModule;
  const { writeUsageBatch } = (await import(join(root, 'gateway/ledger/writer.ts'))) as typeof WriterModule;
  const base = { name: `${kind}-${label}`, write: writeUsageBatch, own: [], db: [], wall: [] };
  if (kind === 'postgres') {
    const db: BenchDatabase = await createBenchDatabase(DEFAULT_POSTGRES_URL, 'stmt');
    const store = await openStore({ databaseUrl: db.url });
    return {
      ...base,
      store,
      async dbCpu() {
        let s = 0;
        for (const pid of (await db.backendCpu()).keys()) s += cpuSecondsFine(pid);
        return s;
      },
      async cleanup() {
        await store.close();
        await db.drop();
      },
    };
  }
  const dir = mkdtempSync(join(tmpdir(), 'ledger-stmt-'));
  const before = pgliteChildren();
  const threadsBefore = nicerThreads();
  const store = await openStore({ dataDir: dir });
  // Older trees run PGlite in a child process, this one in a worker thread of this process.
  const pid = [...pgliteChildren()].find((p) => !before.has(p));
  const tids = [...nicerThreads()].filter((t) => !threadsBefore.has(t));
  if (pid === undefined && tids.length === 0) throw new Error('PGlite child process or worker thread not found');
  return {
    ...base,
    store,
    dbCpu: async () => (pid !== undefined ? cpuSecondsFine(pid) : tids.reduce((sum, t) => sum + threadCpu(t), 0)),
    inProcess: pid === undefined,
    async cleanup() {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const kinds = values.store === 'both' ? (['postgres', 'pglite'] as const) : [values.store as 'postgres' | 'pglite'];
const roots: [string, string][] = [['head', resolve('.')]];
if (values.baseline) roots.push(['baseline', resolve(values.baseline)]);
const sides: Side[] = [];
try {
  for (const kind of kinds) for (const [label, root] of roots) sides.push(await openSide(root, label, kind));
  const now = Date.now();
  let serial = 0;
  const batchRows = () => {
    const prefix = `s${serial++}-${now}`;
    // Spread over the last minutes, as a sealed segment is: every row in one day, a handful of hours.
    return Array.from({ length: rowsPerBatch }, (_, i) => {
      const row = benchRow(prefix, i, now - ((i * 37) % 600_000));
      return values['one-bucket'] ? { ...row, organization: 'org-1', project: 'proj-1', apiKeyId: 'key-1', clientModel: 'gpt-4o', modelId: 'gpt-4o', upstreamModel: 'gpt-4o' } : row;
    });
  };
  // One warm-up batch each (statement plans, partition lookup, JIT).
  for (const s of sides) await s.write(s.store, batchRows());
  for (let r = 0; r < rounds; r++) {
    for (const s of r % 2 === 0 ? sides : [...sides].reverse()) {
      const work = Array.from({ length: batches }, batchRows);
      if (values.replay) for (const b of work) await s.write(s.store, b);
      const db0 = await s.dbCpu();
      const own0 = process.cpuUsage();
      const t0 = performance.now();
      for (const b of work) {
        const n = await s.write(s.store, b);
        if (n !== (values.replay ? 0 : b.length)) throw new Error(`${s.name}: ${n} rows inserted of ${b.length}`);
      }
      const wall = performance.now() - t0;
      const own = process.cpuUsage(own0);
      const db = (await s.dbCpu()) - db0;
      const n = batches * rowsPerBatch;
      s.own.push((own.user + own.system - (s.inProcess ? db * 1e6 : 0)) / n);
      s.db.push((db * 1e6) / n);
      s.wall.push((wall * 1000) / n);
    }
  }
  const out = sides.map((s) => ({ side: s.name, ownMicrosPerRow: median(s.own), dbMicrosPerRow: median(s.db), wallMicrosPerRow: median(s.wall), rowsPerSecond: Math.round(1e6 / median(s.wall)) }));
  console.table(out);
  for (const kind of kinds) {
    const [h, b] = [out.find((o) => o.side === `${kind}-head`)!, out.find((o) => o.side === `${kind}-baseline`)];
    if (b) console.log(`${kind}: db CPU/row head/baseline ${(h.dbMicrosPerRow / b.dbMicrosPerRow).toFixed(2)}x, own CPU/row ${(h.ownMicrosPerRow / b.ownMicrosPerRow).toFixed(2)}x, wall/row ${(h.wallMicrosPerRow / b.wallMicrosPerRow).toFixed(2)}x`);
  }
} finally {
  for (const s of sides) await s.cleanup().catch((e: unknown) => console.error(e));
}
