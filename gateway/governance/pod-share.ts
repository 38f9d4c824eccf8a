// While Redis is unreachable each pod governs alone. Alone with the whole limit, P pods would admit P times it and
// could each spend what was left of a budget. So a degraded pod takes its share instead: every rate and concurrency
// limit divided by the number of pods it last saw alive in Redis (rounded up, at least 1), and of every budget, what
// was left when it lost Redis (or when the ledger last told it the spend) divided the same way.
import type { Rule } from './rules.ts';

export class PodShare {
  /** Pods alive at the last presence check, this one included; 1 until Redis has answered one. */
  pods = 1;
  /** Per budget counter: the spend the current share is cut from (all pods' spend as this pod last knew it). */
  private readonly base = new Map<string, bigint>();
  private epoch = 0;
  // Per spend-key list (one per rules list and period, the backends' cache key): the shared rules, while current.
  private readonly cache = new WeakMap<readonly (string | undefined)[], { epoch: number; rules: readonly Rule[] }>();

  setPods(n: number): void {
    const pods = Math.max(1, Math.floor(n));
    if (pods === this.pods) return;
    this.pods = pods;
    this.epoch++;
  }

  /** Redis answers again: the next outage cuts its shares from what is spent then. */
  reset(): void {
    if (this.base.size === 0) return;
    this.base.clear();
    this.epoch++;
  }

  /** The ledger raised a counter to `units` while degraded: what is left from there is shared again. */
  rebase(spendKey: string, units: bigint): void {
    const b = this.base.get(spendKey);
    if (b === undefined || b >= units) return;
    this.base.set(spendKey, units);
    this.epoch++;
  }

  /**
   * This pod's rules while degraded: the same ids (so the same local counters) with its share of each limit and
   * budget. `spent` reads the local view of a budget counter; a counter's first read fixes its base.
   */
  of(rules: readonly Rule[], spendKeys: readonly (string | undefined)[], spent: (spendKey: string) => bigint): readonly Rule[] {
    if (this.pods === 1) return rules;
    const c = this.cache.get(spendKeys);
    if (c !== undefined && c.epoch === this.epoch) return c.rules;
    const pods = BigInt(this.pods);
    const shared = rules.map((r, i): Rule => {
      if (r.kind !== 'budget') return { ...r, limit: Math.max(1, Math.ceil(r.limit / this.pods)) };
      const key = spendKeys[i]!;
      let base = this.base.get(key);
      if (base === undefined) this.base.set(key, (base = spent(key)));
      const units = r.units!;
      // Spent already: the budget refuses as it is. Otherwise the pod may reach its base plus its part of the rest.
      return base >= units ? r : { ...r, units: base + (units - base) / pods };
    });
    this.cache.set(spendKeys, { epoch: this.epoch, rules: shared });
    return shared;
  }
}
