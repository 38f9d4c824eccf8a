// In-process counters for one pod (standalone or replicas: 1), and the local view used while Redis is down.
// Rates are GCRA (theoretical arrival time per rule); budgets are exact BigInt femtopoints.
import type { AdmitInput, CounterBackend, SettleInput, Verdict } from './backend.ts';
import { EPSILON_MS, WINDOW_MS } from './backend.ts';
import type { Rule } from './rules.ts';

export class MemoryBackend implements CounterBackend {
  readonly kind = 'memory';
  private readonly tat = new Map<string, number>();
  private readonly inFlight = new Map<string, number>();
  readonly spend = new Map<string, bigint>();

  admit(a: AdmitInput): Verdict {
    const n = a.rules.length;
    const v: Verdict = { ok: true, refused: -1, retryAfterMs: 0, remaining: new Array(n), resetMs: new Array(n) };
    // Check every rule first, change nothing unless all admit.
    for (let i = 0; i < n; i++) {
      const r = a.rules[i];
      if (r.kind === 'rpm' || r.kind === 'tpm') {
        const t = WINDOW_MS / r.limit;
        const cost = r.kind === 'rpm' ? 1 : Math.max(1, Math.min(a.tokens, r.limit));
        const base = Math.max(this.tat.get(r.id) ?? a.now, a.now);
        const next = base + cost * t;
        const over = next - a.now - WINDOW_MS;
        if (over > EPSILON_MS) return this.refuse(v, i, over);
        v.remaining[i] = Math.max(0, Math.floor((WINDOW_MS - (next - a.now) + EPSILON_MS) / t));
        v.resetMs[i] = next - a.now;
      } else if (r.kind === 'concurrency') {
        const used = this.inFlight.get(r.id) ?? 0;
        if (used >= r.limit) return this.refuse(v, i, 1000);
        v.remaining[i] = r.limit - used - 1;
        v.resetMs[i] = 0;
      } else {
        const spent = this.spend.get(a.spendKeys[i]!) ?? 0n;
        if (spent >= r.units!) return this.refuse(v, i, 0);
        v.remaining[i] = r.units! - spent - a.reserve;
        v.resetMs[i] = 0;
      }
    }
    for (let i = 0; i < n; i++) {
      const r = a.rules[i];
      if (r.kind === 'rpm' || r.kind === 'tpm') {
        const t = WINDOW_MS / r.limit;
        const cost = r.kind === 'rpm' ? 1 : Math.max(1, Math.min(a.tokens, r.limit));
        this.tat.set(r.id, Math.max(this.tat.get(r.id) ?? a.now, a.now) + cost * t);
      } else if (r.kind === 'concurrency') this.inFlight.set(r.id, (this.inFlight.get(r.id) ?? 0) + 1);
      else this.addSpend(a.spendKeys[i]!, a.reserve);
    }
    return v;
  }

  private refuse(v: Verdict, i: number, retryAfterMs: number): Verdict {
    v.ok = false;
    v.refused = i;
    v.retryAfterMs = retryAfterMs;
    return v;
  }

  settle(s: SettleInput): void {
    for (let i = 0; i < s.rules.length; i++) {
      const r = s.rules[i];
      if (r.kind === 'tpm' && s.tokensDelta !== 0) {
        const tat = this.tat.get(r.id);
        if (tat !== undefined) this.tat.set(r.id, tat + (s.tokensDelta * WINDOW_MS) / r.limit);
        else if (s.tokensDelta > 0) this.tat.set(r.id, s.now + (s.tokensDelta * WINDOW_MS) / r.limit);
      } else if (r.kind === 'concurrency') {
        const used = this.inFlight.get(r.id) ?? 0;
        if (used <= 1) this.inFlight.delete(r.id);
        else this.inFlight.set(r.id, used - 1);
      } else if (r.kind === 'budget' && s.spendDelta !== 0n) this.addSpend(s.spendKeys[i]!, s.spendDelta);
    }
  }

  private addSpend(key: string, units: bigint): void {
    this.spend.set(key, (this.spend.get(key) ?? 0n) + units);
  }

  peek(rules: readonly Rule[], spendKeys: readonly (string | undefined)[], now: number): Promise<Verdict> {
    const v: Verdict = { ok: true, refused: -1, retryAfterMs: 0, remaining: [], resetMs: [] };
    rules.forEach((r, i) => {
      if (r.kind === 'rpm' || r.kind === 'tpm') {
        const t = WINDOW_MS / r.limit;
        const used = Math.max(this.tat.get(r.id) ?? now, now) - now;
        v.remaining.push(Math.max(0, Math.floor((WINDOW_MS - used + EPSILON_MS) / t)));
        v.resetMs.push(used);
      } else if (r.kind === 'concurrency') {
        v.remaining.push(r.limit - (this.inFlight.get(r.id) ?? 0));
        v.resetMs.push(0);
      } else {
        v.remaining.push(r.units! - (this.spend.get(spendKeys[i]!) ?? 0n));
        v.resetMs.push(0);
      }
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
