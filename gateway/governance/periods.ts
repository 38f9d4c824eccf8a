// Budget periods on the UTC calendar: a period's id names its counter, so a new day or month starts at zero.
export type BudgetPeriod = 'day' | 'month' | 'total';

/** The counter suffix for `now`: "d20261124", "m202611", "total". */
export function periodId(period: BudgetPeriod, now: number): string {
  if (period === 'total') return 'total';
  const d = new Date(now);
  const y = d.getUTCFullYear();
  const m = d.getUTCMonth() + 1;
  const ym = `${y}${m < 10 ? '0' : ''}${m}`;
  if (period === 'month') return 'm' + ym;
  const day = d.getUTCDate();
  return `d${ym}${day < 10 ? '0' : ''}${day}`;
}

/** When the period containing `now` ends (ms since epoch); Infinity for a total. */
export function periodEnd(period: BudgetPeriod, now: number): number {
  if (period === 'total') return Infinity;
  const d = new Date(now);
  if (period === 'day') return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + 1);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
}

/** When the period containing `now` began; 0 for a total. */
export function periodStart(period: BudgetPeriod, now: number): number {
  if (period === 'total') return 0;
  const d = new Date(now);
  if (period === 'day') return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate());
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
}
