// Spend so far per budget scope, as the ledger reconciliation last read it, for the operator to show on the
// Organization and ApiKey status (no query of its own: the reconciliation reads these sums every minute anyway).
// It travels as one annotation on the pod's report Lease, so its size is capped: organizations first, then keys.
import type { BudgetPeriod } from './periods.ts';

/** One scope's spend per budget period it has, in points (decimal text). */
export type ScopeSpend = Partial<Record<BudgetPeriod, string>>;

export interface SpendReport {
  /** The UTC day and month ids the figures belong to ("d20261124", "m202611"): a reader drops older reports. */
  day: string;
  month: string;
  /** "Organization/<id>" or "ApiKey/<id>" → spend per period. */
  scopes: Record<string, ScopeSpend>;
  /** Scopes left out to keep the annotation small. */
  truncated?: number;
}

// Kubernetes allows 256 KiB for all annotations of an object together; the report Lease has a few small ones.
export const MAX_REPORT_BYTES = 64 * 1024;

/** Gathers one reconciliation's figures; `text()` is the annotation value. */
export class SpendReportBuilder {
  private readonly scopes = new Map<string, ScopeSpend>();
  private readonly day: string;
  private readonly month: string;
  constructor(day: string, month: string) {
    this.day = day;
    this.month = month;
  }

  add(ref: string, period: BudgetPeriod, points: string): void {
    let s = this.scopes.get(ref);
    if (s === undefined) this.scopes.set(ref, (s = {}));
    s[period] = points;
  }

  /** The annotation value; undefined when no organization or key has a budget. */
  text(): string | undefined {
    if (this.scopes.size === 0) return undefined;
    const refs = [...this.scopes.keys()].sort((a, b) => rank(a) - rank(b) || (a < b ? -1 : 1));
    const report: SpendReport = { day: this.day, month: this.month, scopes: {} };
    let bytes = 64;
    let left = 0;
    for (const ref of refs) {
      const entry = this.scopes.get(ref)!;
      const size = ref.length + JSON.stringify(entry).length + 4;
      if (bytes + size > MAX_REPORT_BYTES) {
        left++;
        continue;
      }
      bytes += size;
      report.scopes[ref] = entry;
    }
    if (left > 0) report.truncated = left;
    return JSON.stringify(report);
  }
}

const rank = (ref: string): number => (ref.startsWith('Organization/') ? 0 : 1);

/** Parses a report annotation; undefined when it is not one. */
export function parseSpendReport(text: string | undefined): SpendReport | undefined {
  if (!text) return undefined;
  try {
    const r = JSON.parse(text) as SpendReport;
    return typeof r?.day === 'string' && typeof r.month === 'string' && r.scopes !== null && typeof r.scopes === 'object' ? r : undefined;
  } catch {
    return undefined;
  }
}
