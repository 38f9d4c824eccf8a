// The cluster-mode key index: key hash → key across all key shards, updated shard by shard.
import type { RuntimeBase, RuntimeKey } from './runtime.ts';

/** One key shard as indexed: `id` names its content ("name|checksum"). */
export interface IndexedShard {
  id: string;
  pairs: [string, RuntimeKey][];
}

/**
 * Key hash → key for the keys of every shard, with what the schema checks within one shard enforced across shards:
 * no id and no key twice. Updated in place (a request reads it synchronously, so it never sees a half-applied
 * change; a snapshot replaced by a newer one is never read again but through this same index).
 */
export class KeyIndex {
  readonly byHash = new Map<string, RuntimeKey>();
  private readonly ids = new Map<string, string>();
  /** Shard ("name|checksum") → its pairs, as indexed. */
  private readonly parts = new Map<string, [string, RuntimeKey][]>();
  readonly runtime: RuntimeBase;
  /** Set when `build` found a conflict (the index is then unusable). */
  problem: string | undefined;

  private constructor(runtime: RuntimeBase) {
    this.runtime = runtime;
  }

  static build(parts: IndexedShard[], runtime: RuntimeBase): KeyIndex {
    const ix = new KeyIndex(runtime);
    for (const p of parts) {
      ix.problem = ix.conflict(p.id, p.pairs, undefined, undefined);
      if (ix.problem) return ix;
      ix.add(p.id, p.pairs);
    }
    return ix;
  }

  /** Brings the index to `parts`; a conflict leaves it as it was and is returned. */
  update(parts: IndexedShard[]): string | undefined {
    const wanted = new Set(parts.map((p) => p.id));
    const leaving = [...this.parts.keys()].filter((id) => !wanted.has(id));
    const entering = parts.filter((p) => !this.parts.has(p.id));
    if (leaving.length === 0 && entering.length === 0) return undefined;
    const goneHashes = new Set<string>();
    const goneIds = new Set<string>();
    for (const id of leaving) {
      for (const [hash, k] of this.parts.get(id)!) {
        goneHashes.add(hash);
        goneIds.add(k.id);
      }
    }
    // Checked before anything moves, against what stays and what enters before it.
    const newHashes = new Set<string>();
    const newIds = new Set<string>();
    for (const p of entering) {
      const why = this.conflict(p.id, p.pairs, { hashes: goneHashes, ids: goneIds }, { hashes: newHashes, ids: newIds });
      if (why) return why;
    }
    for (const id of leaving) {
      for (const [hash, k] of this.parts.get(id)!) {
        if (this.byHash.get(hash) === k) this.byHash.delete(hash);
        if (this.ids.get(k.id) === hash) this.ids.delete(k.id);
      }
      this.parts.delete(id);
    }
    for (const p of entering) this.add(p.id, p.pairs);
    return undefined;
  }

  private conflict(part: string, pairs: [string, RuntimeKey][], gone: { hashes: Set<string>; ids: Set<string> } | undefined, fresh: { hashes: Set<string>; ids: Set<string> } | undefined): string | undefined {
    for (const [hash, k] of pairs) {
      const taken = (this.byHash.has(hash) && !gone?.hashes.has(hash)) || (this.ids.has(k.id) && !gone?.ids.has(k.id)) || fresh?.hashes.has(hash) || fresh?.ids.has(k.id);
      if (taken) return `${part.slice(0, part.indexOf('|'))}: key "${k.id}" is in more than one shard`;
      fresh?.hashes.add(hash);
      fresh?.ids.add(k.id);
    }
    return undefined;
  }

  private add(part: string, pairs: [string, RuntimeKey][]): void {
    for (const [hash, k] of pairs) {
      this.byHash.set(hash, k);
      this.ids.set(k.id, hash);
    }
    this.parts.set(part, pairs);
  }
}
