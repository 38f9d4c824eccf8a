// What one open stream costs the gateway: heap snapshots of tollgate (Postgres; --lite: PGlite)
// idle and with N slow streams open, and RSS at both points. Compare the two snapshots in DevTools, or diff
// them by constructor to get bytes per stream.
//   node bench/stream-heap.ts [--n 2000] [--out DIR] [--no-snap] [--pace 4000] [--node-args=--trace-gc] [--root DIR]
// --root runs another checkout's gateway (before/after in one sitting).
import { readdirSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';
import { createBenchDatabase, DEFAULT_POSTGRES_URL } from './databases.ts';
import { chatBody, streamOnce } from './load.ts';
import { memory } from './proc.ts';
import { startTollgate, startUpstream } from './targets.ts';

const { values } = parseArgs({ allowNegative: true, options: { n: { type: 'string', default: '2000' }, out: { type: 'string', default: tmpdir() }, lite: { type: 'boolean', default: false }, snap: { type: 'boolean', default: true }, 'node-args': { type: 'string', default: '' }, pace: { type: 'string', default: '4000' }, root: { type: 'string' } } });
const N = Number(values.n);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const up = await startUpstream();
const db = values.lite ? undefined : await createBenchDatabase(DEFAULT_POSTGRES_URL, 'probe');
const nodeArgs = ['--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${values.out}`, ...(values['node-args'] ? values['node-args'].split(' ') : [])];
const gw = await startTollgate({ name: 'gw', root: values.root, upstreamUrl: up.target.origin, databaseUrl: db?.url, env: { TOLLGATE_UPSTREAM_CONNECTIONS: String(N + 100), TOLLGATE_ADMIN_PORT: 'off' }, nodeArgs });
const pid = gw.proc.pid;
const t = gw.target;
async function snap(label: string): Promise<void> {
  if (!values.snap) return;
  const before = new Set(readdirSync(values.out));
  process.kill(pid, 'SIGUSR2');
  for (;;) {
    await sleep(500);
    const f = readdirSync(values.out).find((x) => !before.has(x) && x.endsWith('.heapsnapshot'));
    if (!f) continue;
    const s1 = statSync(`${values.out}/${f}`).size;
    await sleep(1500);
    if (statSync(`${values.out}/${f}`).size === s1 && s1 > 0) {
      console.error(`${label}: ${f} ${(s1 / 1e6).toFixed(0)} MB`);
      return;
    }
  }
}
try {
  const warm = new Pool(t.origin, { connections: 4 });
  for (let i = 0; i < 50; i++) await streamOnce(warm, t.chatPath, t.headers, chatBody({ stream: true }));
  await warm.close();
  await sleep(2000);
  console.error(`idle rss ${(memory(pid).rss / 1048576).toFixed(1)} MB`);
  await snap('A');
  console.error(`after snapshot A rss ${(memory(pid).rss / 1048576).toFixed(1)} MB`);
  const pool = new Pool(t.origin, { connections: N, pipelining: 1, headersTimeout: 300_000, bodyTimeout: 300_000, connect: { timeout: 60_000 } });
  let opened = 0;
  const body = chatBody({ stream: true, words: 20, paceMs: Number(values.pace) });
  const all: Promise<unknown>[] = [];
  const rss0 = memory(pid).rss;
  for (let i = 0; i < N; i++) {
    all.push(streamOnce(pool, t.chatPath, t.headers, body, undefined, () => opened++));
    if (i % 100 === 99) await sleep(100);
  }
  while (opened < N) await sleep(200);
  await sleep(3000);
  const rss1 = memory(pid).rss;
  console.error(`open ${opened}: rss ${(rss1 / 1048576).toFixed(1)} MB, +${((rss1 - rss0) / N / 1024).toFixed(1)} KB/stream`);
  await snap('B');
  console.error(`peak rss ${(memory(pid).peakRss / 1048576).toFixed(1)} MB`);
  console.error(gw.proc.logs().split('\n').slice(-25).join('\n'));
  const rs = await Promise.all(all);
  console.error(`done: ok ${rs.filter((r) => (r as { ok: boolean }).ok).length}`);
  await pool.close();
} finally {
  await gw.close();
  await up.close();
  await db?.drop();
}
