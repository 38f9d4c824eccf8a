// In-process counters for one pod (standalone or replicas: 1), and the local view used while Redis is down.
// Rates are GCRA (theoretical arrival time per rule); budgets are exact BigInt femtopoints.
import type { AdmitInput, CounterBackend, SettleInput, Verdict } from './backend.ts';
import { EPSILON_MS, WINDOW_MS } from './backend.ts';
import type { Rule } from './rules.ts';

/** One rate counter's theoretical arrival time (ms; -Infinity before its first request) or one concurrency count. */
interface Cell {
  v: number;
}

/** One budget counter's spend (femtopoints). */
export interface SpendCell {
  v: bigint;
}

/** A rules list's cells, parallel to it: rate and concurrency rules' in `rates`, budgets' in `spend`. */
interface Cells {
  rates: (Cell | undefined)[];
  spend: (SpendCell | undefined)[];
}

/**
 * Budget counters by name (rule id + period id). Each is a cell the backend keeps a per-list reference to, so a
 * request reads and adds its budgets without looking names up; get and set are for the rest (Redis' local view,
 * reconciliation).
 */
export class SpendCounters {
  private readonly cells = new Map<string, SpendCell>();

  get(key: string): bigint | undefined {
    return this.cells.get(key)?.v;
  }

  set(key: string, units: bigint): this {
    this.cell(key).v = units;
    return this;
  }

  cell(key: string): SpendCell {
    let c = this.cells.get(key);
    if (c === undefined) this.cells.set(key, (c = { v: 0n }));
    return c;
  }
}

export class MemoryBackend implements CounterBackend {
  readonly kind = 'memory';
  private readonly tat = new Map<string, Cell>();
  private readonly inFlight = new Map<string, Cell>();
  readonly spend = new SpendCounters();
  // Per spend-key list (the governor's is one per rules list and day; backend.ts): each rule's cell, so admission and
  // settlement walk arrays instead of looking up counter names. Cells are shared by name, and outlive a snapshot reload.
  private readonly cellLists = new WeakMap<readonly (string | undefined)[], Cells>();
  // Scratch for one admission (synchronous): what the check pass computed, written by the commit pass.
  private nextTat = new Float64Array(16);
  // The verdict handed out by every admission: read before the next one (backend.ts), so no object or arrays per request.
  private readonly verdict: Verdict = { ok: true, refused: -1, retryAfterMs: 0, remaining: [], spent: [], resetMs: [] };

  private cellsOf(rules: readonly Rule[], spendKeys: readonly (string | undefined)[]): Cells {
    let c = this.cellLists.get(spendKeys);
    if (c === undefined) {
      c = {
        rates: rules.map((r) => (r.kind === 'budget' ? undefined : cell(r.kind === 'concurrency' ? this.inFlight : this.tat, r.id, r.kind === 'concurrency' ? 0 : -Infinity))),
        spend: spendKeys.map((k) => (k === undefined ? undefined : this.spend.cell(k))),
      };
      this.cellLists.set(spendKeys, c);
    }
    return c;
  }

  admit(a: AdmitInput): Verdict {
    const rules = a.rules;
    const n = rules.length;
    const now = a.now;
    const { rates: cells, spend: spendCells } = this.cellsOf(rules, a.spendKeys);
    if (this.nextTat.length < n) this.nextTat = new Float64Array(n);
    const nextTat = this.nextTat;
    const v = this.verdict;
    const spent = v.spent;
    v.ok = true;
    v.refused = -1;
    v.retryAfterMs = 0;
    // Exactly this list's length: nothing of a longer list's answer is left behind its rules.
    if (v.remaining.length !== n) {
      v.remaining.length = n;
      v.spent.length = n;
      v.resetMs.length = n;
    }
    // Check every rule first, change nothing unless all admit.
    for (let i = 0; i < n; i++) {
      const r = rules[i];
      if (r.kind === 'rpm' || r.kind === 'tpm') {
        const t = WINDOW_MS / r.limit;
        const cost = r.kind === 'rpm' ? 1 : Math.max(1, Math.min(a.tokens, r.limit));
        const next = Math.max(cells[i]!.v, now) + cost * t;
        const over = next - now - WINDOW_MS;
        if (over > EPSILON_MS) return this.refuse(v, i, over, rules, cells, now);
        nextTat[i] = next;
        v.remaining[i] = Math.max(0, Math.floor((WINDOW_MS - (next - now) + EPSILON_MS) / t));
        v.resetMs[i] = next - now;
      } else if (r.kind === 'concurrency') {
        const used = cells[i]!.v;
        if (used >= r.limit) return this.refuse(v, i, 1000, rules, cells, now);
        v.remaining[i] = r.limit - used - 1;
        v.resetMs[i] = 0;
      } else {
        const s = spendCells[i]!.v;
        if (s >= r.units!) return this.refuse(v, i, 0, rules, cells, now);
        // What the counter becomes once all admit.
        spent[i] = s + a.reserve;
        v.resetMs[i] = 0;
      }
    }
    for (let i = 0; i < n; i++) {
      const k = rules[i].kind;
      if (k === 'rpm' || k === 'tpm') cells[i]!.v = nextTat[i];
      else if (k === 'concurrency') cells[i]!.v++;
      else spendCells[i]!.v = spent[i];
    }
    return v;
  }

  /**
   * The refusal, with what is left of every rate rule as it stands (the refused request took nothing): the rate-limit
   * headers of a 429 name the tightest rules as a success's do.
   */
  private refuse(v: Verdict, i: number, retryAfterMs: number, rules: readonly Rule[], cells: Cells['rates'], now: number): Verdict {
    v.ok = false;
    v.refused = i;
    v.retryAfterMs = retryAfterMs;
    for (let j = 0; j < rules.length; j++) {
      const r = rules[j];
      if (r.kind !== 'rpm' && r.kind !== 'tpm') continue;
      const t = WINDOW_MS / r.limit;
      const ahead = Math.max(cells[j]!.v, now) - now;
      // A settlement of more tokens than estimated may have taken the bucket past a full window: nothing is left.
      v.remaining[j] = Math.max(0, Math.floor((WINDOW_MS - ahead + EPSILON_MS) / t));
      v.resetMs[j] = ahead;
    }
    return v;
  }

  settle(s: SettleInput): void {
    const { rates: cells, spend: spendCells } = this.cellsOf(s.rules, s.spendKeys);
    for (let i = 0; i < s.rules.length; i++) {
      const r = s.rules[i];
      if (r.kind === 'tpm' && s.tokensDelta !== 0) {
        const c = cells[i]!;
        // From the bucket as it stands (never before now), and never back before now: tokens given back are no
        // credit. The same doubles as the Redis script's.
        const next = Math.max(c.v, s.now) + s.tokensDelta * (WINDOW_MS / r.limit);
        c.v = next < s.now ? s.now : next;
      } else if (r.kind === 'concurrency') {
        const c = cells[i]!;
        c.v = c.v <= 1 ? 0 : c.v - 1;
      } else if (r.kind === 'budget' && s.spendDelta !== 0n) spendCells[i]!.v += s.spendDelta;
    }
  }

  peek(rules: readonly Rule[], spendKeys: readonly (string | undefined)[], now: number): Promise<Verdict> {
    const v: Verdict = { ok: true, refused: -1, retryAfterMs: 0, remaining: [], spent: [], resetMs: [] };
    rules.forEach((r, i) => {
      v.resetMs[i] = 0;
      if (r.kind === 'rpm' || r.kind === 'tpm') {
        const t = WINDOW_MS / r.limit;
        const used = Math.max(this.tat.get(r.id)?.v ?? now, now) - now;
        v.remaining[i] = Math.max(0, Math.floor((WINDOW_MS - used + EPSILON_MS) / t));
        v.resetMs[i] = used;
      } else if (r.kind === 'concurrency') v.remaining[i] = r.limit - (this.inFlight.get(r.id)?.v ?? 0);
      else v.spent[i] = this.spend.get(spendKeys[i]!) ?? 0n;
    });
    return Promise.resolve(v);
  }

  /** The local view's spend for a counter (seeded from Redis answers and the ledger). */
  spent(key: string): bigint {
    return this.spend.get(key) ?? 0n;
  }

  raiseSpend(key: string, units: bigint): Promise<void> {
    if ((this.spend.get(key) ?? 0n) < units) this.spend.set(key, units);
    return Promise.resolve();
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}

function cell(map: Map<string, Cell>, id: string, initial: number): Cell {
  let c = map.get(id);
  if (c === undefined) map.set(id, (c = { v: initial }));
  return c;
}
