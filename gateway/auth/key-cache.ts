// Presented key -> its hash and resolved key, so a key seen before is not hashed again (SHA-256 per request was the
// largest cost of authentication). Freshness: the cache belongs to one key table (a snapshot change brings a new
// table and empties it), and every hit is checked against the table itself, so a key the table no longer holds, or
// holds as another object (revoked, expired, edited), is never answered from here, not even once.
import type { RuntimeKey } from '../snapshot/runtime.ts';

interface Hit {
  hash: string;
  key: RuntimeKey;
}

/** Bound on remembered keys: only keys that resolved are kept, so at most the table's size; a full cache starts over. */
const MAX_KEYS = 4096;

let table: ReadonlyMap<string, RuntimeKey> | undefined;
const hits = new Map<string, Hit>();

/** The key `presented` resolves to in `keysByHash`, hashing it only when it is not remembered. */
export function lookupKey(keysByHash: ReadonlyMap<string, RuntimeKey>, presented: string, hashOf: (k: string) => string): RuntimeKey | undefined {
  if (keysByHash !== table) {
    hits.clear();
    table = keysByHash;
  }
  const hit = hits.get(presented);
  // The table may change in place: a hit counts only while the table still maps its hash to the same key.
  if (hit !== undefined && keysByHash.get(hit.hash) === hit.key) return hit.key;
  const hash = hashOf(presented);
  const key = keysByHash.get(hash);
  if (key === undefined) {
    // A key that no longer resolves leaves no copy of itself behind.
    if (hit !== undefined) hits.delete(presented);
    return undefined;
  }
  if (hits.size >= MAX_KEYS) hits.clear();
  hits.set(presented, { hash, key });
  return key;
}
