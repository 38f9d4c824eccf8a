// The Redis backend against the machine's real Redis (its own key prefix; nothing else is touched).
import { randomUUID } from 'node:crypto';
import type { FastifyReply } from 'fastify';
import { afterAll, describe, expect, it } from 'vitest';
import { generateApiKey } from '../../gateway/auth/api-key.ts';
import { GatewayError } from '../../gateway/errors.ts';
import type { GovernedCall, Ticket } from '../../gateway/governance/governor.ts';
import { Governor } from '../../gateway/governance/governor.ts';
import { MemoryBackend } from '../../gateway/governance/memory-backend.ts';
import { RedisBackend } from '../../gateway/governance/redis-backend.ts';
import { PODS } from '../../gateway/governance/redis-scripts.ts';
import type { LedgerRow } from '../../gateway/ledger/row.ts';
import { compileSnapshot } from '../../gateway/snapshot/runtime.ts';
import { snapshotSchema } from '../../gateway/snapshot/schema.ts';
import { startTcpProxy } from '../support/tcp-proxy.ts';
import { deleteRedisPrefix } from '../../bench/redis-keys.ts';

const REDIS = { host: '127.0.0.1', port: 6379 };
const K = generateApiKey();
const prefix = `tollgate-test:${randomUUID()}:`;
const backends: RedisBackend[] = [];

afterAll(async () => {
  for (const b of backends) await b.close();
  // Only this run's keys: SCAN by prefix, never FLUSH.
  await deleteRedisPrefix(`redis://${REDIS.host}:${REDIS.port}`, prefix);
});

function world(key: Record<string, unknown>, totalMs = 1000, org: Record<string, unknown> = {}) {
  // An organization with limits of its own gets a name of its own: its counters are not shared with other tests'.
  const orgId = Object.keys(org).length ? `o${randomUUID().slice(0, 8)}` : 'o';
  const s = compileSnapshot(
    snapshotSchema.parse({
      providers: [{ id: 'p', baseUrl: 'http://127.0.0.1:9/v1', timeouts: { totalMs } }],
      pricingGroups: [{ id: 'g', mode: 'flat_tokens', prices: { input: '1', output: '2' } }],
      models: [{ id: 'm/a', pricingGroup: 'g', protocols: { openai: [{ provider: 'p', model: 'a' }] } }],
      organizations: [{ id: orgId, models: ['*'], ...org }],
      apiKeys: [{ id: `k${randomUUID().slice(0, 8)}`, hash: K.hash, prefix: K.prefix, organization: orgId, project: 'web', ...key }],
    }),
  );
  const k = s.keysByHash.get(K.hash)!;
  const m = s.byName.get('m/a')!;
  return { requestId: 'r', key: k, model: m, family: 'chat', billing: 'text', requestBytes: 400, targets: m.protocols.openai! } satisfies GovernedCall;
}

async function backend(url = `redis://${REDIS.host}:${REDIS.port}`, ratesWhenDown: 'local' | 'refuse' = 'local', keyPrefix = prefix, podTtlMs?: number, maxOps?: number): Promise<RedisBackend> {
  const b = new RedisBackend({ url, prefix: keyPrefix, ratesWhenDown, commandTimeoutMs: 500, podTtlMs, maxOps });
  backends.push(b);
  await b.ready();
  return b;
}

// The governor sets its headers on the fastify reply; these tests read them from a stand-in.
const reply = () => ({ header: () => undefined }) as unknown as FastifyReply;

/** A stand-in reply that keeps the headers set on it. */
function recording(): { headers: Record<string, string>; rep: FastifyReply } {
  const headers: Record<string, string> = {};
  return { headers, rep: { header: (n: string, v: string) => (headers[n] = v) } as unknown as FastifyReply };
}

/** The script command the backend sends through (answers as bytes; not in ioredis' types). */
interface Raw {
  evalshaBuffer: (...args: unknown[]) => Promise<unknown>;
}

/**
 * Records each script call the backend sends: its admissions (the requests in its A operations, three numbers each
 * after "A g now"), its settlement operations (one per rules list, the list's settlements summed) and its keys.
 */
function countCalls(b: RedisBackend): { admit: number; settle: number; keys: number }[] {
  const calls: { admit: number; settle: number; keys: number }[] = [];
  const evalsha = (b.client as unknown as Raw).evalshaBuffer.bind(b.client);
  (b.client as unknown as Raw).evalshaBuffer = (...args: unknown[]) => {
    // The backend passes its key and argument lists as arrays (ioredis flattens them).
    const flat = args.flat();
    const keys = Number(flat[1]);
    const ops = flat.slice(2 + keys) as string[];
    const admit = ops.filter((o) => o[0] === 'A').reduce((n, o) => n + (o.split(' ').length - 3) / 3, 0);
    calls.push({ admit, settle: ops.filter((o) => o[0] === 'S').length, keys });
    return evalsha(...args);
  };
  return calls;
}

async function admit(g: Governor, c: GovernedCall) {
  try {
    return await g.admit(c, reply());
  } catch (err) {
    if (err instanceof GatewayError) return err;
    throw err;
  }
}

describe('redis backend', () => {
  it('two governors sharing Redis admit exactly N of 3N concurrent requests', async () => {
    const c = world({ limits: { rpm: 7 } });
    const [a, b] = [new Governor({ backend: await backend() }), new Governor({ backend: await backend() })];
    const results = await Promise.all(Array.from({ length: 21 }, (_, i) => admit(i % 2 ? a : b, c)));
    expect(results.filter((r) => !(r instanceof GatewayError))).toHaveLength(7);
    expect(results.filter((r) => r instanceof GatewayError && r.kind === 'rate_limited')).toHaveLength(14);
  });

  it('one script call per event-loop turn: concurrent admissions share it, settlements ride along with the next', async () => {
    const c = world({ limits: { rpm: 1000, tpm: 1_000_000, concurrency: 100 }, budget: { day: '1000', total: '1000' } });
    const b = await backend();
    const g = new Governor({ backend: b });
    const calls = countCalls(b);
    const first = await Promise.all(Array.from({ length: 20 }, () => admit(g, c)));
    expect(first.every((t) => t && !(t instanceof GatewayError))).toBe(true);
    // The key's 5 rules go in once per call, however many of its requests the call carries.
    expect(calls).toEqual([{ admit: 20, settle: 0, keys: 5 }]);
    // Twenty settlements queued, then ten admissions in one turn: all of it goes in one call, the settlements summed
    // into one operation ahead of the admissions.
    for (const t of first) {
      const tk = t as Exclude<(typeof first)[number], GatewayError | undefined>;
      tk.charged({ input: 10, output: 10, cacheRead: 0, cacheWrite: 0, costPoints: '0.001' } as LedgerRow);
      tk.finish();
    }
    const second = await Promise.all(Array.from({ length: 10 }, () => admit(g, c)));
    expect(second.every((t) => t && !(t instanceof GatewayError))).toBe(true);
    expect(calls[1]).toEqual({ admit: 10, settle: 1, keys: 5 });
    // Without admissions, settlements go on their own a few ms later, again all in one call.
    for (const t of second) (t as { finish(): void }).finish();
    await new Promise((r) => setTimeout(r, 100));
    expect(calls.slice(2)).toEqual([{ admit: 0, settle: 1, keys: 5 }]);
    const view = await g.describe(c.key);
    expect(view.limits.find((l) => l.kind === 'concurrency')!.remaining).toBe(100);
    // 20 charged at 0.001; the 10 unbilled gave their reservations back.
    expect(view.budgets.map((x) => x.spent)).toEqual(['0.02', '0.02']);
  });

  it('one call reads each counter once and still sees its own changes in order: settle, then admit in turn, then read', async () => {
    const c = world({ limits: { concurrency: 3 }, budget: { total: '10' } });
    const b = await backend();
    const g = new Governor({ backend: b });
    const held = (await Promise.all([admit(g, c), admit(g, c), admit(g, c)])) as Ticket[];
    expect(held.some((t) => t instanceof GatewayError)).toBe(false);
    const calls = countCalls(b);
    // One turn: an admission while all three slots are held, two settlements, two admissions, a read. The call
    // settles first (the settled requests came before any of these), then admits in the order asked: two fit.
    const x = admit(g, c);
    for (const t of held.slice(0, 2)) {
      t.charged({ input: 100, output: 50, cacheRead: 0, cacheWrite: 0, costPoints: '0.5' } as LedgerRow);
      t.finish();
    }
    const [rx, ry, rz, view] = await Promise.all([x, admit(g, c), admit(g, c), g.describe(c.key)]);
    // The read names its rules' keys again (a list of its own): four keys, two counters.
    expect(calls).toEqual([{ admit: 3, settle: 1, keys: 4 }]);
    expect(rx).not.toBeInstanceOf(GatewayError);
    expect(ry).not.toBeInstanceOf(GatewayError);
    expect(rz).toMatchObject({ kind: 'rate_limited' });
    // 100 tokens reserved at 1 point per million (0.0001) per admitted request, the two settled charged 0.5 each.
    expect(view.limits[0]).toMatchObject({ kind: 'concurrency', remaining: 0 });
    expect(view.budgets[0].spent).toBe('1.0003');
    // Written back at the end of the call: the next call reads the same.
    const again = await g.describe(c.key);
    expect(again.budgets[0].spent).toBe('1.0003');
    expect(again.limits[0]).toMatchObject({ kind: 'concurrency', remaining: 0 });
  });

  it('a month spend counter expires 95 days after it is made, and keeps that expiry as it grows', async () => {
    const c = world({ budget: { month: '10' } });
    const b = await backend();
    const g = new Governor({ backend: b });
    const t = (await admit(g, c)) as Ticket;
    const key = prefix + t.spendKeys.find((k) => k !== undefined)!;
    const first = await b.client.pttl(key);
    expect(first).toBeGreaterThan(94 * 86_400_000);
    expect(first).toBeLessThanOrEqual(95 * 86_400_000);
    t.charged({ input: 100, output: 50, cacheRead: 0, cacheWrite: 0, costPoints: '0.5' } as LedgerRow);
    t.finish();
    await admit(g, c);
    expect((await g.describe(c.key)).budgets[0].spent).toBe('0.5001');
    expect(await b.client.pttl(key)).toBeGreaterThan(94 * 86_400_000);
  });

  it('an admission answer it cannot read leaves no request waiting: those not read are served from the local view', async () => {
    const c = world({ limits: { rpm: 1000 } });
    const b = await backend();
    const g = new Governor({ backend: b });
    const evalsha = (b.client as unknown as Raw).evalshaBuffer.bind(b.client);
    (b.client as unknown as Raw).evalshaBuffer = async (...args: unknown[]) => {
      const res = (await evalsha(...args)) as Buffer[];
      return res.map(() => Buffer.from("nonsense"));
    };
    const results = await Promise.all(Array.from({ length: 3 }, () => admit(g, c)));
    expect(results.every((t) => t && !(t instanceof GatewayError))).toBe(true);
    // Counted in the local view (on this pod's share of the limit), as while Redis is unreachable.
    expect((await b.local.peek(c.key.governance!.rules, [undefined], Date.now())).remaining[0]).toBeLessThan(1000);
  });

  it('keeps one call in flight: turns that come during its round trip go together right after its answer', async () => {
    const c = world({ limits: { rpm: 1000, concurrency: 100 } });
    const b = await backend();
    const g = new Governor({ backend: b });
    const calls = countCalls(b);
    // Redis answers 50 ms late.
    const evalsha = (b.client as unknown as Raw).evalshaBuffer.bind(b.client);
    (b.client as unknown as Raw).evalshaBuffer = async (...args: unknown[]) => {
      const res = await evalsha(...args);
      await new Promise((r) => setTimeout(r, 50));
      return res;
    };
    const first = admit(g, c);
    // Three more turns while the first call is in flight, two admissions each.
    const later: ReturnType<typeof admit>[] = [];
    for (let turn = 0; turn < 3; turn++) {
      await new Promise((r) => setTimeout(r, 5));
      later.push(admit(g, c), admit(g, c));
    }
    expect(calls).toHaveLength(1);
    const results = await Promise.all([first, ...later]);
    expect(results.every((t) => t && !(t instanceof GatewayError))).toBe(true);
    expect(calls.map((x) => x.admit)).toEqual([1, 6]);
  });

  it('when the call in flight fails, the requests gathered behind it are served from the local view, not sent', async () => {
    const c = world({ limits: { rpm: 1000 } });
    const b = await backend();
    const g = new Governor({ backend: b });
    // Redis fails to answer (a command timeout) 300 ms after each call.
    let sent = 0;
    (b.client as unknown as Raw).evalshaBuffer = async () => {
      sent++;
      await new Promise((r) => setTimeout(r, 300));
      throw new Error('Command timed out');
    };
    const first = admit(g, c);
    const later: ReturnType<typeof admit>[] = [];
    for (let turn = 0; turn < 3; turn++) {
      await new Promise((r) => setTimeout(r, 5));
      later.push(admit(g, c));
    }
    const results = await Promise.all([first, ...later]);
    expect(results.every((t) => t && !(t instanceof GatewayError))).toBe(true);
    // One call tried: the requests behind it waited for its failure only, not for a second timeout of their own.
    expect(sent).toBe(1);
    expect(b.degraded).toBe(true);
    // Redis answers again: the next admission is sent at the end of its turn (no flush left pending from before).
    delete (b.client as unknown as Partial<Raw>).evalshaBuffer;
    const next = await Promise.race([admit(g, c), new Promise((r) => setTimeout(() => r('waiting'), 2000))]);
    expect(next).not.toBe('waiting');
    expect(b.degraded).toBe(false);
  });

  it('each request of a failed call gets its own verdict from the local view', async () => {
    // Alone under its own prefix, so the local view holds the whole limit: of two requests in the failed call, the
    // first fits and the second does not.
    const c = world({ limits: { rpm: 1 } });
    const b = await backend(undefined, 'local', `${prefix}${randomUUID()}:`);
    await b.countPods();
    const g = new Governor({ backend: b });
    (b.client as unknown as Raw).evalshaBuffer = async () => {
      await new Promise((r) => setTimeout(r, 20));
      throw new Error('Command timed out');
    };
    const results = await Promise.all([admit(g, c), admit(g, c)]);
    expect(results[0]).not.toBeInstanceOf(GatewayError);
    expect(results[1]).toMatchObject({ kind: 'rate_limited' });
  });

  it('reads the limits of a key without any as nothing, without a script call', async () => {
    const c = world({});
    const b = await backend();
    const g = new Governor({ backend: b });
    const calls = countCalls(b);
    expect(await g.describe(c.key)).toMatchObject({ backend: 'redis', limits: [], budgets: [] });
    expect(calls).toHaveLength(0);
    expect(b.degraded).toBe(false);
  });

  it('an answer it cannot read after Redis counted the requests retires the incarnation: their slots come back', async () => {
    const c = world({ limits: { concurrency: 10 } });
    const own = `${prefix}${randomUUID()}:`;
    const b = await backend(undefined, 'local', own, 600);
    const g = new Governor({ backend: b });
    const count = async () => Number((await b.client.hget(`${own}${c.key.governance!.rules[0].id}|n`, 't')) ?? 0);
    // The incarnation's answer is read; the admissions' answer is not.
    const evalsha = (b.client as unknown as Raw).evalshaBuffer.bind(b.client);
    (b.client as unknown as Raw).evalshaBuffer = async (...args: unknown[]) => {
      const res = (await evalsha(...args)) as Buffer[];
      return res.map((a, i) => (i > 0 ? Buffer.from('nonsense') : a));
    };
    const tickets = (await Promise.all(Array.from({ length: 3 }, () => admit(g, c)))) as Ticket[];
    expect(tickets.every((t) => !(t instanceof GatewayError))).toBe(true);
    (b.client as unknown as Raw).evalshaBuffer = evalsha;
    // Redis counted the three; the pod served them from its local view and stopped beating for that incarnation.
    expect(await count()).toBe(3);
    for (const t of tickets) t.finish();
    await b.drain();
    await new Promise((r) => setTimeout(r, 1200));
    expect(await count()).toBe(0);
  });

  it('a turn with very many requests is split into bounded calls', async () => {
    const c = world({ limits: { rpm: 1000 } });
    const b = await backend();
    const g = new Governor({ backend: b });
    const calls = countCalls(b);
    const results = await Promise.all(Array.from({ length: 300 }, () => admit(g, c)));
    expect(results.every((t) => t && !(t instanceof GatewayError))).toBe(true);
    expect(calls).toEqual([{ admit: 256, settle: 0, keys: 1 }, { admit: 44, settle: 0, keys: 1 }]);
  });

  it('concurrency is exact across pods; a dead pod\'s slots come back once it has been silent for the pod ttl', async () => {
    const c = world({ limits: { concurrency: 3 } });
    const own = `${prefix}${randomUUID()}:`;
    const [a, b] = [await backend(undefined, 'local', own, 600), await backend(undefined, 'local', own, 600)];
    const [ga, gb] = [new Governor({ backend: a }), new Governor({ backend: b })];
    const results = await Promise.all(Array.from({ length: 9 }, () => admit(gb, c)));
    expect(results.filter((r) => !(r instanceof GatewayError))).toHaveLength(3);
    // One finishes: exactly one more fits, on the other pod.
    (results.find((r) => !(r instanceof GatewayError)) as Ticket).finish();
    await new Promise((r) => setTimeout(r, 50));
    const more = await Promise.all(Array.from({ length: 4 }, () => admit(ga, c)));
    expect(more.filter((r) => !(r instanceof GatewayError))).toHaveLength(1);
    // Pod b dies holding two (its connection gone, no goodbye): still counted until it has been silent past the ttl.
    b.client.disconnect();
    expect(await admit(ga, c)).toMatchObject({ kind: 'rate_limited' });
    await new Promise((r) => setTimeout(r, 1200));
    const after = await Promise.all(Array.from({ length: 5 }, () => admit(ga, c)));
    expect(after.filter((r) => !(r instanceof GatewayError))).toHaveLength(2);
  });

  it('a pod reaped while alive (a stalled heartbeat) adopts the slots it still holds, and frees each once', async () => {
    const c = world({ limits: { concurrency: 3 } });
    const own = `${prefix}${randomUUID()}:`;
    const b = await backend(undefined, 'local', own);
    const g = new Governor({ backend: b });
    const held = [await admit(g, c), await admit(g, c)] as Ticket[];
    // Another pod reaps this one's incarnation as if it had been silent past the ttl.
    const [member] = await b.client.zrange(`${own}alive`, 0, -1);
    await b.client.eval(PODS, 2, `${own}pods`, `${own}alive`, 'other', '15000', member, '1');
    // Its next call learns it: that admission counts nowhere, and the pod starts a new incarnation, whose first call
    // adopts the three it holds.
    held.push((await admit(g, c)) as Ticket);
    expect(await admit(g, c)).toMatchObject({ kind: 'rate_limited' });
    expect((await g.describe(c.key)).limits[0]).toMatchObject({ kind: 'concurrency', remaining: 0 });
    for (const t of held) t.finish();
    await b.drain();
    expect((await g.describe(c.key)).limits[0]).toMatchObject({ remaining: 3 });
    expect((await b.client.hgetall(`${own}${c.key.governance!.rules[0].id}|n`)).t).toBe('0');
  });

  it('the requests gathered behind the call that learns the pod was reaped count under the new incarnation', async () => {
    const c = world({ limits: { concurrency: 10 } });
    const own = `${prefix}${randomUUID()}:`;
    const b = await backend(undefined, 'local', own);
    const g = new Governor({ backend: b });
    const count = async () => Number((await b.client.hget(`${own}${c.key.governance!.rules[0].id}|n`, 't')) ?? 0);
    const held = [await admit(g, c), await admit(g, c)] as Ticket[];
    const [member] = await b.client.zrange(`${own}alive`, 0, -1);
    await b.client.eval(PODS, 2, `${own}pods`, `${own}alive`, 'other', '15000', member, '1');
    // Redis answers 50 ms late: two more turns gather behind the call that learns it.
    const evalsha = (b.client as unknown as Raw).evalshaBuffer.bind(b.client);
    (b.client as unknown as Raw).evalshaBuffer = async (...args: unknown[]) => {
      const res = await evalsha(...args);
      await new Promise((r) => setTimeout(r, 50));
      return res;
    };
    const later = [admit(g, c)];
    for (let turn = 0; turn < 2; turn++) {
      await new Promise((r) => setTimeout(r, 5));
      later.push(admit(g, c), admit(g, c));
    }
    held.push(...((await Promise.all(later)) as Ticket[]));
    expect(held.every((t) => !(t instanceof GatewayError))).toBe(true);
    // Seven in flight, all counted: two and the one of the reaped call adopted, four counted as they came.
    expect(await count()).toBe(7);
    for (const t of held) t.finish();
    await b.drain();
    expect(await count()).toBe(0);
  });

  it('names the tightest rpm and tpm rule of all scopes in its headers, as the in-process counters do', async () => {
    // The script answers only the tightest rule of each kind; the memory backend answers every rule and the governor
    // picks. Both must give the same headers.
    const c = world({ limits: { rpm: 100, tpm: 100_000 } }, 1000, { limits: { rpm: 3, tpm: 500 } });
    const now = Date.UTC(2026, 10, 25, 12, 0, 0);
    const seen: Record<string, string>[] = [];
    for (const b of [await backend(), new MemoryBackend()]) {
      const g = new Governor({ backend: b, now: () => now });
      const { headers, rep } = recording();
      await g.admit(c, rep);
      await g.admit(c, rep); // 400 bytes each: 100 tokens estimated
      seen.push(headers);
    }
    expect(seen[0]).toEqual({
      'x-ratelimit-limit-requests': '3',
      'x-ratelimit-remaining-requests': '1',
      'x-ratelimit-reset-requests': '40s',
      'x-ratelimit-limit-tokens': '500',
      'x-ratelimit-remaining-tokens': '300',
      'x-ratelimit-reset-tokens': '24s',
    });
    expect(seen[1]).toEqual(seen[0]);
  });

  it('names the tightest rate rules on a refusal too, as they stand, as the in-process counters do', async () => {
    const c = world({ limits: { rpm: 2, tpm: 1000 } });
    const now = Date.UTC(2026, 10, 25, 12, 0, 0);
    const seen: Record<string, string>[] = [];
    for (const b of [await backend(), new MemoryBackend()]) {
      const g = new Governor({ backend: b, now: () => now });
      await g.admit(c, reply());
      await g.admit(c, reply()); // 400 bytes each: 100 tokens estimated
      const { headers, rep } = recording();
      await Promise.resolve()
        .then(() => g.admit(c, rep))
        .then(
          () => expect.unreachable('two requests a minute'),
          (err: unknown) => expect(err).toMatchObject({ kind: 'rate_limited' }),
        );
      seen.push(headers);
    }
    // Nothing left of the requests until the bucket is full again in a minute; the refused request took no tokens.
    expect(seen[0]).toEqual({
      'x-ratelimit-limit-requests': '2',
      'x-ratelimit-remaining-requests': '0',
      'x-ratelimit-reset-requests': '1m0s',
      'x-ratelimit-limit-tokens': '1000',
      'x-ratelimit-remaining-tokens': '800',
      'x-ratelimit-reset-tokens': '12s',
      'retry-after': '30',
      'retry-after-ms': '30000',
    });
    expect(seen[1]).toEqual(seen[0]);
  });

  it('admits a turn\'s requests on one rules list in one pass, and one by one near a limit, exactly as the in-process counters do', async () => {
    // Turns of concurrent requests (one script call each) of mixed sizes, one bigger than a tpm limit, crossing the
    // key's rpm, tpm, concurrency and budget limits; between turns the clock moves and some requests end. Every
    // request's outcome, rate-limit headers and budget warning, and the budget left after each turn, must be the
    // in-process counters' own.
    const c = world({ limits: { rpm: 12, tpm: 4000, concurrency: 7 }, budget: { total: '0.0025', softPercent: 40 } }, 1000, { limits: { rpm: 14, tpm: 3000 } });
    const bytes = [400, 4000, 40, 12_000, 800, 400, 2000, 400, 40, 400, 8000, 400];
    const turns = [3, 5, 2, 6, 4, 3, 5];
    const runs: unknown[][] = [];
    // The script's answers to the A operations: one state for a whole turn ("+ .."), or one answer per request.
    const answers: string[] = [];
    const redis = await backend();
    const evalsha = (redis.client as unknown as Raw).evalshaBuffer.bind(redis.client);
    (redis.client as unknown as Raw).evalshaBuffer = async (...args: unknown[]) => {
      const res = (await evalsha(...args)) as Buffer[];
      const ops = (args.flat() as string[]).filter((a) => /^[A-Z] /.test(a) && a[0] !== 'G' && a[0] !== 'S' && a[0] !== 'T');
      ops.forEach((op, i) => op[0] === 'A' && answers.push(res[i].toString()));
      return res;
    };
    for (const b of [redis, new MemoryBackend()]) {
      let now = Date.UTC(2026, 10, 25, 12, 0, 0);
      const g = new Governor({ backend: b, now: () => now });
      const seen: unknown[] = [];
      const open: Ticket[] = [];
      let n = 0;
      for (const size of turns) {
        const results = await Promise.all(
          Array.from({ length: size }, () => {
            const { headers, rep } = recording();
            const call = { ...c, requestBytes: bytes[n++ % bytes.length] };
            return Promise.resolve()
              .then(() => g.admit(call, rep))
              .then(
                (t) => ({ t: t!, headers }),
                // A refusal's headers: its wait, and the tightest rate rules as they stand.
                (err: GatewayError) => ({ t: undefined, headers: { error: err.kind, ...headers } }),
              );
          }),
        );
        for (const r of results) {
          seen.push(r.headers);
          if (r.t) open.push(r.t);
        }
        // The older half of what is in flight ends, charged (settled before the next turn's admissions).
        for (const t of open.splice(0, Math.ceil(open.length / 2))) {
          t.charged({ input: 100, output: 50, cacheRead: 0, cacheWrite: 0, costPoints: '0.0002' } as LedgerRow);
          t.finish();
        }
        now += 10_000;
        seen.push((await g.describe(c.key)).budgets.map((x) => x.spent));
      }
      runs.push(seen);
    }
    // Refusals of every kind happened; whole turns were admitted in one pass, and turns crossing a limit one by one.
    const kinds = new Set(runs[1].map((h) => (h as { error?: string }).error));
    expect([...kinds].sort()).toEqual(['quota_exceeded', 'rate_limited', undefined].sort());
    expect(answers).toHaveLength(turns.length);
    expect(answers.filter((a) => a.startsWith('+') && !a.includes(',')).length).toBeGreaterThanOrEqual(2);
    expect(answers.filter((a) => a.includes(',')).length).toBeGreaterThanOrEqual(2);
    expect(runs[0]).toEqual(runs[1]);
    // A rate refusal names the tightest rate rules too.
    const limited = runs[1].filter((h) => (h as { error?: string }).error === 'rate_limited') as Record<string, string>[];
    expect(limited.length).toBeGreaterThan(0);
    for (const h of limited) expect(h).toHaveProperty('x-ratelimit-remaining-requests');
  });

  it('settles tokens per minute with the real usage, and a day budget starts afresh at UTC midnight (fake clock)', async () => {
    const c = world({ limits: { tpm: 1000 }, budget: { day: '0.0005' } });
    let now = Date.UTC(2026, 10, 24, 23, 59, 30);
    const g = new Governor({ backend: await backend(), now: () => now });
    const { headers, rep } = recording();
    const first = await g.admit(c, rep); // 400 bytes: 100 tokens estimated
    expect(headers['x-ratelimit-remaining-tokens']).toBe('900');
    first!.charged({ input: 300, output: 500, cacheRead: 0, cacheWrite: 0, costPoints: '0.0013' } as LedgerRow);
    first!.finish();
    await new Promise((r) => setTimeout(r, 50));
    // The estimate (100) was replaced by the real 800: 200 left (the fake clock has not moved).
    expect((await g.describe(c.key)).limits[0]).toMatchObject({ kind: 'tpm', remaining: 200 });
    await Promise.resolve(g.admit(c, rep)).then(
      () => expect.unreachable('the day budget is spent'),
      (err: unknown) => expect(err).toMatchObject({ kind: 'quota_exceeded' }),
    );
    // Next UTC day: the budget is back, and the tokens bucket has refilled by then (a minute later).
    now += 60_000;
    const next = await g.admit(c, rep);
    expect(next).toBeDefined();
    // 800 real tokens were settled a minute ago and have drained; this request's 100 are taken.
    expect(headers['x-ratelimit-remaining-tokens']).toBe('900');
    const view = await g.describe(c.key);
    expect(view.budgets[0]).toMatchObject({ period: 'day', spent: '0.0001', resets_at: '2026-11-26T00:00:00.000Z' });
  });

  it('gives tokens back down to a full bucket, never as credit, as the in-process counters do', async () => {
    // 6000 tokens a minute: 10 ms a token. A request estimated at 1000 tokens used none (its upstream failed): at once
    // the bucket is full again, and a request of all 6000 fits; a second refund then leaves no credit behind it.
    const c = world({ limits: { tpm: 6000 } });
    const seen: unknown[][] = [];
    for (const b of [await backend(), new MemoryBackend()]) {
      let now = Date.UTC(2026, 10, 25, 12, 0, 0);
      const g = new Governor({ backend: b, now: () => now });
      const out: unknown[] = [];
      const first = (await g.admit({ ...c, requestBytes: 4000 }, reply()))!;
      now += 2000;
      first.charged({ input: 0, output: 0, cacheRead: 0, cacheWrite: 0, costPoints: '0' } as LedgerRow);
      first.finish();
      await new Promise((r) => setTimeout(r, 30));
      const whole = await Promise.resolve()
        .then(() => g.admit({ ...c, requestBytes: 24_000 }, reply()))
        .then(
          (t) => t!,
          (err: GatewayError) => err.kind,
        );
      out.push(typeof whole === 'string' ? whole : 'admitted');
      if (typeof whole !== 'string') {
        // It used 2000 of its 6000: 4000 back, and the bucket holds 2000 taken.
        whole.charged({ input: 1000, output: 1000, cacheRead: 0, cacheWrite: 0, costPoints: '0' } as LedgerRow);
        whole.finish();
        await new Promise((r) => setTimeout(r, 30));
      }
      out.push((await g.describe(c.key)).limits[0]);
      seen.push(out);
    }
    expect(seen[0][0]).toBe('admitted');
    expect(seen[0][1]).toMatchObject({ kind: 'tpm', remaining: 4000 });
    expect(seen[1]).toEqual(seen[0]);
  });

  it('keeps spend exact in femtopoints across whole-point carries, and reconciles upwards only', async () => {
    const c = world({ budget: { total: '3' } });
    const b = await backend();
    const g = new Governor({ backend: b });
    for (const cost of ['0.999999999999999', '1.000000000000002', '0.5']) {
      const t = await admit(g, c);
      if (t instanceof GatewayError || !t) throw new Error('refused');
      t.charged({ input: 1, output: 1, cacheRead: 0, cacheWrite: 0, costPoints: cost } as LedgerRow);
      t.finish();
    }
    await new Promise((r) => setTimeout(r, 50));
    expect((await g.describe(c.key)).budgets[0].spent).toBe('2.500000000000001');
    const spendKey = c.key.governance!.rules[0].id + 'total';
    await b.raiseSpend(spendKey, 10n, 0); // lower than what Redis holds: unchanged
    expect((await g.describe(c.key)).budgets[0].spent).toBe('2.500000000000001');
    await b.raiseSpend(spendKey, 3_000_000_000_000_000n, 0); // 3 points: the ledger saw more
    expect(await admit(g, c)).toMatchObject({ kind: 'quota_exceeded' });
  });

  it('every failed call retires its incarnation: slots Redis counted for calls whose answers were lost come back', async () => {
    const c = world({ limits: { concurrency: 3 } });
    const own = `${prefix}${randomUUID()}:`;
    const b = await backend(undefined, 'local', own, 600);
    const g = new Governor({ backend: b });
    // The next two calls run in Redis, then fail as a dropped connection would: their admissions are served from the
    // local view, while Redis counted a slot for each.
    const evalsha = (b.client as unknown as Raw).evalshaBuffer.bind(b.client);
    let lose = 2;
    (b.client as unknown as Raw).evalshaBuffer = async (...args: unknown[]) => {
      const admits = (args.flat().slice(2 + Number(args.flat()[1])) as string[]).some((a) => a[0] === 'A');
      const res = await evalsha(...args);
      if (admits && lose > 0) {
        lose--;
        throw new Error('Connection is closed.');
      }
      return res;
    };
    expect(await admit(g, c)).not.toBeInstanceOf(GatewayError);
    expect(await admit(g, c)).not.toBeInstanceOf(GatewayError);
    // Answered again: this one's slot is held, counted under a fresh incarnation.
    const held = await admit(g, c);
    expect(held).not.toBeInstanceOf(GatewayError);
    expect(b.degraded).toBe(false);
    // Both lost slots belong to incarnations that no longer beat: reaped after the pod ttl, only the held one stays.
    await new Promise((r) => setTimeout(r, 1500));
    expect((await g.describe(c.key)).limits[0]).toMatchObject({ kind: 'concurrency', remaining: 2 });
    (held as Ticket).finish();
    await b.drain();
    expect((await g.describe(c.key)).limits[0]).toMatchObject({ remaining: 3 });
  });

  it('counts a settlement once when its answer was lost after Redis ran it, and sends it again when it was not run', async () => {
    const c = world({ limits: { concurrency: 5 }, budget: { total: '100' } });
    const b = await backend(undefined, 'local', prefix, 1500);
    const g = new Governor({ backend: b });
    // The next call that carries a settlement runs in Redis, then fails as a dropped connection would.
    const evalsha = (b.client as unknown as Raw).evalshaBuffer.bind(b.client);
    let mode: 'ran' | 'not-run' | undefined;
    (b.client as unknown as Raw).evalshaBuffer = async (...args: unknown[]) => {
      const flat = args.flat();
      const settles = (flat.slice(2 + Number(flat[1])) as string[]).some((a) => a[0] === 'S');
      const m = settles ? mode : undefined;
      if (m) mode = undefined;
      if (m === 'not-run') throw new Error('Connection is closed.');
      const res = await evalsha(...args);
      if (m === 'ran') throw new Error('Connection is closed.');
      return res;
    };
    const settleOne = async (cost: string, how: 'ran' | 'not-run') => {
      const t = await admit(g, c);
      if (t instanceof GatewayError || !t) throw new Error('refused');
      mode = how;
      t.charged({ input: 1, output: 1, cacheRead: 0, cacheWrite: 0, costPoints: cost } as LedgerRow);
      t.finish();
      await b.drain();
      expect(b.degraded).toBe(true);
      // The next answered call ends the degradation and sends the failed settlement again.
      expect(await g.describe(c.key)).toMatchObject({ backend: 'redis' });
      await b.drain();
      expect(b.degraded).toBe(false);
    };
    await settleOne('0.25', 'ran');
    await settleOne('0.5', 'not-run');
    expect((await g.describe(c.key)).budgets[0].spent).toBe('0.75');
    // A failed call ends the pod's incarnation: the slot the unrun settlement should have freed stays counted (the safe
    // side) until the old incarnation, no longer beating, is reaped after the pod ttl.
    const slots = async () => (await g.describe(c.key)).limits.find((l: { kind: string }) => l.kind === 'concurrency');
    expect(await slots()).toMatchObject({ remaining: 4 });
    await new Promise((r) => setTimeout(r, 2500));
    expect(await slots()).toMatchObject({ remaining: 5 });
  });

  it('counts a replayed settlement once when the replay\'s own answer was lost after Redis ran it', async () => {
    const c = world({ budget: { total: '100' } });
    const b = await backend(undefined, 'local', prefix, 1500);
    const g = new Governor({ backend: b });
    const evalsha = (b.client as unknown as Raw).evalshaBuffer.bind(b.client);
    // The call carrying the settlement fails without running; the call carrying its replay runs, then fails.
    let phase: 'settle' | 'replay' | undefined;
    (b.client as unknown as Raw).evalshaBuffer = async (...args: unknown[]) => {
      const flat = args.flat();
      const ops = flat.slice(2 + Number(flat[1])) as string[];
      if (phase === 'settle' && ops.some((a) => a[0] === 'S')) {
        phase = 'replay';
        throw new Error('Connection is closed.');
      }
      const res = await evalsha(...args);
      if (phase === 'replay' && ops.some((a) => a[0] === 'T')) {
        phase = undefined;
        throw new Error('Connection is closed.');
      }
      return res;
    };
    const t = (await admit(g, c)) as Ticket;
    phase = 'settle';
    t.charged({ input: 1, output: 1, cacheRead: 0, cacheWrite: 0, costPoints: '0.5' } as LedgerRow);
    t.finish();
    await b.drain();
    // Answered: the replay goes (and its answer is lost); answered again: it goes again, and counts no more.
    for (let i = 0; i < 3; i++) {
      await g.describe(c.key);
      await new Promise((r) => setTimeout(r, 50));
      await b.drain();
    }
    expect(phase).toBeUndefined();
    expect(b.degraded).toBe(false);
    expect((await g.describe(c.key)).budgets[0].spent).toBe('0.5');
  });

  it('a request admitted from the local view and settled once Redis is back adds its charge there at once', async () => {
    const c = world({ budget: { total: '100' } });
    const b = await backend(undefined, 'local', `${prefix}${randomUUID()}:`);
    const g = new Governor({ backend: b });
    (b.client as unknown as Raw).evalshaBuffer = async () => {
      throw new Error('Connection is closed.');
    };
    const t = (await admit(g, c)) as Ticket;
    delete (b.client as unknown as Partial<Raw>).evalshaBuffer;
    // Answered again: the degradation ends and the local reservation goes to Redis; then the request ends.
    await g.describe(c.key);
    await new Promise((r) => setTimeout(r, 50));
    expect(b.degraded).toBe(false);
    t.charged({ input: 1, output: 1, cacheRead: 0, cacheWrite: 0, costPoints: '0.5' } as LedgerRow);
    t.finish();
    await new Promise((r) => setTimeout(r, 100));
    expect((await g.describe(c.key)).budgets[0].spent).toBe('0.5');
  });

  it('sends one failed call\'s replayed settlements together, however small the bound on a batch', async () => {
    // Three keys' budgets settled in one call that fails. Their replays join a batch that already holds an admission:
    // with three operations a batch they would go in two calls, and the second would find the failed call's number
    // kept by the first.
    const cs = [world({ budget: { total: '100' } }), world({ budget: { total: '100' } }), world({ budget: { total: '100' } })];
    const b = await backend(undefined, 'local', prefix, 1500, 3);
    const g = new Governor({ backend: b });
    const ts = [];
    for (const c of cs) ts.push((await admit(g, c)) as Ticket);
    const evalsha = (b.client as unknown as Raw).evalshaBuffer.bind(b.client);
    let fail = true;
    (b.client as unknown as Raw).evalshaBuffer = async (...args: unknown[]) => {
      const flat = args.flat();
      const ops = flat.slice(2 + Number(flat[1])) as string[];
      if (fail && ops.some((a) => a[0] === 'S')) {
        fail = false;
        throw new Error('Connection is closed.');
      }
      const res = await evalsha(...args);
      // Reads answer late, so an admission gathers behind them.
      if (ops.some((a) => a[0] === 'P')) await new Promise((r) => setTimeout(r, 50));
      return res;
    };
    for (const t of ts) {
      t.charged({ input: 1, output: 1, cacheRead: 0, cacheWrite: 0, costPoints: '0.5' } as LedgerRow);
      t.finish();
    }
    await b.drain();
    expect(b.degraded).toBe(true);
    const reading = g.describe(cs[0].key);
    await new Promise((r) => setTimeout(r, 10));
    const late = (await Promise.all([admit(g, cs[1]), reading]))[0] as Ticket;
    await new Promise((r) => setTimeout(r, 50));
    await b.drain();
    expect(b.degraded).toBe(false);
    const spent = await Promise.all(cs.map(async (c) => (await g.describe(c.key)).budgets[0].spent));
    // The late admission's reservation (0.0001) is on the second key.
    expect(spent).toEqual(['0.5', '0.5001', '0.5']);
    late.finish();
  });

  it('a new incarnation holding slots registers with the heartbeat, before the old one is reaped', async () => {
    const proxy = await startTcpProxy(REDIS);
    const own = `${prefix}${randomUUID()}:`;
    const b = await backend(`redis://127.0.0.1:${proxy.port}`, 'local', own, 600);
    const direct = await backend(undefined, 'local', `${prefix}${randomUUID()}:`);
    const g = new Governor({ backend: b });
    const c = world({ limits: { concurrency: 2 } });
    const count = async () => Number((await direct.client.hget(`${own}${c.key.governance!.rules[0].id}|n`, 't')) ?? 0);
    const t = (await admit(g, c)) as Ticket;
    // A blip: the pod renews its incarnation, and nothing else happens on this pod.
    await proxy.down();
    await new Promise((r) => setTimeout(r, 100));
    await proxy.up();
    await b.ready(5000);
    // Past the ttl the old incarnation is reaped; the slot still held is counted under the new one.
    await new Promise((r) => setTimeout(r, 1500));
    expect(await count()).toBe(1);
    t.finish();
    await b.drain();
    expect(await count()).toBe(0);
    await proxy.close();
  });

  it('a new incarnation\'s registration reaps the pod\'s retired ones at once: held slots never count twice', async () => {
    const c = world({ limits: { concurrency: 3 } });
    const own = `${prefix}${randomUUID()}:`;
    const b = await backend(undefined, 'local', own);
    const g = new Governor({ backend: b });
    const count = async () => Number((await b.client.hget(`${own}${c.key.governance!.rules[0].id}|n`, 't')) ?? 0);
    const held = [(await admit(g, c)) as Ticket, (await admit(g, c)) as Ticket];
    // A read fails before it runs: the pod retires its incarnation, which still counts the two held slots.
    (b.client as unknown as Raw).evalshaBuffer = async () => {
      throw new Error('Connection is closed.');
    };
    await g.describe(c.key);
    delete (b.client as unknown as Partial<Raw>).evalshaBuffer;
    // The next admission registers a new incarnation adopting the two: the third slot is free at once, not a ttl later.
    const third = await admit(g, c);
    expect(third).not.toBeInstanceOf(GatewayError);
    expect(await count()).toBe(3);
    expect(await admit(g, c)).toMatchObject({ kind: 'rate_limited' });
    for (const t of [...held, third as Ticket]) t.finish();
    await b.drain();
    expect(await count()).toBe(0);
  });

  it('a request settled before the new incarnation adopted anything frees nothing under it', async () => {
    const c = world({ limits: { concurrency: 5 } });
    const own = `${prefix}${randomUUID()}:`;
    const b = await backend(undefined, 'local', own, 600);
    const g = new Governor({ backend: b });
    const count = async () => Number((await b.client.hget(`${own}${c.key.governance!.rules[0].id}|n`, 't')) ?? 0);
    const w = (await admit(g, c)) as Ticket;
    const x = (await admit(g, c)) as Ticket;
    expect(await count()).toBe(2);
    // One call fails before it runs: the pod retires its incarnation (y is served from the local view).
    (b.client as unknown as Raw).evalshaBuffer = async () => {
      throw new Error('Connection is closed.');
    };
    const y = (await admit(g, c)) as Ticket;
    delete (b.client as unknown as Partial<Raw>).evalshaBuffer;
    // x ends before anything is adopted: its slot is counted under the old incarnation only, and comes back with it.
    x.finish();
    const z = (await admit(g, c)) as Ticket;
    await b.drain();
    // After the pod ttl the old incarnation is reaped: w (adopted) and z (counted as it came) are left.
    await new Promise((r) => setTimeout(r, 1500));
    expect(await count()).toBe(2);
    for (const t of [w, y, z]) t.finish();
    await b.drain();
    expect(await count()).toBe(0);
  });

  it('a call of an incarnation retired while it was out holds its admissions for the next one to adopt', async () => {
    const c = world({ limits: { concurrency: 5 } });
    const own = `${prefix}${randomUUID()}:`;
    const b = await backend(undefined, 'local', own);
    const g = new Governor({ backend: b });
    const count = async () => Number((await b.client.hget(`${own}${c.key.governance!.rules[0].id}|n`, 't')) ?? 0);
    const w = (await admit(g, c)) as Ticket;
    const evalsha = (b.client as unknown as Raw).evalshaBuffer.bind(b.client);
    (b.client as unknown as Raw).evalshaBuffer = async (...args: unknown[]) => {
      delete (b.client as unknown as Partial<Raw>).evalshaBuffer;
      // While this call is out, the incarnation is reaped (a stalled heartbeat) and the pod's heartbeat learns it first.
      const [member] = await b.client.zrange(`${own}alive`, 0, -1);
      await b.client.eval(PODS, 2, `${own}pods`, `${own}alive`, 'other', '15000', member, '1');
      await b.countPods();
      return evalsha(...args);
    };
    // x's call ran under the reaped incarnation (counted nowhere); the pod holds it, and the next one adopts it.
    const x = (await admit(g, c)) as Ticket;
    const z = (await admit(g, c)) as Ticket;
    expect(await count()).toBe(3);
    for (const t of [w, x, z]) t.finish();
    await b.drain();
    expect(await count()).toBe(0);
  });

  it('a connection dropped and back within the pod ttl: a slot settled meanwhile comes back with the old incarnation', async () => {
    const proxy = await startTcpProxy(REDIS);
    const own = `${prefix}${randomUUID()}:`;
    const b = await backend(`redis://127.0.0.1:${proxy.port}`, 'local', own, 600);
    const direct = await backend(undefined, 'local', `${prefix}${randomUUID()}:`);
    const g = new Governor({ backend: b });
    const c = world({ limits: { concurrency: 2 } });
    const count = async () => Number((await direct.client.hget(`${own}${c.key.governance!.rules[0].id}|n`, 't')) ?? 0);
    const t = (await admit(g, c)) as Ticket;
    expect(await count()).toBe(1);
    await proxy.down();
    await new Promise((r) => setTimeout(r, 100));
    expect(b.degraded).toBe(true);
    t.finish();
    await proxy.up();
    await b.ready(5000);
    // Back well within the ttl; the incarnation that counted the slot no longer beats, and is reaped after the ttl.
    await new Promise((r) => setTimeout(r, 1500));
    expect(await count()).toBe(0);
    await proxy.close();
  });

  it('serves from the local view while Redis is cut, then shares again; fail-closed refuses rates meanwhile', async () => {
    const proxy = await startTcpProxy(REDIS);
    const url = `redis://127.0.0.1:${proxy.port}`;
    // Each alone under its own prefix: a pod that saw no other takes whole limits while degraded.
    const open = await backend(url, 'local', `${prefix}solo:`);
    const closed = await backend(url, 'refuse', `${prefix}closed:`);
    await open.countPods();
    expect(open.share.pods).toBe(1);
    const c = world({ limits: { rpm: 2 }, budget: { total: '1' } });
    const g = new Governor({ backend: open });
    const gc = new Governor({ backend: closed });
    expect(await admit(g, c)).not.toBeInstanceOf(GatewayError);
    await proxy.down();
    await new Promise((r) => setTimeout(r, 100));
    expect(open.degraded).toBe(true);
    // Local limiter: this pod alone holds the key to 2 per minute from its own counters.
    const local = [await admit(g, c), await admit(g, c), await admit(g, c)];
    expect(local.filter((r) => !(r instanceof GatewayError))).toHaveLength(2);
    for (const t of local) if (t && !(t instanceof GatewayError)) {
      t.charged({ input: 1, output: 1, cacheRead: 0, cacheWrite: 0, costPoints: '0.25' } as LedgerRow);
      t.finish();
    }
    expect(await admit(gc, c)).toMatchObject({ kind: 'rate_limited' });
    await proxy.up();
    await open.ready(5000);
    await new Promise((r) => setTimeout(r, 200));
    expect(open.degraded).toBe(false);
    // The spend made while degraded reached Redis: the shared counter shows it.
    const view = await g.describe(c.key);
    expect(view.backend).toBe('redis');
    // 0.5 charged while degraded, plus the 0.0001 reservation of the first request (never finished here).
    expect(view.budgets[0].spent).toBe('0.5001');
    await proxy.close();
  });

  it('while Redis is cut, each pod takes its share of every limit and of what was left of a budget', async () => {
    const proxy = await startTcpProxy(REDIS);
    const url = `redis://127.0.0.1:${proxy.port}`;
    const pods = [await backend(url, 'local', `${prefix}share:`), await backend(url, 'local', `${prefix}share:`)];
    await Promise.all(pods.map((b) => b.countPods()));
    expect(pods.map((b) => b.share.pods)).toEqual([2, 2]);
    const rates = world({ limits: { rpm: 6 } });
    const slots = world({ limits: { concurrency: 3 } });
    const money = world({ budget: { total: '1' } });
    const gs = pods.map((b) => new Governor({ backend: b }));
    const settle = (t: Ticket | GatewayError | undefined, cost: string) => {
      if (!t || t instanceof GatewayError) throw new Error('refused');
      t.charged({ input: 1, output: 1, cacheRead: 0, cacheWrite: 0, costPoints: cost } as LedgerRow);
      t.finish();
    };
    // 0.4 of the budget spent before the cut, and both pods have seen it in an answer.
    settle(await admit(gs[0], money), '0.4');
    await pods[0].drain();
    for (const g of gs) settle(await admit(g, money), '0');
    for (const b of pods) await b.drain();
    await proxy.down();
    await new Promise((r) => setTimeout(r, 100));
    expect(pods.every((b) => b.degraded)).toBe(true);
    for (const g of gs) {
      // rpm 6 over two pods: 3 each (alone each would admit all 4).
      const r = [];
      for (let i = 0; i < 4; i++) r.push(await admit(g, rates));
      expect(r.map((x) => x instanceof GatewayError)).toEqual([false, false, false, true]);
      // Three slots over two pods: 2 each, held.
      const held = [await admit(g, slots), await admit(g, slots), await admit(g, slots)];
      expect(held.map((x) => x instanceof GatewayError)).toEqual([false, false, true]);
      // What was left (0.6) over two pods: each may reach 0.4 + 0.3, so 0.25 charges are admitted at 0.4 and 0.65
      // and refused at 0.9 (alone a pod would admit that one too and the two could spend 1.9).
      const spent = [];
      for (let i = 0; i < 3; i++) {
        const t = await admit(g, money);
        spent.push(t instanceof GatewayError ? t.kind : 'admitted');
        if (!(t instanceof GatewayError)) settle(t, '0.25');
      }
      expect(spent).toEqual(['admitted', 'admitted', 'quota_exceeded']);
    }
    // The ledger tells pod 1 the spend is 0.95 (it knew 0.9): the rest, 0.05, is shared from there, so one more fits.
    await pods[1].raiseSpend(money.key.governance!.rules[0].id + 'total', 950_000_000_000_000n, 0);
    expect(await admit(gs[1], money)).not.toBeInstanceOf(GatewayError);
    await proxy.close();
  });
});
