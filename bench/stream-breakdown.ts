// Where the memory of held slow streams goes: RSS growth per stream split into V8's live heap (after a full GC, by
// space), ArrayBuffers, malloc's main arena and the rest. One fresh tollgate (Postgres; --lite: PGlite), N streams
// held open (25 events, --pace ms apart), probed idle and once all are open (bench/stream-breakdown-probe.ts).
//   node bench/stream-breakdown.ts [--n 4000] [--pace 3000] [--lite] [--root DIR] [--env K=V,K=V]
// --root runs another checkout's gateway; --env weighs an environment setting (e.g. MALLOC_ARENA_MAX=2).
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';
import { createBenchDatabase, DEFAULT_POSTGRES_URL } from './databases.ts';
import { chatBody, streamOnce } from './load.ts';
import { memory } from './proc.ts';
import { GATEWAY_NODE_OPTIONS, startTollgate, startUpstream } from './targets.ts';

const { values } = parseArgs({ options: { n: { type: 'string', default: '4000' }, pace: { type: 'string', default: '3000' }, lite: { type: 'boolean', default: false }, root: { type: 'string' }, env: { type: 'string', default: '' } } });
const N = Number(values.n);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const dir = mkdtempSync(join(tmpdir(), 'stream-breakdown-'));
const out = join(dir, 'probe.jsonl');
const env = Object.fromEntries(values.env ? values.env.split(',').map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]) : []);
const up = await startUpstream();
const db = values.lite ? undefined : await createBenchDatabase(process.env.DATABASE_URL || DEFAULT_POSTGRES_URL, 'breakdown');
const gw = await startTollgate({
  name: 'gw',
  root: values.root,
  upstreamUrl: up.target.origin,
  databaseUrl: db?.url,
  env: { TOLLGATE_UPSTREAM_CONNECTIONS: String(N + 100), TOLLGATE_ADMIN_PORT: 'off', NODE_OPTIONS: `${GATEWAY_NODE_OPTIONS} --import ${resolve('bench/stream-breakdown-probe.ts')}`, STREAM_PROBE_OUT: out, ...env },
});
const pid = gw.proc.pid;
const t = gw.target;
let lines = 0;
interface Probe {
  mallocMain: number;
  anonymous: number;
  heapUsedBeforeGc: number;
  memory: NodeJS.MemoryUsage;
  heapPhysical: number;
  spaces: Record<string, { used: number; physical: number }>;
  rss: number;
}
async function probe(): Promise<Probe> {
  process.kill(pid, 'SIGUSR2');
  for (;;) {
    await sleep(300);
    let all: string[];
    try {
      all = readFileSync(out, 'utf8').trim().split('\n');
    } catch {
      continue; // not written yet
    }
    if (all.length > lines) {
      lines = all.length;
      return { ...(JSON.parse(all.at(-1)!) as Probe), rss: memory(pid).rss };
    }
  }
}
try {
  const warm = new Pool(t.origin, { connections: 4 });
  for (let i = 0; i < 50; i++) await streamOnce(warm, t.chatPath, t.headers, chatBody({ stream: true }));
  await warm.close();
  await sleep(1000);
  const a = await probe();
  const pool = new Pool(t.origin, { connections: N, pipelining: 1, headersTimeout: 300_000, bodyTimeout: 300_000, connect: { timeout: 60_000 } });
  let opened = 0;
  const body = chatBody({ stream: true, words: 20, paceMs: Number(values.pace) });
  const all: Promise<unknown>[] = [];
  for (let i = 0; i < N; i++) {
    all.push(streamOnce(pool, t.chatPath, t.headers, body, undefined, () => opened++));
    if (i % 100 === 99) await sleep(100);
  }
  while (opened < N) await sleep(200);
  await sleep(3000);
  const b = await probe();
  const kb = (x: number) => `${(x / N / 1024).toFixed(2)} KB`;
  const rows: [string, number][] = [
    ['RSS', b.rss - a.rss],
    ['V8 heap used, before the GC', b.heapUsedBeforeGc - a.heapUsedBeforeGc],
    ['V8 heap used, live (after a full GC)', b.memory.heapUsed - a.memory.heapUsed],
    ['V8 heap physical', b.heapPhysical - a.heapPhysical],
    ['ArrayBuffers', b.memory.arrayBuffers - a.memory.arrayBuffers],
    ['malloc main arena ([heap])', b.mallocMain - a.mallocMain],
    ['anonymous mappings (V8 pages, other arenas)', b.anonymous - a.anonymous],
  ];
  console.error(`${opened} streams open, idle RSS ${(a.rss / 1048576).toFixed(0)} MB; per stream:`);
  for (const [k, v] of rows) console.error(`  ${k.padEnd(46)} ${kb(v).padStart(10)}`);
  for (const [s, v] of Object.entries(b.spaces)) if (v.used !== a.spaces[s].used) console.error(`  heap space ${s.padEnd(35)} ${kb(v.used - a.spaces[s].used).padStart(10)}`);
  console.log(JSON.stringify({ n: N, opened, perStreamBytes: Object.fromEntries(rows.map(([k, v]) => [k, Math.round(v / N)])) }));
  await pool.destroy();
} finally {
  process.kill(pid, 'SIGKILL');
  await gw.close();
  await up.close();
  await db?.drop();
  rmSync(dir, { recursive: true, force: true });
}
