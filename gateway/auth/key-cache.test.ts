import { describe, expect, it } from 'vitest';
import type { RuntimeKey } from '../snapshot/runtime.ts';
import { lookupKey } from './key-cache.ts';

const key = (id: string): RuntimeKey => ({ id, prefix: 'sk_live_x', organization: undefined as never, project: 'p', disabled: false, expiresAtMs: undefined, governance: undefined, config: undefined as never });

/** A hash function that counts its calls. */
function counting(): { hashOf: (k: string) => string; calls: () => number } {
  let n = 0;
  return { hashOf: (k) => (n++, `h:${k}`), calls: () => n };
}

describe('lookupKey', () => {
  it('hashes a key once while its table maps it to the same key', () => {
    const k = key('k1');
    const table = new Map([['h:a', k]]);
    const h = counting();
    expect(lookupKey(table, 'a', h.hashOf)).toBe(k);
    expect(lookupKey(table, 'a', h.hashOf)).toBe(k);
    expect(h.calls()).toBe(1);
    expect(lookupKey(table, 'b', h.hashOf)).toBeUndefined();
    expect(lookupKey(table, 'b', h.hashOf)).toBeUndefined();
    // Misses are not remembered: each is hashed.
    expect(h.calls()).toBe(3);
  });

  it('answers nothing from memory once the table (changed in place) drops or replaces the key', () => {
    const table = new Map([['h:a', key('k1')]]);
    const h = counting();
    expect(lookupKey(table, 'a', h.hashOf)?.id).toBe('k1');
    table.delete('h:a');
    expect(lookupKey(table, 'a', h.hashOf)).toBeUndefined();
    const edited = key('k1');
    edited.disabled = true;
    table.set('h:a', edited);
    expect(lookupKey(table, 'a', h.hashOf)).toBe(edited);
  });

  it('starts over with a new table', () => {
    const k = key('k1');
    const h = counting();
    expect(lookupKey(new Map([['h:a', k]]), 'a', h.hashOf)).toBe(k);
    // The same hash and key in another table: looked up again there, not trusted from the old one.
    const other = new Map([['h:a', key('k2')]]);
    expect(lookupKey(other, 'a', h.hashOf)?.id).toBe('k2');
    expect(h.calls()).toBe(2);
  });
});
