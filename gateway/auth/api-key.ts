// Key format and hashing (docs/contract.md, keys): sk_live_ + 32 random bytes in base62; only the SHA-256 is stored.
import { hash, randomBytes } from 'node:crypto';

export const KEY_PREFIX = 'sk_live_';
const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
// 62^43 > 2^256, so 43 characters hold any 32-byte value; fixed width keeps keys uniform.
const BODY_LENGTH = 43;
const DISPLAY_CHARS = 6;

export interface GeneratedKey {
  key: string;
  hash: string;
  prefix: string;
}

export function generateApiKey(): GeneratedKey {
  let n = BigInt('0x' + randomBytes(32).toString('hex'));
  let body = '';
  for (let i = 0; i < BODY_LENGTH; i++) {
    body = ALPHABET[Number(n % 62n)] + body;
    n /= 62n;
  }
  const key = KEY_PREFIX + body;
  return { key, hash: hashApiKey(key), prefix: displayPrefix(key) };
}

export function hashApiKey(key: string): string {
  // One-shot hash: every request hashes the presented key, and a Hash object per call costs more than the digest.
  return 'sha256:' + hash('sha256', key, 'hex');
}

export function displayPrefix(key: string): string {
  return key.slice(0, KEY_PREFIX.length + DISPLAY_CHARS);
}

/** Cheap shape check before hashing: rejects obvious garbage without touching the key table. */
export function looksLikeApiKey(key: string): boolean {
  return key.length === KEY_PREFIX.length + BODY_LENGTH && key.startsWith(KEY_PREFIX);
}
