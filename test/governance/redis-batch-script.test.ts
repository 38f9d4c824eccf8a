// The batch script against the machine's real Redis (its own key prefix; nothing else is touched): concurrency as
// counts per pod incarnation, and the heartbeat script that reaps an incarnation gone silent.
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { BATCH, PODS } from '../../gateway/governance/redis-scripts.ts';
import { deleteRedisPrefix } from '../../bench/redis-keys.ts';

const redis = new Redis({ host: '127.0.0.1', port: 6379, lazyConnect: true });
const prefix = `tg-review:${randomUUID()}:`;
const ADMITTED = '+';

afterAll(async () => {
  redis.disconnect();
  // Only this run's keys: SCAN by prefix, never FLUSH.
  await deleteRedisPrefix('redis://127.0.0.1:6379', prefix);
});

/** One call of pod incarnation `member` on a concurrency rule of limit 2 (the hash `key`). */
function call(key: string, member: string, reg: 0 | 1, ...ops: string[]): Promise<string[]> {
  return redis.eval(BATCH, 1, key, `I ${prefix}alive ${member} ${reg} 1`, 'G 0 c 2', ...ops) as Promise<string[]>;
}

/** A heartbeat of `member` with a ttl; `leaving` reaps it at once. Answers [pods, present]. */
function beat(member: string, ttlMs: number, leaving = false): Promise<[number, number]> {
  return redis.eval(PODS, 2, `${prefix}pods`, `${prefix}alive`, 'pod', String(ttlMs), member, leaving ? '1' : '0') as Promise<[number, number]>;
}

describe('batch script, concurrency counts', () => {
  it('counts a settlement sent again only if the call that first carried it never ran', async () => {
    const key = `${prefix}t`;
    const done = `${prefix}alive|p.1|d`;
    // A tpm rule of 60,000 a minute: one token is one ms of its theoretical arrival time.
    const run = (...ops: string[]) => redis.eval(BATCH, 1, key, 'G 0 t 60000', ...ops) as Promise<string[]>;
    const tat = async () => Number(await redis.get(key));
    await run('A 1 100000 10 0 0');
    expect(await tat()).toBe(100010);
    // Call 7 of incarnation p.1 settles 5 more tokens, and keeps its number.
    expect(await run(`I ${prefix}alive p.1 1 7`, 'S 1 100000 5 0 0 0')).toEqual(['1']);
    expect(await tat()).toBe(100015);
    expect(await redis.get(done)).toBe('7');
    expect(await redis.pttl(done)).toBeGreaterThan(590_000);
    // Its settlement sent again (its answer was lost): call 7 ran, so it counts no more; one of call 8, which never
    // ran, counts.
    await run(`T 1 100000 5 0 0 ${done} 7`);
    expect(await tat()).toBe(100015);
    await run(`T 1 100000 3 0 0 ${done} 8`);
    expect(await tat()).toBe(100018);
  });


  it('admits a rules list\'s requests in one pass when all fit, else one by one in order; settles them summed', async () => {
    const key = `${prefix}c3|n`;
    // Three requests on a concurrency limit of 2: the second is the last that fits, the third is refused.
    expect(await call(key, 'd.1', 1, 'A 1 100000 1 0 0 1 0 0')).toEqual(['1', ADMITTED]);
    expect(await redis.hgetall(key)).toEqual({ t: '2', 'd.1': '2' });
    await call(key, 'd.1', 0, 'S 1 100001 0 0 0 2');
    expect(await call(key, 'd.1', 0, 'A 1 100002 1 0 0 1 0 0 1 0 0')).toEqual(['1', `${ADMITTED},${ADMITTED},0 0 1000`]);
    expect(await redis.hgetall(key)).toEqual({ t: '2', 'd.1': '2' });
    // Summed settlements never free more than the incarnation holds.
    await call(key, 'd.1', 0, 'S 1 100003 0 0 0 5');
    expect(await redis.hgetall(key)).toEqual({ t: '0', 'd.1': '0' });
    // A budget of 1 point with 0.4 spent: 0.3 + 0.3 fits whole (the state is the spend before the first); with a third
    // reservation the third request starts at 1.0, spent, and the group goes one by one.
    const b = `${prefix}b3`;
    await redis.hset(b, 'w', '0', 'f', String(4e14));
    const spend = (...ops: string[]) => redis.eval(BATCH, 1, b, 'G 0 b 1 0 0', ...ops) as Promise<string[]>;
    expect(await spend(`A 1 100000 1 0 ${3e14} 1 0 ${3e14}`)).toEqual([`+ 0 ${4e14}`]);
    expect(await redis.hmget(b, 'w', 'f')).toEqual(['1', '0']);
    await redis.hset(b, 'w', '0', 'f', String(4e14));
    expect(await spend(`A 1 100000 1 0 ${3e14} 1 0 ${3e14} 1 0 ${3e14}`)).toEqual([`+ 0 ${4e14},+ 0 ${7e14},0 0 0`]);
    // An rpm of 3 (one request every 20 s): the state is each rule's arrival time, never before now.
    const r = `${prefix}r3`;
    const rpm = (...ops: string[]) => redis.eval(BATCH, 1, r, 'G 0 r 3', ...ops) as Promise<string[]>;
    expect(await rpm('A 1 100000 1 0 0 1 0 0')).toEqual(['+ 100000']);
    expect(await redis.get(r)).toBe('140000');
    // The refusal names the arrival time as the admitted request before it left it.
    expect(await rpm('A 1 110000 1 0 0 1 0 0')).toEqual(['+ 140000,0 0 10000 160000']);
  });

  it('counts every incarnation in the total, frees a slot only when told, and a reaped incarnation gives its slots back', async () => {
    const key = `${prefix}c1|n`;
    // Pod a registers and takes both slots; pod b is refused.
    expect(await call(key, 'a.1', 1, 'A 1 100000 1 0 0', 'A 1 100000 1 0 0')).toEqual(['1', ADMITTED, ADMITTED]);
    expect(await call(key, 'b.1', 1, 'A 1 100000 1 0 0')).toEqual(['1', '0 0 1000']);
    expect(await redis.hgetall(key)).toEqual({ t: '2', 'a.1': '2' });
    // A settlement that does not free (a replay: its slot is no longer the pod's to free) frees nothing; one that does, one.
    await call(key, 'a.1', 0, 'S 1 100001 0 0 0 0');
    expect(await call(key, 'b.1', 0, 'A 1 100001 1 0 0')).toEqual(['1', '0 0 1000']);
    await call(key, 'a.1', 0, 'S 1 100001 0 0 0 1');
    expect(await call(key, 'b.1', 0, 'A 1 100002 1 0 0')).toEqual(['1', ADMITTED]);
    expect(await redis.hgetall(key)).toEqual({ t: '2', 'a.1': '1', 'b.1': '1' });
    // Pod c registers on this rule and holds nothing by the time it dies (a share of 0 is reaped too).
    await call(key, 'b.1', 0, 'S 1 100002 0 0 0 1');
    expect(await call(key, 'c.1', 1, 'A 1 100002 1 0 0', 'S 1 100002 0 0 0 1')).toEqual(['1', ADMITTED]);
    expect(await call(key, 'b.1', 0, 'A 1 100003 1 0 0')).toEqual(['1', ADMITTED]);
    expect(await redis.hgetall(key)).toEqual({ t: '2', 'a.1': '1', 'b.1': '1', 'c.1': '0' });
    // Pods a and c die: b's heartbeat reaps them once they have been silent past the ttl.
    await new Promise((r) => setTimeout(r, 30));
    expect(await beat('b.1', 20)).toEqual([1, 1]);
    expect(await redis.hgetall(key)).toEqual({ t: '1', 'b.1': '1' });
    expect(await redis.exists(`${prefix}alive|a.1`)).toBe(0);
    expect(await redis.exists(`${prefix}alive|c.1`)).toBe(0);
    expect(await redis.zrange(`${prefix}alive`, 0, -1)).toEqual(['b.1']);
    await beat('b.1', 20, true);
    expect(await redis.hgetall(key)).toEqual({ t: '0' });
  });

  it('a reaped incarnation counts nothing until its pod registers a new one, which adopts the slots the pod holds', async () => {
    const key = `${prefix}c2|n`;
    expect(await call(key, 'a.1', 1, 'A 1 100000 1 0 0')).toEqual(['1', ADMITTED]);
    // Reaped while alive (a stalled pod): its heartbeat does not bring it back.
    await beat('a.1', 60_000, true);
    expect(await beat('a.1', 60_000)).toEqual([1, 0]);
    // Its next call is told so, and neither takes nor frees anything: admitted against the total, counted nowhere.
    expect(await call(key, 'a.1', 0, 'A 1 100001 1 0 0', 'S 1 100001 0 0 0 1')).toEqual(['0', ADMITTED]);
    expect(await redis.hgetall(key)).toEqual({ t: '0' });
    // The new incarnation adopts what the pod says it holds (L0 and L1: its reaped call freed nothing) in the call
    // that registers it; a second registering call (sent before the first was answered) adopts nothing more.
    expect(await redis.eval(BATCH, 1, key, `I ${prefix}alive a.2 1 1 ${key} 2`, 'G 0 c 2', 'A 1 100002 1 0 0')).toEqual(['1', '0 0 1000']);
    expect(await redis.eval(BATCH, 1, key, `I ${prefix}alive a.2 1 1 ${key} 2`, 'G 0 c 2', 'S 1 100003 0 0 0 1')).toEqual(['1']);
    expect(await redis.hgetall(key)).toEqual({ t: '1', 'a.2': '1' });
    expect(await redis.smembers(`${prefix}alive|a.2`)).toEqual([key]);
  });
});
