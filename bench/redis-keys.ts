// Removes a bench's own Redis keys by prefix (SCAN + DEL): never FLUSH, the machine's Redis is shared. Finds a local
// Redis server's process, whose CPU the limits bench counts with the gateway's.
import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';

export async function deleteRedisPrefix(url: string, prefix: string): Promise<void> {
  const redis = new Redis(url);
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length) await redis.del(...keys);
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}

/**
 * The Redis (or Valkey) server's process id when it runs on this machine (its INFO names a pid whose /proc entry is a
 * redis or valkey server), so a bench can count its CPU like the gateway's; undefined for a remote one.
 */
export async function localRedisPid(url: string): Promise<number | undefined> {
  const redis = new Redis(url);
  try {
    const pid = Number(/^process_id:(\d+)/m.exec(await redis.info('server'))?.[1]);
    if (!Number.isInteger(pid)) return undefined;
    const comm = readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
    return /^(redis|valkey)-server$/.test(comm) ? pid : undefined;
  } catch {
    return undefined;
  } finally {
    redis.disconnect();
  }
}
