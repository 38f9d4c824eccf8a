// Budget periods on the UTC calendar: a period's id names its counter, so a new day or month starts at zero.
export type BudgetPeriod = 'day' | 'month' | 'total';

const DAY_MS = 86_400_000;
// The last day asked for and its two ids: every request of a day shares them.
let cachedDay = -1;
let cachedIds: { day: string; month: string } = { day: '', month: '' };

/** The counter suffix for `now`: "d20261124", "m202611", "total". */
export function periodId(period: BudgetPeriod, now: number): string {
  if (period === 'total') return 'total';
  const day = Math.floor(now / DAY_MS);
  if (day !== cachedDay) {
    cachedIds = { day: computeId('day', now), month: computeId('month', now) };
    cachedDay = day;
  }
  return period === 'day' ? cachedIds.day : cachedIds.month;
}

function computeId(period: 'day' | 'month', now: number): string {
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

/** How long a budget counter outlives its period: a day counter a few days, a month counter a few months. */
export function spendTtl(r: { period?: BudgetPeriod }): number {
  return r.period === 'day' ? 3 * DAY_MS : r.period === 'month' ? 95 * DAY_MS : 0;
}
