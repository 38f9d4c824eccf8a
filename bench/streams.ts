// The streaming scenarios of issue 6 alone, against direct / bare / tollgate (PGlite and Postgres) in one run:
// first-byte overhead, per-chunk CPU, and N concurrent slow streams with peak RSS and drops; on request (`saturation`)
// CPU per stream at saturation (every event in one upstream write, 64 connections), the targets taken in turn for
// --rounds rounds of --sat-seconds each, every other round in reverse order: medians per target (same-run before/after
// with --also).
//   node bench/streams.ts [--only ttfb,chunks,concurrent,saturation] [--streams 9900] [--ttfb 400] [--targets bare,tollgate-pglite,tollgate-postgres]
//   [--node-args "--heap-prof"] (passed to both tollgates; e.g. profiles of the concurrent run)
//   [--also /path/to/other/checkout] (its tollgates too, launched the same way, named "...@before")
//   [--also-concurrent] [--rounds 3] (the other tree's tollgates in the concurrent scenario too, the targets taken in
//   turn every round, every other round in reverse order: same-run before/after of the memory per stream)
// Prints a JSON result on stdout and a summary on stderr. The full benchmark (bench/run.ts) runs the same functions.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';
import { createBenchDatabase, DEFAULT_POSTGRES_URL, postgresReachable } from './databases.ts';
import type { BenchDatabase } from './databases.ts';
import { chatBody, chatStreamEvents, concurrentStreams, saturate, streamLoad, streamOnce } from './load.ts';
import type { Target } from './load.ts';
import { cpuSeconds, memory } from './proc.ts';
import { Samples } from './stats.ts';
import { GATEWAY_NODE_OPTIONS, startBare, startTollgate, startUpstream } from './targets.ts';
import type { Running } from './targets.ts';

const { values } = parseArgs({
  options: {
    only: { type: 'string', default: 'ttfb,chunks,concurrent' },
    streams: { type: 'string', default: '' },
    ttfb: { type: 'string', default: '400' },
    targets: { type: 'string', default: 'bare,tollgate-pglite,tollgate-postgres' },
    'node-args': { type: 'string', default: '' },
    'pace-ms': { type: 'string', default: '1200' },
    'ramp-ms': { type: 'string', default: '20000' },
    also: { type: 'string', default: '' },
    'also-concurrent': { type: 'boolean', default: false },
    rounds: { type: 'string', default: '1' },
    'sat-seconds': { type: 'string', default: '3' },
  },
});
const only = new Set(values.only.split(','));
const wanted = new Set(values.targets.split(','));
const fdLimit = Number(/^Max open files\s+\d+\s+(\d+)/m.exec(readFileSync('/proc/self/limits', 'utf8'))?.[1] ?? 1024);
const streams = Number(values.streams) || Math.min(10_000, Math.floor((fdLimit - 200) / 2));
const t0 = performance.now();
const log = (msg: string) => console.error(`[streams ${((performance.now() - t0) / 1000).toFixed(0).padStart(4)}s] ${msg}`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const MB = (b: number) => (b / 1024 / 1024).toFixed(0);

const closers: (() => Promise<void>)[] = [];
const result: Record<string, unknown> = { streams, fdLimit };

async function main(): Promise<void> {
  const pgAdmin = process.env.DATABASE_URL || DEFAULT_POSTGRES_URL;
  const up = await startUpstream();
  closers.push(() => up.close());
  const targets: Running[] = [up];
  const nodeArgs = values['node-args'] ? values['node-args'].split(' ') : [];
  const gwEnv = { TOLLGATE_UPSTREAM_CONNECTIONS: String(Math.max(1024, streams)), TOLLGATE_ADMIN_PORT: 'off' };
  if (wanted.has('bare')) {
    const bare = await startBare(up.target.origin);
    closers.push(() => bare.close());
    targets.push(bare);
  }
  if (wanted.has('tollgate-pglite')) {
    const lite = await startTollgate({ name: 'tollgate-pglite', upstreamUrl: up.target.origin, env: gwEnv, nodeArgs });
    closers.push(() => lite.close());
    targets.push(lite);
  }
  if (wanted.has('tollgate-postgres') && (await postgresReachable(pgAdmin))) {
    const db: BenchDatabase = await createBenchDatabase(pgAdmin, 'streams');
    closers.push(() => db.drop());
    const pg = await startTollgate({ name: 'tollgate-postgres', upstreamUrl: up.target.origin, databaseUrl: db.url, env: gwEnv, nodeArgs });
    closers.push(() => pg.close());
    targets.push(pg);
  }
  if (values.also) {
    // Launched as this tree's tollgates are (its bin/tollgate.js, the image's node flags): only the code differs.
    const root = values.also;
    const env = { TOLLGATE_UPSTREAM_CONNECTIONS: String(Math.max(1024, streams)), TOLLGATE_ADMIN_PORT: 'off', NODE_OPTIONS: GATEWAY_NODE_OPTIONS };
    if (wanted.has('tollgate-pglite')) {
      const lite = await startTollgate({ name: 'tollgate-pglite@before', upstreamUrl: up.target.origin, env, nodeArgs, root });
      closers.push(() => lite.close());
      targets.push(lite);
    }
    if (wanted.has('tollgate-postgres') && (await postgresReachable(pgAdmin))) {
      const db: BenchDatabase = await createBenchDatabase(pgAdmin, 'streams');
      closers.push(() => db.drop());
      const pg = await startTollgate({ name: 'tollgate-postgres@before', upstreamUrl: up.target.origin, databaseUrl: db.url, env, nodeArgs, root });
      closers.push(() => pg.close());
      targets.push(pg);
    }
  }
  await sleep(1000);
  result.idleRss = Object.fromEntries(targets.map((r) => [r.target.name, memory(r.proc.pid).rss]));
  log(`idle RSS: ${targets.map((r) => `${r.target.name} ${MB(memory(r.proc.pid).rss)} MB`).join(', ')}`);

  if (only.has('ttfb')) result.ttfb = await ttfbInterleaved(targets.map((r) => r.target), Number(values.ttfb));
  if (only.has('chunks')) result.chunks = await chunks(targets.map((r) => r.target));
  if (only.has('saturation')) result.saturation = await saturation(targets.slice(1).map((r) => r.target), Number(values.rounds) || 1, Number(values['sat-seconds']));
  if (only.has('concurrent')) {
    const body = chatBody({ stream: true, words: 20, paceMs: Number(values['pace-ms']) });
    const out = [];
    // The other tree's tollgates take part in the latency scenarios only, unless asked: 10,000 streams each double the run.
    const held = targets.slice(1).filter((x) => values['also-concurrent'] || !x.target.name.endsWith('@before'));
    const rounds = Number(values.rounds) || 1;
    for (let round = 0; round < rounds; round++) {
      for (const r of round % 2 === 0 ? held : [...held].reverse()) {
        log(`${streams} concurrent slow streams: ${r.target.name}${rounds > 1 ? ` (round ${round + 1}/${rounds})` : ''}`);
        await sleep(1000);
        const baseRss = memory(r.proc.pid).rss;
        const c = await concurrentStreams(r.target, body, { count: streams, rampMs: Number(values['ramp-ms']), expectEvents: chatStreamEvents(20), baseRss });
        log(`  ${c.ok}/${c.requested} ok, ${c.failed} dropped (${c.firstError ?? 'no error'}), most open ${c.maxOpen}, RSS ${MB(baseRss)} → peak ${MB(c.peakRss)} MB, ${((c.peakRss - baseRss) / streams / 1024).toFixed(1)} KB/stream, ${c.seconds.toFixed(0)} s`);
        out.push({ ...c, round });
      }
    }
    result.concurrent = out;
  }
}

/** Sequential streams, the targets taken in turn for every sample, so machine noise lands on all of them alike. */
async function ttfbInterleaved(targets: Target[], count: number): Promise<unknown> {
  const body = chatBody({ stream: true, paceMs: 2 });
  const pools = targets.map((t) => new Pool(t.origin, { connections: 1, pipelining: 1 }));
  const samples = targets.map(() => new Samples());
  // Paired differences: the same round's direct sample is subtracted, so a slow moment counts against nobody.
  const added = targets.map(() => new Samples());
  const cpu0 = targets.map((t) => cpuSeconds(t.pid));
  let failed = 0;
  try {
    for (let i = 0; i < count + 20; i++) {
      const round: number[] = [];
      for (let k = 0; k < targets.length; k++) {
        const r = await streamOnce(pools[k], targets[k].chatPath, targets[k].headers, body, chatStreamEvents(4));
        if (!r.ok) failed++;
        round.push(r.ttfb);
      }
      if (i < 20) continue; // warm-up
      for (let k = 0; k < targets.length; k++) {
        samples[k].add(round[k]);
        added[k].add(round[k] - round[0]);
      }
    }
  } finally {
    await Promise.all(pools.map((p) => p.close()));
  }
  const out = targets.map((t, k) => ({ target: t.name, ttfb: samples[k].summary(), added: added[k].summary(), cpuPerStreamUs: ((cpuSeconds(t.pid) - cpu0[k]) / (count + 20)) * 1e6 }));
  const direct = out[0].ttfb;
  log(`TTFB (${count} interleaved, failed ${failed}):`);
  for (const o of out) {
    log(
      `  ${o.target.padEnd(18)} p50 ${o.ttfb.p50.toFixed(3)} p99 ${o.ttfb.p99.toFixed(3)} | added p50 ${(o.ttfb.p50 - direct.p50).toFixed(3)} p99 ${(o.ttfb.p99 - direct.p99).toFixed(3)} | paired added p50 ${o.added.p50.toFixed(3)} p99 ${o.added.p99.toFixed(3)} | CPU ${o.cpuPerStreamUs.toFixed(0)} µs/stream`,
    );
  }
  return { failed, targets: out };
}

async function chunks(targets: Target[]): Promise<unknown> {
  const out = [];
  for (const t of targets) {
    const short = await streamLoad(t, chatBody({ stream: true, words: 1, paceMs: 1 }), { concurrency: 32, seconds: 5, expectEvents: chatStreamEvents(1) });
    const long = await streamLoad(t, chatBody({ stream: true, words: 20, paceMs: 1 }), { concurrency: 32, seconds: 5, expectEvents: chatStreamEvents(20) });
    const perEvent = (long.cpuPerStream - short.cpuPerStream) / (chatStreamEvents(20) - chatStreamEvents(1));
    log(`per-chunk ${t.name.padEnd(18)} ${(short.cpuPerStream * 1e6).toFixed(0)} µs / 6-event, ${(long.cpuPerStream * 1e6).toFixed(0)} µs / 25-event, ${(perEvent * 1e6).toFixed(1)} µs per extra event, errors ${short.failed + long.failed}`);
    out.push({ target: t.name, short, long, cpuPerExtraEvent: perEvent });
  }
  return out;
}

async function saturation(targets: Target[], rounds: number, seconds: number): Promise<unknown> {
  const body = chatBody({ stream: true });
  const cpu = targets.map(() => [] as number[]);
  const rate = targets.map(() => [] as number[]);
  let failed = 0;
  // Warm: the first streams compile the path.
  for (const t of targets) await saturate(t, body, { connections: 64, seconds: 1 });
  for (let round = 0; round < rounds; round++) {
    const order = targets.map((_, k) => k);
    if (round % 2 === 1) order.reverse();
    for (const k of order) {
      const r = await saturate(targets[k], body, { connections: 64, seconds });
      failed += r.failed;
      cpu[k].push(r.cpuPerRequest * 1e6);
      rate[k].push(r.rps);
    }
  }
  const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const out = targets.map((t, k) => ({ target: t.name, cpuPerStreamUs: med(cpu[k]), streamsPerSecond: med(rate[k]), rounds: cpu[k].map((c) => Math.round(c)) }));
  log(`SSE saturation (${rounds} interleaved rounds of ${seconds} s, failed ${failed}):`);
  for (const o of out) log(`  ${o.target.padEnd(26)} median ${o.cpuPerStreamUs.toFixed(0)} µs/stream, ${o.streamsPerSecond.toFixed(0)} streams/s (rounds ${o.rounds.join(', ')})`);
  return { failed, targets: out };
}

try {
  await main();
  console.log(JSON.stringify(result));
} catch (err) {
  console.error(`streams bench failed: ${(err as Error).stack ?? err}`);
  process.exitCode = 1;
} finally {
  while (closers.length) await closers.pop()!().catch((err: unknown) => log(`close failed: ${(err as Error).message}`));
}
