// What the six rate-limit headers cost in fastify and Node alone, apart from the governor and the gateway: one
// fastify server (a child process, so its CPU is read apart from the load's) answers a chat-sized JSON body on
// routes that differ only in their headers, in one process, segments interleaved (every other round reversed):
//   off    the gateway's usual answer headers (content-type, request id, cost, processing ms, overhead)
//   first  the six x-ratelimit-* headers set before those (as the governor does, at admission)
//   last   the same six set after them
//   one    one x-ratelimit-* header, set first
//   off2   the off route again: the method's own noise
// "added" is the median over the rounds of (route − off) in the same round, with its quartiles.
//   node bench/limits-headers.ts [--rounds 150] [--requests 300] [--concurrency 32]
import { spawn } from 'node:child_process';
import { parseArgs } from 'node:util';
import Fastify from 'fastify';
import type { FastifyReply } from 'fastify';
import { Pool } from 'undici';
import { cpuSecondsFine, freePort } from './proc.ts';
import { median, quantile } from './stats.ts';
import { GATEWAY_NODE_OPTIONS } from './targets.ts';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '150' },
    requests: { type: 'string', default: '300' },
    concurrency: { type: 'string', default: '32' },
    // Internal: run as the server on this port.
    serve: { type: 'string' },
  },
});

const RATE = ['x-ratelimit-limit-requests', 'x-ratelimit-remaining-requests', 'x-ratelimit-reset-requests', 'x-ratelimit-limit-tokens', 'x-ratelimit-remaining-tokens', 'x-ratelimit-reset-tokens'];

async function serve(port: number): Promise<void> {
  const app = Fastify();
  const body = Buffer.from(JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: 'hello '.repeat(20) } }], usage: { prompt_tokens: 10, completion_tokens: 20, total_tokens: 30 } }));
  let n = 0;
  // Values change per answer as the governor's do (remaining counts), limits and resets are few texts.
  const rate = (reply: FastifyReply) => {
    n++;
    reply.header(RATE[0], '1000000000').header(RATE[1], String(999_999_999 - (n % 1000))).header(RATE[2], '1ms');
    reply.header(RATE[3], '1000000000').header(RATE[4], String(999_999_000 - (n % 1000))).header(RATE[5], '5ms');
  };
  const usual = (reply: FastifyReply) => {
    reply.code(200).header('content-type', 'application/json').header('x-tollgate-request-id', `req_${n}`).header('x-tollgate-cost-points', '0.0000213');
    reply.header('openai-processing-ms', '12').header('x-tollgate-overhead-ms', '0.123');
  };
  // One await between admission and the answer, as in the relay.
  app.post('/off', async (_req, reply) => {
    await null;
    usual(reply);
    return reply.send(body);
  });
  app.post('/first', async (_req, reply) => {
    rate(reply);
    await null;
    usual(reply);
    return reply.send(body);
  });
  app.post('/last', async (_req, reply) => {
    await null;
    usual(reply);
    rate(reply);
    return reply.send(body);
  });
  app.post('/one', async (_req, reply) => {
    reply.header(RATE[0], '1000000000');
    await null;
    usual(reply);
    return reply.send(body);
  });
  await app.listen({ port, host: '127.0.0.1' });
  console.log('ready');
}

async function drive(): Promise<void> {
  const port = await freePort();
  const child = spawn(process.execPath, [...GATEWAY_NODE_OPTIONS.split(' '), import.meta.filename, '--serve', String(port)], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((resolve) => child.stdout!.on('data', (d: Buffer) => d.toString().includes('ready') && resolve()));
  const concurrency = Number(values.concurrency);
  const pool = new Pool(`http://127.0.0.1:${port}`, { connections: concurrency, pipelining: 1 });
  const reqBody = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] });
  /** µs of the server's CPU per request over `n` closed-loop requests. */
  const segment = async (path: string, n: number): Promise<number> => {
    let sent = 0;
    const c0 = cpuSecondsFine(child.pid!);
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (sent < n) {
          sent++;
          const res = await pool.request({ path, method: 'POST', headers: { 'content-type': 'application/json' }, body: reqBody });
          await res.body.dump();
          if (res.statusCode !== 200) throw new Error(`${path}: ${res.statusCode}`);
        }
      }),
    );
    return ((cpuSecondsFine(child.pid!) - c0) / n) * 1e6;
  };
  try {
    const routes = ['off', 'first', 'last', 'one', 'off2'];
    const path = (r: string) => `/${r === 'off2' ? 'off' : r}`;
    for (const r of routes) await segment(path(r), 3000);
    const cpu = new Map<string, number[]>(routes.map((r) => [r, []]));
    for (let round = 0; round < Number(values.rounds); round++) {
      for (const r of round % 2 ? [...routes].reverse() : routes) cpu.get(r)!.push(await segment(path(r), Number(values.requests)));
    }
    const off = cpu.get('off')!;
    console.log(`${values.rounds} rounds of ${values.requests} requests per route at concurrency ${concurrency}; server CPU µs per request`);
    console.table(
      routes.map((r) => {
        const d = cpu.get(r)!.map((x, i) => x - off[i]);
        return { route: r, cpuUsPerRequest: +median(cpu.get(r)!).toFixed(2), addedVsOffUs: +median(d).toFixed(2), quartiles: `${quantile(d, 0.25).toFixed(2)} … ${quantile(d, 0.75).toFixed(2)}` };
      }),
    );
  } finally {
    await pool.close();
    child.kill();
  }
}

if (values.serve) await serve(Number(values.serve));
else await drive();
