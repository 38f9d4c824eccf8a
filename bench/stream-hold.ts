// RSS per held slow stream, this tree against another checkout in one run: every round starts a fresh tollgate of
// each tree (Postgres; the order flips every round), opens N streams that stay open (25 events, --pace ms apart),
// and reads the gateway's RSS once all are past their first byte, against its RSS just before. A fresh process per
// round, since RSS does not shrink back after a round: a second round on the same process would measure reuse.
//   node bench/stream-hold.ts --baseline /tmp/main-tree [--n 4000] [--rounds 3] [--pace 3000] [--settle 3000]
//   [--env K=V,K=V] [--baseline-env K=V] [--node-args '...'] (extra environment per side, node flags for this side:
//   e.g. --baseline . --node-args --single-threaded-gc weighs a flag)
import { parseArgs } from 'node:util';
import { Pool } from 'undici';
import { createBenchDatabase, DEFAULT_POSTGRES_URL } from './databases.ts';
import type { BenchDatabase } from './databases.ts';
import { chatBody, streamOnce } from './load.ts';
import { memory } from './proc.ts';
import { startTollgate, startUpstream } from './targets.ts';

const { values } = parseArgs({
  options: {
    baseline: { type: 'string' },
    n: { type: 'string', default: '4000' },
    rounds: { type: 'string', default: '3' },
    pace: { type: 'string', default: '3000' },
    settle: { type: 'string', default: '3000' },
    env: { type: 'string', default: '' },
    'baseline-env': { type: 'string', default: '' },
    'node-args': { type: 'string', default: '' },
  },
});
if (!values.baseline) throw new Error('--baseline DIR (a checkout to compare against) is required');
const N = Number(values.n);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const KB = (b: number) => (b / N / 1024).toFixed(1);
const envOf = (spec: string): Record<string, string> => Object.fromEntries(spec ? spec.split(',').map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]) : []);
const trees = [
  { name: 'this', root: undefined as string | undefined, env: envOf(values.env), nodeArgs: values['node-args'] ? values['node-args'].split(' ') : [] },
  { name: 'baseline', root: values.baseline, env: envOf(values['baseline-env']), nodeArgs: [] as string[] },
];
const results = new Map<string, number[]>(trees.map((t) => [t.name, []]));
const up = await startUpstream();
const dbs: BenchDatabase[] = [];
try {
  for (let k = 0; k < trees.length; k++) dbs.push(await createBenchDatabase(process.env.DATABASE_URL || DEFAULT_POSTGRES_URL, 'hold'));
  const body = chatBody({ stream: true, words: 20, paceMs: Number(values.pace) });
  for (let round = 0; round < Number(values.rounds); round++) {
    for (const k of round % 2 === 0 ? [0, 1] : [1, 0]) {
      const t = trees[k];
      const gw = await startTollgate({ name: t.name, root: t.root, upstreamUrl: up.target.origin, databaseUrl: dbs[k].url, env: { TOLLGATE_UPSTREAM_CONNECTIONS: String(N + 100), TOLLGATE_ADMIN_PORT: 'off', ...t.env }, nodeArgs: t.nodeArgs });
      const pool = new Pool(gw.target.origin, { connections: N, pipelining: 1, headersTimeout: 300_000, bodyTimeout: 300_000, connect: { timeout: 60_000 } });
      try {
        // Warm: the first requests compile the path; their cost is not the streams'.
        for (let i = 0; i < 50; i++) await streamOnce(pool, gw.target.chatPath, gw.target.headers, chatBody({ stream: true }));
        await sleep(1000);
        const rss0 = memory(gw.proc.pid).rss;
        let opened = 0;
        const all: Promise<unknown>[] = [];
        for (let i = 0; i < N; i++) {
          all.push(streamOnce(pool, gw.target.chatPath, gw.target.headers, body, undefined, () => opened++));
          if (i % 100 === 99) await sleep(100);
        }
        const t0 = performance.now();
        while (opened < N && performance.now() - t0 < 60_000) await sleep(200);
        await sleep(Number(values.settle));
        const grown = memory(gw.proc.pid).rss - rss0;
        results.get(t.name)!.push(grown);
        console.error(`round ${round + 1} ${t.name.padEnd(8)} open ${opened}/${N}: RSS +${(grown / 1048576).toFixed(1)} MB, ${KB(grown)} KB/stream`);
        void Promise.allSettled(all);
      } finally {
        process.kill(gw.proc.pid, 'SIGKILL');
        await gw.close();
        await pool.destroy();
      }
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const out = trees.map((t) => ({ tree: t.name, kbPerStream: results.get(t.name)!.map((g) => Number(KB(g))), medianKbPerStream: Number(KB(median(results.get(t.name)!))) }));
  for (const o of out) console.error(`${o.tree.padEnd(8)} median ${o.medianKbPerStream} KB/stream (rounds ${o.kbPerStream.join(', ')})`);
  console.log(JSON.stringify({ n: N, rounds: Number(values.rounds), results: out }));
} finally {
  await up.close();
  for (const db of dbs) await db.drop();
}
