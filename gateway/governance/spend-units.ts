// Spend counters hold points as integers of 10^-15 points ("femtopoints"): exact for every charge whose decimal has
// at most 15 fractional digits (a price with 6 decimals per million tokens times a 3-decimal discount has 15).
// A charge with more digits is rounded up, never down, so a budget can only be reached early, never overrun.
import type { Decimal } from '../billing/decimal.ts';
import { parseDecimal, pow10 } from '../billing/decimal.ts';

export const SPEND_SCALE = 15;
const ONE = 10n ** BigInt(SPEND_SCALE);

export function toUnits(d: Decimal): bigint {
  if (d.scale <= SPEND_SCALE) return d.units * pow10(SPEND_SCALE - d.scale);
  const div = pow10(d.scale - SPEND_SCALE);
  const q = d.units / div;
  return d.units % div === 0n ? q : q + 1n;
}

export function pointsToUnits(text: string | number): bigint {
  return toUnits(parseDecimal(text));
}

const PLAIN_POINTS = /^\d+\.\d+$/;
// 10^0 … 10^15 as doubles, all exact.
const POW10_NUMBER = Array.from({ length: SPEND_SCALE + 1 }, (_, i) => 10 ** i);

/**
 * The same as pointsToUnits for a ledger row's cost text, once per settled request: its usual form ("0.0000213",
 * digits and a dot, at most 15 digits) is read char by char into an exact double, with no regex, slice or BigInt parse.
 */
export function costToUnits(text: string): bigint {
  const len = text.length;
  if (len <= SPEND_SCALE + 1) {
    let n = 0;
    let dot = -1;
    for (let i = 0; i < len; i++) {
      const c = text.charCodeAt(i);
      if (c >= 48 && c <= 57) n = n * 10 + (c - 48);
      else if (c === 46 && dot < 0) dot = i;
      else {
        dot = -1;
        break;
      }
    }
    // n has at most 15 digits, so it is exact; its femtopoints are too while below 2^53 (else the general path).
    if (dot > 0 && dot < len - 1) {
      const u = n * POW10_NUMBER[SPEND_SCALE - (len - dot - 1)];
      if (Number.isSafeInteger(u)) return BigInt(u);
    }
  }
  const dot = text.indexOf('.');
  const decimals = text.length - dot - 1;
  if (dot > 0 && decimals <= SPEND_SCALE && PLAIN_POINTS.test(text)) {
    const digits = text.slice(0, dot) + text.slice(dot + 1);
    // Up to 15 digits the integer is exact as a double: a number parse and one small multiply, not a long BigInt parse.
    if (digits.length <= 15) return BigInt(Number(digits)) * pow10(SPEND_SCALE - decimals);
    return BigInt(digits.padEnd(digits.length + SPEND_SCALE - decimals, '0'));
  }
  return toUnits(parseDecimal(text));
}

/** Plain decimal text of a unit count ("12.5", "0.000001"). */
export function unitsToPoints(u: bigint): string {
  const neg = u < 0n;
  const abs = neg ? -u : u;
  const whole = abs / ONE;
  let frac = (abs % ONE).toString().padStart(SPEND_SCALE, '0').replace(/0+$/, '');
  if (frac) frac = '.' + frac;
  return (neg ? '-' : '') + whole.toString() + frac;
}

/** Splits into whole points and femtopoints (< 10^15, same sign): each fits a Lua double exactly, for Redis scripts. */
export function split(u: bigint): [string, string] {
  // Reservations and most settlements are below one point: no division then (sent per request in a script call).
  if (u > -ONE && u < ONE) return ['0', u.toString()];
  return [(u / ONE).toString(), (u % ONE).toString()];
}

export function join(whole: string | number, frac: string | number): bigint {
  // A counter below one point (read back per budget per admission): one parse.
  if (whole === '0' || whole === 0) return BigInt(frac);
  return BigInt(whole) * ONE + BigInt(frac);
}
