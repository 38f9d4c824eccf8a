// Instructions per governed request of the Redis backend in this process's JavaScript, which a busy machine does not
// move the way it moves CPU time: the governor and Redis backend of this checkout and of `--baseline DIR`, each in a
// child under valgrind callgrind (counting off), with the 13-rule key of bench/limits-redis-backend.ts against the
// machine's Redis (own key prefix, removed after). Each child warms up with one closed loop; then, round by round
// (every other round in reverse order), counting is switched on for one closed loop of `--requests` requests at
// `--concurrency` (each admitted, charged one turn later and settled) and the dump read. Reported per request: all
// instructions, and those outside GC and the optimising compiler (callgrind-split.ts), which compare; the kernel's
// time in the socket's system calls is not in either.
//   node bench/limits-redis-instructions.ts --baseline DIR [--requests 3000] [--rounds 8] [--concurrency 8]
import { execFileSync, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import type * as GovernorModule from '../gateway/governance/governor.ts';
import type { Ticket } from '../gateway/governance/governor.ts';
import type * as RedisBackendModule from '../gateway/governance/redis-backend.ts';
import { split } from './callgrind-split.ts';
import { HEADER_SINK, SETTLED_ROW, thirteenRuleCall } from './limits-redis-fixture.ts';
import { deleteRedisPrefix } from './redis-keys.ts';
import { median, quantile } from './stats.ts';

const { values } = parseArgs({
  options: {
    requests: { type: 'string', default: '3000' },
    rounds: { type: 'string', default: '8' },
    concurrency: { type: 'string', default: '8' },
    redis: { type: 'string', default: 'redis://127.0.0.1:6379' },
    'redis-prefix': { type: 'string', default: 'tollgate-bench:' },
    baseline: { type: 'string' },
    // Internal: run as a child for the checkout at this directory.
    child: { type: 'string' },
  },
});
const requests = Number(values.requests);
const concurrency = Number(values.concurrency);

/** The child: a closed loop of `requests` per "go" line on stdin, "done" on stdout after each. */
async function child(dir: string): Promise<void> {
  const { Governor } = (await import(resolve(dir, 'gateway/governance/governor.ts'))) as typeof GovernorModule;
  const { RedisBackend } = (await import(resolve(dir, 'gateway/governance/redis-backend.ts'))) as typeof RedisBackendModule;
  const call = thirteenRuleCall();
  const row = SETTLED_ROW;
  const reply = HEADER_SINK;
  const prefix = `${values['redis-prefix']}${randomUUID()}:`;
  // Under valgrind an answer takes far longer than the default timeout: no degraded mode in the counted loops.
  const backend = new RedisBackend({ url: values.redis, prefix, commandTimeoutMs: 60_000 });
  await backend.ready(60_000);
  const gov = new Governor({ backend });
  const turn = () => new Promise<void>((r) => setImmediate(r));
  const loop = async () => {
    let left = requests;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (left-- > 0) {
          const t = (await gov.admit(call, reply)) as Ticket;
          await turn();
          t.charged(row);
          t.finish();
        }
      }),
    );
    await backend.drain();
  };
  await loop();
  process.stdout.write('ready\n');
  for await (const line of createInterface({ input: process.stdin })) {
    if (line !== 'go') break;
    await loop();
    process.stdout.write('done\n');
  }
  await gov.close();
  await deleteRedisPrefix(values.redis, prefix);
  process.exit(0);
}

async function parent(): Promise<void> {
  if (!values.baseline) throw new Error('--baseline DIR is required');
  const out = mkdtempSync(join(tmpdir(), 'tollgate-redis-callgrind-'));
  const start = (name: string, dir: string) => {
    const args = ['--tool=callgrind', '--instr-atstart=no', `--callgrind-out-file=${join(out, name)}.%p`, '--dump-instr=no', process.execPath, import.meta.filename, '--child', dir];
    for (const o of ['requests', 'concurrency', 'redis', 'redis-prefix'] as const) args.push(`--${o}`, String(values[o]));
    const p = spawn('valgrind', args, { stdio: ['pipe', 'pipe', 'ignore'] });
    const lines = createInterface({ input: p.stdout })[Symbol.asyncIterator]();
    return { name, p, next: async () => (await lines.next()).value as string | undefined };
  };
  const kids = [start('current', '.'), start('baseline', values.baseline)];
  const rest: Record<string, number[]> = { current: [], baseline: [] };
  const total: Record<string, number[]> = { current: [], baseline: [] };
  try {
    for (const k of kids) if ((await k.next()) !== 'ready') throw new Error(`${k.name}: child did not start`);
    for (let round = 0; round < Number(values.rounds); round++) {
      for (const k of round % 2 === 0 ? kids : [...kids].reverse()) {
        const before = new Set(readdirSync(out));
        execFileSync('callgrind_control', ['-i', 'on', String(k.p.pid)], { stdio: 'ignore' });
        k.p.stdin.write('go\n');
        if ((await k.next()) !== 'done') throw new Error(`${k.name}: loop did not finish`);
        execFileSync('callgrind_control', ['-i', 'off', String(k.p.pid)], { stdio: 'ignore' });
        // A dump zeroes the counters: each dump holds one loop.
        execFileSync('callgrind_control', ['-d', String(k.p.pid)], { stdio: 'ignore' });
        const file = readdirSync(out).find((f) => !before.has(f) && f.startsWith(k.name));
        if (file === undefined) throw new Error(`${k.name}: no callgrind dump`);
        const all = Number(/^totals: (\d+)/m.exec(readFileSync(join(out, file), 'utf8'))?.[1] ?? NaN);
        const parts = split(join(out, file));
        total[k.name].push(all / requests);
        rest[k.name].push((all - parts.majorGc - parts.otherGc - parts.compiler) / requests);
      }
    }
  } finally {
    for (const k of kids) k.p.stdin.end('quit\n');
    await Promise.all(kids.map((k) => new Promise((r) => k.p.once('exit', r))));
    rmSync(out, { recursive: true, force: true });
  }
  const diff = rest.current.map((c, i) => c - rest.baseline[i]);
  const k = (x: number) => Math.round(x).toLocaleString('en');
  console.log(`${values.rounds} rounds of ${requests} requests at concurrency ${concurrency}, 13 rules; instructions per request, median over the rounds`);
  console.table(kids.map(({ name }) => ({ version: name, all: k(median(total[name])), 'outside GC and compiler': k(median(rest[name])) })));
  console.log(`current − baseline per round, outside GC and compiler: ${diff.map(k).join(' ')}; median ${k(median(diff))} (quartiles ${k(quantile(diff, 0.25))} … ${k(quantile(diff, 0.75))})`);
}

if (values.child) await child(values.child);
else await parent();
