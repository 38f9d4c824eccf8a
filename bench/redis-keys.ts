// Removes a bench's own Redis keys by prefix (SCAN + DEL): never FLUSH, the machine's Redis is shared.
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
