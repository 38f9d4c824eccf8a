// Finds the caller's key in the snapshot (docs/contract.md, keys). A miss never touches anything but one hash map.
import type { IncomingHttpHeaders } from 'node:http';
import { GatewayError } from '../errors.ts';
import type { RuntimeKey, RuntimeSnapshot } from '../snapshot/runtime.ts';
import { hashApiKey, looksLikeApiKey } from './api-key.ts';
import { lookupKey } from './key-cache.ts';

/** The presented credential: Authorization: Bearer, x-api-key, and on the gemini path x-goog-api-key or ?key=. */
export function presentedKey(headers: IncomingHttpHeaders, geminiKey?: string): string | undefined {
  const auth = headers.authorization;
  if (typeof auth === 'string' && auth.length > 7 && auth.slice(0, 7).toLowerCase() === 'bearer ') return auth.slice(7).trim();
  const x = headers['x-api-key'];
  if (typeof x === 'string' && x) return x.trim();
  if (geminiKey !== undefined) return geminiKey;
  return undefined;
}

export function authenticate(snapshot: RuntimeSnapshot, presented: string | undefined, now = Date.now()): RuntimeKey {
  if (!presented) throw new GatewayError('invalid_api_key', 'Missing API key. Send it as "Authorization: Bearer sk_live_..." or "x-api-key".');
  const key = looksLikeApiKey(presented) ? lookupKey(snapshot.keysByHash, presented, hashApiKey) : undefined;
  if (!key) throw new GatewayError('invalid_api_key', `Incorrect API key provided: ${mask(presented)}.`);
  if (key.disabled) throw new GatewayError('invalid_api_key', `API key ${key.prefix}… has been revoked.`);
  if (key.expiresAtMs !== undefined && key.expiresAtMs <= now) throw new GatewayError('invalid_api_key', `API key ${key.prefix}… has expired.`);
  return key;
}

// Echo only enough of a wrong key to recognise it, never the whole secret.
function mask(k: string): string {
  return k.length <= 12 ? '***' : `${k.slice(0, 8)}***${k.slice(-3)}`;
}
