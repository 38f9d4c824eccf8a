// Spend so far on Organization and ApiKey status. The gateway pods already read each budget scope's spend from the
// ledger every minute (their counters are reconciled with it) and put those figures on their report Lease; the
// operator, which watches those Leases anyway, merges them and writes them to status: no database access here.
// A status write for spend alone happens at most once per `minIntervalMs` per object.
import type { V1Lease } from '@kubernetes/client-node';
import type { ScopeSpend } from '../gateway/governance/spend-report.ts';
import { parseSpendReport } from '../gateway/governance/spend-report.ts';
import { pointsToUnits } from '../gateway/governance/spend-units.ts';
import { SPEND_ANNOTATION } from '../gateway/snapshot/kube-format.ts';
import { stableStringify } from '../gateway/snapshot/runtime.ts';

const PERIODS = ['day', 'month', 'total'] as const;

/**
 * Spend per "Kind/name" over every report: only figures of the newest UTC day and month reported (a pod that has not
 * reconciled since midnight still reports yesterday), the largest per period (every pod reads the same ledger, one
 * may simply have read it later).
 */
export function spendFromLeases(leases: readonly V1Lease[]): Map<string, ScopeSpend> {
  const reports = [];
  let day = '';
  let month = '';
  for (const l of leases) {
    const r = parseSpendReport(l.metadata?.annotations?.[SPEND_ANNOTATION]);
    if (!r) continue;
    reports.push(r);
    if (r.day > day) day = r.day;
    if (r.month > month) month = r.month;
  }
  const out = new Map<string, ScopeSpend>();
  for (const r of reports) {
    for (const [ref, s] of Object.entries(r.scopes)) {
      if (s === null || typeof s !== 'object') continue;
      let m = out.get(ref);
      for (const period of PERIODS) {
        const v = s[period];
        if (typeof v !== 'string' || (period === 'day' && r.day !== day) || (period === 'month' && r.month !== month)) continue;
        const units = unitsOf(v);
        if (units === undefined) continue;
        m ??= {};
        const have = m[period] === undefined ? undefined : unitsOf(m[period]);
        if (have === undefined || units > have) m[period] = v;
      }
      if (m) out.set(ref, m);
    }
  }
  return out;
}

function unitsOf(v: string): bigint | undefined {
  try {
    return pointsToUnits(v);
  } catch {
    return undefined;
  }
}

/** Decides which spend a status shows: the fresh figures, or the ones it has until the interval has passed. */
export class SpendStatus {
  private readonly written = new Map<string, number>();
  /** Objects whose status shows older figures than the reports: looked at again on the next pass. */
  readonly behind = new Set<string>();
  private readonly minIntervalMs: number;
  constructor(minIntervalMs = 60_000) {
    this.minIntervalMs = minIntervalMs;
  }

  pick(ref: string, fresh: ScopeSpend | undefined, current: unknown, now: number): ScopeSpend | undefined {
    const shown = current !== null && typeof current === 'object' ? (current as ScopeSpend) : undefined;
    if (fresh === undefined) {
      this.behind.delete(ref);
      // No pod reports it (no budget any more, or no pod reconciled yet): keep what is shown rather than flap.
      return shown;
    }
    if (shown !== undefined && stableStringify(shown) === stableStringify(fresh)) {
      this.behind.delete(ref);
      return shown;
    }
    const last = this.written.get(ref);
    if (shown !== undefined && last !== undefined && now - last < this.minIntervalMs) {
      this.behind.add(ref);
      return shown;
    }
    this.written.set(ref, now);
    this.behind.delete(ref);
    return fresh;
  }

  forget(ref: string): void {
    this.written.delete(ref);
    this.behind.delete(ref);
  }
}
