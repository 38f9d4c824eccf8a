// What a counter store does for the governor: admit all rules of one request atomically, then settle them.
import type { Rule } from './rules.ts';

export interface AdmitInput {
  rules: readonly Rule[];
  /**
   * Budget counter names (rule id + period id), parallel to `rules` (undefined for rate rules). The governor hands out
   * one list per rules list and day, so a backend may cache what it derives from the rules by this list's identity.
   */
  spendKeys: readonly (string | undefined)[];
  now: number;
  /** Unique per request: names it in a shared backend's local view while the shared one is unreachable. */
  lease: string;
  /** Set by a shared backend: the request's concurrency slots are counted in it (and freed by its settlement). */
  counted: boolean;
  /** Tokens taken from every tpm rule at admission (the input estimate); settled to the real usage later. */
  tokens: number;
  /** Femtopoints reserved on every budget rule at admission; settled to the exact charge later. */
  reserve: bigint;
}

export interface Verdict {
  ok: boolean;
  /** Index of the rule that refused. */
  refused: number;
  retryAfterMs: number;
  /** Per rate or concurrency rule after admission: what is left (requests, tokens, slots). */
  remaining: number[];
  /**
   * Per budget rule: its counter once admitted (femtopoints, the reservation included; the budget minus it is what is
   * left, may be negative). Kept apart from `remaining` so an admission computes no difference nobody reads.
   */
  spent: bigint[];
  /** Per rule: ms until a rate bucket is full again (0 for others). */
  resetMs: number[];
  // A refusal sets `remaining` and `resetMs` of its rate rules only, as they stand (the refused request took nothing);
  // its other entries are not to be read.
}

export interface SettleInput {
  rules: readonly Rule[];
  spendKeys: readonly (string | undefined)[];
  now: number;
  lease: string;
  /** See AdmitInput: the settlement frees the slots only if set (and clears it). */
  counted: boolean;
  /** Real tokens minus the admitted estimate (may be negative). */
  tokensDelta: number;
  /** Exact charge minus the reservation, femtopoints (may be negative). */
  spendDelta: bigint;
}

export interface CounterBackend {
  readonly kind: 'memory' | 'redis';
  /** A verdict returned synchronously may be the backend's own, reused by its next admission: read it before that. */
  admit(a: AdmitInput): Verdict | Promise<Verdict>;
  /** Settles spend and tokens and frees the concurrency slot; never throws (errors are counted and logged). */
  settle(s: SettleInput): void | Promise<void>;
  /** Current values without changing anything (GET /customer/limits). */
  peek(rules: readonly Rule[], spendKeys: readonly (string | undefined)[], now: number): Promise<Verdict>;
  /** Raises a spend counter to at least `units` (ledger reconciliation); never lowers it. */
  raiseSpend(spendKey: string, units: bigint, ttlMs: number): Promise<void>;
  close(): Promise<void>;
}

export const WINDOW_MS = 60_000;
// GCRA compares float sums (k * 60000/limit); the slack absorbs rounding so exactly `limit` fit in one burst.
export const EPSILON_MS = 1e-6;
