import { describe, expect, it } from 'vitest';
import type { RuntimeBase, RuntimeKey } from './runtime.ts';
import { KeyIndex } from './key-index.ts';

const runtime = {} as RuntimeBase;
const key = (id: string): RuntimeKey => ({ id, prefix: 'sk_live_x', organization: undefined as never, project: 'p', disabled: false, expiresAtMs: undefined, governance: undefined, config: undefined as never });
const shard = (id: string, ...keys: [string, string][]) => ({ id, pairs: keys.map(([hash, kid]) => [hash, key(kid)] as [string, RuntimeKey]) });

describe('KeyIndex', () => {
  it('moves only the shards that changed, in the same map', () => {
    const a1 = shard('s0|a1', ['h1', 'k1'], ['h2', 'k2']);
    const b1 = shard('s1|b1', ['h3', 'k3']);
    const ix = KeyIndex.build([a1, b1], runtime);
    expect(ix.problem).toBeUndefined();
    const map = ix.byHash;
    const k3 = map.get('h3');
    // k2 deleted, k4 added to shard 0; shard 1 untouched (its key object stays the same).
    expect(ix.update([shard('s0|a2', ['h1', 'k1'], ['h4', 'k4']), b1])).toBeUndefined();
    expect(ix.byHash).toBe(map);
    expect([...map.keys()].sort()).toEqual(['h1', 'h3', 'h4']);
    expect(map.get('h3')).toBe(k3);
    // A key moving between shards in one step (another shard count) is not a duplicate.
    expect(ix.update([shard('s0|a3', ['h1', 'k1']), shard('s1|b2', ['h3', 'k3'], ['h4', 'k4'])])).toBeUndefined();
    expect([...map.keys()].sort()).toEqual(['h1', 'h3', 'h4']);
    expect(map.get('h4')!.id).toBe('k4');
  });

  it('refuses a key or an id in two shards and leaves the index as it was', () => {
    const ix = KeyIndex.build([shard('s0|a', ['h1', 'k1']), shard('s1|b', ['h2', 'k2'])], runtime);
    const before = [...ix.byHash.entries()];
    expect(ix.update([shard('s0|a', ['h1', 'k1']), shard('s1|c', ['h2', 'k2'], ['h1', 'k9'])])).toMatch(/s1: key "k9" is in more than one shard/);
    expect(ix.update([shard('s0|a', ['h1', 'k1']), shard('s1|d', ['h2', 'k2'], ['h5', 'k1'])])).toMatch(/s1: key "k1" is in more than one shard/);
    expect(ix.update([shard('s0|e', ['h1', 'k1'], ['h7', 'k7']), shard('s1|f', ['h2', 'k2'], ['h7', 'k8'])])).toMatch(/key "k8" is in more than one shard/);
    expect([...ix.byHash.entries()]).toEqual(before);
    expect(KeyIndex.build([shard('s0|a', ['h1', 'k1']), shard('s1|b', ['h1', 'k2'])], runtime).problem).toMatch(/s1: key "k2"/);
  });
});
