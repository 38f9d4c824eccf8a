// The batch script against the machine's real Redis (its own key prefix; nothing else is touched): its per-call
// counter cache must answer as running each operation's commands in turn would.
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { BATCH } from '../../gateway/governance/redis-scripts.ts';
import { deleteRedisPrefix } from '../../bench/redis-keys.ts';

const redis = new Redis({ host: '127.0.0.1', port: 6379, lazyConnect: true });
const prefix = `tg-review:${randomUUID()}:`;

afterAll(async () => {
  redis.disconnect();
  // Only this run's keys: SCAN by prefix, never FLUSH.
  await deleteRedisPrefix('redis://127.0.0.1:6379', prefix);
});

describe('batch script, concurrency sets', () => {
  it('clears a lease this call added that ended before a time it had already cleared up to', async () => {
    const key = `${prefix}c`;
    // Limit 2. L0 at 200 s holds a slot to 260 s; L1, admitted with a clock 100 s behind, holds one to 160 s; at
    // 200 s again L1 has ended, so L2 is admitted with none left: what ZREMRANGEBYSCORE before each ZCARD gives.
    const out = (await redis.eval(BATCH, 1, key, 'G 0 c 2', 'A 1 200000 L0 60000 1 0 0', 'A 1 100000 L1 60000 1 0 0', 'A 1 200000 L2 60000 1 0 0')) as string[];
    // Admitted, each: no rpm or tpm rule (-1) and no budget.
    expect(out).toEqual(['1 -1 0 0 -1 0 0', '1 -1 0 0 -1 0 0', '1 -1 0 0 -1 0 0']);
    expect(await redis.zrange(key, 0, -1)).toEqual(['L0', 'L2']);
  });

  it('frees a slot once however often its settlement is sent, and leaves no settlement mark without tokens or spend to settle', async () => {
    const key = `${prefix}c2`;
    const call = (...ops: string[]) => redis.eval(BATCH, 1, key, 'G 0 c 2', ...ops) as Promise<string[]>;
    expect(await call('A 1 100000 L0 60000 1 0 0', 'A 1 100000 L1 60000 1 0 0')).toEqual(['1 -1 0 0 -1 0 0', '1 -1 0 0 -1 0 0']);
    // L0's settlement sent twice (a replay after a lost answer): one slot freed, not two.
    await call('S 1 100001 L0 0 0 0', 'S 1 100001 L0 0 0 0');
    expect(await redis.zrange(key, 0, -1)).toEqual(['L1']);
    expect(await call('A 1 100002 L2 60000 1 0 0', 'A 1 100002 L3 60000 1 0 0')).toEqual(['1 -1 0 0 -1 0 0', '0 0 1000']);
    expect(await redis.exists(`${key}|s|L0`, `${key}|s|L1`, `${key}|s|L2`)).toBe(0);
  });
});
