// Instructions per non-streaming chat request, counted by valgrind's callgrind: unlike CPU time this does not move
// with whatever else the shared machine runs, so two versions can be compared on a busy machine. Each server runs
// under callgrind with counting off; after a warm-up (so V8 has compiled the hot path) counting is switched on for a
// fixed number of requests, and the total over all its threads (main, libuv pool, V8's GC helpers) is divided by
// them. Slow (valgrind runs Node ~50× slower): a few thousand requests per target. Database backends are not counted.
// Under valgrind V8's time-driven heap tasks run major GCs that the same requests do not cause natively (none in
// 30,000 requests at full speed), and the optimising compiler may still be at work: the figures are split into
// major GC, other GC, compiler and the rest, and the rest is what to compare.
//   node bench/instructions-per-request.ts [--requests 2000] [--warmup 3000] [--only bare-buffered,tollgate-postgres]
//     [--baseline DIR]   (another checkout of tollgate, e.g. `git archive` of an older commit, as tollgate-*-baseline)
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createBenchDatabase, DEFAULT_POSTGRES_URL } from './databases.ts';
import type { BenchDatabase } from './databases.ts';
import { chatBody, closedLoop } from './load.ts';
import type { Target } from './load.ts';
import { rest, split } from './callgrind-split.ts';
import type { Count } from './callgrind-split.ts';
import { startBare, startTollgate, startUpstream } from './targets.ts';
import type { Running } from './targets.ts';

const { values } = parseArgs({
  options: {
    requests: { type: 'string', default: '2000' },
    warmup: { type: 'string', default: '3000' },
    concurrency: { type: 'string', default: '16' },
    only: { type: 'string', default: 'bare-buffered,tollgate-postgres' },
    baseline: { type: 'string' },
  },
});
const requests = Number(values.requests);
const concurrency = Number(values.concurrency);

async function send(t: Target, n: number): Promise<void> {
  const failed = await closedLoop(t, chatBody(), n, concurrency);
  if (failed > 0) throw new Error(`${t.name}: ${failed} of ${n} requests failed`);
}

const outDir = mkdtempSync(join(tmpdir(), 'tollgate-callgrind-'));
const callgrind = (name: string) => ['valgrind', '--tool=callgrind', '--instr-atstart=no', `--callgrind-out-file=${join(outDir, name)}.%p`, '--dump-instr=no'];

async function measure(start: () => Promise<Running>): Promise<Count> {
  const r = await start();
  try {
    await send(r.target, Number(values.warmup));
    execFileSync('callgrind_control', ['-i', 'on', String(r.target.pid)], { stdio: 'ignore' });
    await send(r.target, requests);
    execFileSync('callgrind_control', ['-i', 'off', String(r.target.pid)], { stdio: 'ignore' });
    // Dumped now: a server slow to stop under valgrind may be killed before its exit dump.
    execFileSync('callgrind_control', ['-d', String(r.target.pid)], { stdio: 'ignore' });
  } finally {
    await r.close();
  }
  // Counting was on only for the measured requests, so the largest total over this server's dumps is theirs.
  let best = 0;
  let bestFile = '';
  for (const f of readdirSync(outDir)) {
    if (!f.startsWith(`${r.target.name}.${r.target.pid}`)) continue;
    const total = /^totals: (\d+)/m.exec(readFileSync(join(outDir, f), 'utf8'));
    if (total && Number(total[1]) > best) {
      best = Number(total[1]);
      bestFile = f;
    }
  }
  if (best === 0) throw new Error(`${r.target.name}: no callgrind total`);
  const parts = split(join(outDir, bestFile));
  return { total: best / requests, majorGc: parts.majorGc / requests, otherGc: parts.otherGc / requests, compiler: parts.compiler / requests };
}

const up = await startUpstream();
const dbs: BenchDatabase[] = [];
const results: ({ name: string } & Count)[] = [];
try {
  const wanted = values.only.split(',');
  const slow = { timeoutMs: 1_200_000 };
  const plans: { name: string; start: () => Promise<Running> }[] = [];
  if (wanted.includes('bare')) plans.push({ name: 'bare', start: () => startBare(up.target.origin, { wrapper: callgrind('bare'), ...slow }) });
  if (wanted.includes('bare-buffered')) plans.push({ name: 'bare-buffered', start: () => startBare(up.target.origin, { buffered: true, wrapper: callgrind('bare-buffered'), ...slow }) });
  for (const [suffix, root] of [['', undefined], ...(values.baseline ? [['-baseline', values.baseline]] : [])] as [string, string | undefined][]) {
    if (wanted.includes('tollgate-postgres')) {
      plans.push({
        name: `tollgate-postgres${suffix}`,
        start: async () => {
          const db = await createBenchDatabase(DEFAULT_POSTGRES_URL, 'instr');
          dbs.push(db);
          return startTollgate({ name: `tollgate-postgres${suffix}`, upstreamUrl: up.target.origin, databaseUrl: db.url, root, wrapper: callgrind(`tollgate-postgres${suffix}`) });
        },
      });
    }
    if (wanted.includes('tollgate-pglite')) plans.push({ name: `tollgate-pglite${suffix}`, start: () => startTollgate({ name: `tollgate-pglite${suffix}`, upstreamUrl: up.target.origin, root, wrapper: callgrind(`tollgate-pglite${suffix}`) }) });
  }
  for (const p of plans) {
    const c = await measure(p.start);
    results.push({ name: p.name, ...c });
    console.error(`${p.name}: ${(c.total / 1000).toFixed(0)}k instructions/request`);
  }
  const floor = Math.min(...results.filter((r) => r.name.startsWith('bare')).map(rest));
  const k = (n: number) => `${(n / 1000).toFixed(0)}k`.padStart(8);
  console.log(`instructions per request (callgrind, ${requests} requests after ${values.warmup} warm-up, gateway process only)`);
  console.log(`${'target'.padEnd(28)}    total major GC other GC compiler     rest`);
  for (const r of results) console.log(`${r.name.padEnd(28)} ${k(r.total)} ${k(r.majorGc)} ${k(r.otherGc)} ${k(r.compiler)} ${k(rest(r))}${Number.isFinite(floor) ? `  rest ${(rest(r) / floor).toFixed(2)}× best floor` : ''}`);
} finally {
  await up.close();
  for (const db of dbs) await db.drop();
  rmSync(outDir, { recursive: true, force: true });
}
