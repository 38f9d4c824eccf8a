// Decimal strings from the API, handled as strings: grouped for reading, compared exactly with BigInt. Money
// never passes through a float here; only the chart's bar heights do (numberForChart).
import type { Decimal } from './types.ts';

const DECIMAL = /^(-?)(\d+)(?:\.(\d+))?$/;

/** The same digits with the integer part grouped by thousands ("1234567.0901" → "1,234,567.0901"). */
export function formatPoints(value: Decimal | number | undefined | null): string {
  if (value === undefined || value === null) return '—';
  const s = String(value);
  const m = DECIMAL.exec(s);
  if (!m) return s;
  const grouped = m[2].replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return `${m[1]}${grouped}${m[3] !== undefined ? `.${m[3]}` : ''}`;
}

function parts(s: string): { neg: boolean; int: string; frac: string } {
  const m = DECIMAL.exec(s.trim());
  if (!m) throw new Error(`not a decimal: ${s}`);
  return { neg: m[1] === '-', int: m[2], frac: m[3] ?? '' };
}

function scaled(s: string, scale: number): bigint {
  const p = parts(s);
  const v = BigInt(p.int + p.frac.padEnd(scale, '0'));
  return p.neg ? -v : v;
}

const scaleOf = (...xs: string[]): number => Math.max(0, ...xs.map((x) => parts(x).frac.length));

export function compareDecimal(a: Decimal, b: Decimal): number {
  const s = scaleOf(a, b);
  const d = scaled(a, s) - scaled(b, s);
  return d < 0n ? -1 : d > 0n ? 1 : 0;
}

/** For drawing only: a bar's height may be approximate, the number printed beside it never is. */
export function numberForChart(value: Decimal): number {
  return Number(value);
}

/** Integers (token and request counts) grouped by thousands. */
export function formatCount(n: number | null | undefined): string {
  return n === null || n === undefined ? '—' : n.toLocaleString('en-US');
}
