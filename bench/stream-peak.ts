// When the peak RSS of the concurrent-slow-streams scenario happens: one fresh tollgate (Postgres), N streams opened
// evenly over --ramp ms (25 events, --pace ms apart, as bench/streams.ts runs them), the gateway's RSS sampled every
// 100 ms with how many streams are open and how many have ended. The growth while all are open is what held streams
// cost; what comes after it is what ending (billing) them costs before the heap's next full collection.
//   node bench/stream-peak.ts [--n 6000] [--pace 1200] [--ramp 20000] [--root DIR]
import { parseArgs } from 'node:util';
import { Pool } from 'undici';
import { createBenchDatabase, DEFAULT_POSTGRES_URL } from './databases.ts';
import { chatBody, streamOnce } from './load.ts';
import { memory } from './proc.ts';
import { startTollgate, startUpstream } from './targets.ts';

const { values } = parseArgs({ options: { n: { type: 'string', default: '6000' }, pace: { type: 'string', default: '1200' }, ramp: { type: 'string', default: '20000' }, root: { type: 'string' } } });
const N = Number(values.n);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const MB = (b: number) => (b / 1048576).toFixed(0);
const up = await startUpstream();
const db = await createBenchDatabase(process.env.DATABASE_URL || DEFAULT_POSTGRES_URL, 'peak');
const gw = await startTollgate({ name: 'gw', root: values.root, upstreamUrl: up.target.origin, databaseUrl: db.url, env: { TOLLGATE_UPSTREAM_CONNECTIONS: String(N + 100), TOLLGATE_ADMIN_PORT: 'off' } });
const pid = gw.proc.pid;
const t = gw.target;
try {
  const warm = new Pool(t.origin, { connections: 4 });
  for (let i = 0; i < 50; i++) await streamOnce(warm, t.chatPath, t.headers, chatBody({ stream: true }));
  await warm.close();
  await sleep(1000);
  const base = memory(pid).rss;
  const pool = new Pool(t.origin, { connections: N, pipelining: 1, headersTimeout: 300_000, bodyTimeout: 300_000, connect: { timeout: 60_000 } });
  let opened = 0;
  let ended = 0;
  let allOpen = 0;
  let peak = 0;
  let peakAt = '';
  const t0 = performance.now();
  const seconds = () => ((performance.now() - t0) / 1000).toFixed(1);
  const sampler = setInterval(() => {
    const grown = memory(pid).rss - base;
    if (opened - ended === N) allOpen = Math.max(allOpen, grown);
    if (grown > peak) [peak, peakAt] = [grown, `${seconds()} s, ${opened - ended} open, ${ended} ended`];
  }, 100);
  const progress = setInterval(() => console.error(`${seconds()} s: ${opened - ended} open, ${ended} ended, RSS +${MB(memory(pid).rss - base)} MB`), 4000);
  const body = chatBody({ stream: true, words: 20, paceMs: Number(values.pace) });
  const all: Promise<unknown>[] = [];
  for (let i = 0; i < N; i++) {
    all.push(streamOnce(pool, t.chatPath, t.headers, body, undefined, () => opened++).then(() => ended++));
    if (i % 50 === 49) await sleep((Number(values.ramp) / N) * 50);
  }
  await Promise.all(all);
  clearInterval(sampler);
  clearInterval(progress);
  const kb = (b: number) => (b / N / 1024).toFixed(1);
  console.error(`all ${N} open: RSS +${MB(allOpen)} MB (${kb(allOpen)} KB/stream); peak +${MB(peak)} MB (${kb(peak)} KB/stream) at ${peakAt}`);
  console.log(JSON.stringify({ n: N, allOpenBytes: allOpen, peakBytes: peak, peakAt }));
  await pool.close();
} finally {
  await gw.close();
  await up.close();
  await db.drop();
}
