// The Redis limits backend alone, in this process, against the machine's Redis (own key prefix, removed after): the
// governor with the 13-rule key of bench/limits.ts (key, project and organization × rpm/tpm/concurrency, month and
// total budgets on key and organization), no HTTP. Two loads per round:
//   closed loop: `--concurrency` requests in flight, each admitted, then one turn later charged and settled; CPU of
//     this process per request (user + system) and script calls per request;
//   open loop: `--rate` admissions per second for `--seconds`, each settled 2 ms after its admission; admission
//     latency p50/p99 and CPU per request.
// Both loads also report Redis's own time in the script per request (its INFO commandstats, evalsha usec, read before
// and after: another client running scripts on the same Redis at the same time would be counted too).
// With `--baseline DIR` (another checkout, e.g. a `git archive` of main with node_modules linked) both versions run
// in this process, interleaved round by round (every other round in reverse order), and medians are reported.
//   node bench/limits-redis-backend.ts [--requests 20000] [--concurrency 8] [--rate 1000] [--seconds 3] [--rounds 5]
//     [--baseline DIR] [--redis-prefix tollgate-bench:]
import { randomUUID } from 'node:crypto';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import type { FastifyReply } from 'fastify';
import type * as GovernorModule from '../gateway/governance/governor.ts';
import type { GovernedCall, Ticket } from '../gateway/governance/governor.ts';
import type * as RedisBackendModule from '../gateway/governance/redis-backend.ts';
import { median, Samples } from './stats.ts';
import { HEADER_SINK, SETTLED_ROW, thirteenRuleCall } from './limits-redis-fixture.ts';
import { deleteRedisPrefix } from './redis-keys.ts';

const { values } = parseArgs({
  options: {
    requests: { type: 'string', default: '20000' },
    concurrency: { type: 'string', default: '8' },
    rate: { type: 'string', default: '1000' },
    seconds: { type: 'string', default: '3' },
    rounds: { type: 'string', default: '5' },
    redis: { type: 'string', default: 'redis://127.0.0.1:6379' },
    baseline: { type: 'string' },
    // Keys are made under this prefix plus a fresh id, and removed at the end.
    'redis-prefix': { type: 'string', default: 'tollgate-bench:' },
  },
});
const requests = Number(values.requests);
const concurrency = Number(values.concurrency);
const rate = Number(values.rate);
const seconds = Number(values.seconds);
const prefix = `${values['redis-prefix']}${randomUUID()}:`;
const row = SETTLED_ROW;
const reply = HEADER_SINK;

interface Governed {
  admit(call: GovernedCall, reply: FastifyReply): Ticket | Promise<Ticket> | undefined;
  close(): Promise<void>;
}

interface Version {
  name: string;
  gov: Governed;
  client: { info(section: string): Promise<string> };
  calls: number;
  call: GovernedCall;
}

/** The governor and Redis backend of the checkout at `dir`, with the 13-rule key. */
async function load(name: string, dir: string): Promise<Version> {
  const { Governor } = (await import(resolve(dir, 'gateway/governance/governor.ts'))) as typeof GovernorModule;
  const { RedisBackend } = (await import(resolve(dir, 'gateway/governance/redis-backend.ts'))) as typeof RedisBackendModule;
  const v: Version = { name, gov: undefined as unknown as Governed, client: undefined as unknown as Version['client'], calls: 0, call: thirteenRuleCall(name) };
  const backend = new RedisBackend({ url: values.redis, prefix, onBatch: () => v.calls++ });
  await backend.ready();
  v.gov = new Governor({ backend });
  v.client = backend.client;
  return v;
}

const turn = () => new Promise<void>((r) => setImmediate(r));
const cpuNow = () => {
  const c = process.cpuUsage();
  return c.user + c.system;
};

/** Redis's total µs spent in EVALSHA so far (INFO commandstats). */
async function scriptUs(v: Version): Promise<number> {
  return Number(/cmdstat_evalsha:.*?usec=(\d+)/.exec(await v.client.info('commandstats'))?.[1] ?? NaN);
}

/** Closed loop: µs CPU, script calls and Redis's µs in the script per request. */
async function closed(v: Version): Promise<{ cpuUs: number; calls: number; redisUs: number }> {
  let left = requests;
  const r0 = await scriptUs(v);
  const c0 = cpuNow();
  const k0 = v.calls;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (left-- > 0) {
        const t = (await v.gov.admit(v.call, reply)) as Ticket;
        await turn();
        t.charged(row);
        t.finish();
      }
    }),
  );
  const cpuUs = (cpuNow() - c0) / requests;
  return { cpuUs, calls: (v.calls - k0) / requests, redisUs: ((await scriptUs(v)) - r0) / requests };
}

/** Open loop at `rate`/s: admission latency and µs CPU per request. */
async function open(v: Version): Promise<{ p50: number; p99: number; cpuUs: number; calls: number; redisUs: number }> {
  const n = Math.round(rate * seconds);
  const r0 = await scriptUs(v);
  const lat = new Samples();
  const pending: Promise<void>[] = [];
  const c0 = cpuNow();
  const k0 = v.calls;
  const start = performance.now();
  for (let i = 0; i < n; i++) {
    const due = start + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    const t0 = performance.now();
    pending.push(
      Promise.resolve(v.gov.admit(v.call, reply)).then(async (t) => {
        lat.add(performance.now() - t0);
        await new Promise((r) => setTimeout(r, 2));
        t!.charged(row);
        t!.finish();
      }),
    );
  }
  await Promise.all(pending);
  const s = lat.summary();
  const cpuUs = (cpuNow() - c0) / n;
  return { p50: s.p50, p99: s.p99, cpuUs, calls: (v.calls - k0) / n, redisUs: ((await scriptUs(v)) - r0) / n };
}

const versions = [await load('current', '.')];
if (values.baseline) versions.push(await load('baseline', values.baseline));
try {
  for (const v of versions) await closed(v); // warm-up
  const results = new Map(versions.map((v) => [v.name, [] as { closedCpuUs: number; closedCalls: number; closedRedisUs: number; openCpuUs: number; openCalls: number; openRedisUs: number; p50: number; p99: number }[]]));
  for (let round = 0; round < Number(values.rounds); round++) {
    const order = round % 2 === 0 ? versions : [...versions].reverse();
    for (const v of order) {
      const c = await closed(v);
      const o = await open(v);
      results.get(v.name)!.push({ closedCpuUs: c.cpuUs, closedCalls: c.calls, closedRedisUs: c.redisUs, openCpuUs: o.cpuUs, openCalls: o.calls, openRedisUs: o.redisUs, p50: o.p50, p99: o.p99 });
    }
  }
  console.log(`closed loop: ${requests} requests at concurrency ${concurrency}; open loop: ${rate}/s for ${seconds} s; ${values.rounds} rounds, medians`);
  console.table(
    versions.map((v) => {
      const r = results.get(v.name)!;
      const m = (f: (x: (typeof r)[number]) => number, d = 1) => +median(r.map(f)).toFixed(d);
      return { version: v.name, 'closed µs/req': m((x) => x.closedCpuUs), 'closed calls/req': m((x) => x.closedCalls, 3), 'closed redis µs/req': m((x) => x.closedRedisUs), 'open µs/req': m((x) => x.openCpuUs), 'open calls/req': m((x) => x.openCalls, 3), 'open redis µs/req': m((x) => x.openRedisUs), 'open p50 ms': m((x) => x.p50, 3), 'open p99 ms': m((x) => x.p99, 3) };
    }),
  );
  if (versions.length === 2) {
    const [a, b] = versions.map((v) => results.get(v.name)!);
    console.log('per round, current − baseline, closed µs/req:', a.map((x, i) => +(x.closedCpuUs - b[i].closedCpuUs).toFixed(1)).join(' '), '; open µs/req:', a.map((x, i) => +(x.openCpuUs - b[i].openCpuUs).toFixed(1)).join(' '));
  }
} finally {
  for (const v of versions) await v.gov.close();
  await deleteRedisPrefix(values.redis, prefix);
}
