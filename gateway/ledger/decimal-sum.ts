// An exact running sum of decimal texts that reads out as Postgres' sum(numeric) would: the value, written with as
// many digits after the point as the addend that had most (numeric's display scale: '0.10' + '0.2' is '0.30').
// The ledger sums rollup deltas here instead of in the database; a different scale would change the stored text.
// Units stay a double while every partial result is a safe integer (the common case, no allocation), else a BigInt.
import { readDecimal } from '../billing/decimal.ts';

// Most texts: up to 15 characters, so at most 15 digits, no exponent. Read through a double: the units are below 10^15, so the product's
// error (< 10^15 × 2^-52) is far below 0.5 and rounding gives them exactly. Saves building a digits string.
const SHORT_PLAIN = /^\d+(?:\.\d+)?$/;
const MAX = Number.MAX_SAFE_INTEGER;
// Beyond this, leave the text to the database (numeric allows more; no ledger value comes near it).
const MAX_SCALE = 1000;

export class DecimalSum {
  private small = 0;
  private big: bigint | undefined;
  private scale = 0;

  /** Adds a non-negative decimal text ('12', '0.0015', '1e-7'); false (and nothing added) when it is not one. */
  add(text: string): boolean {
    if (text.length <= 15 && SHORT_PLAIN.test(text)) {
      const dot = text.indexOf('.');
      const scale = dot < 0 ? 0 : text.length - dot - 1;
      this.addUnits(dot < 0 ? Number(text) : Math.round(Number(text) * 10 ** scale), scale);
      return true;
    }
    const d = readDecimal(text, MAX_SCALE);
    if (d === undefined) return false;
    this.addBig(d.units, d.scale);
    return true;
  }

  /** Another sum, from this one's value and scale. */
  clone(): DecimalSum {
    const c = new DecimalSum();
    c.small = this.small;
    c.big = this.big;
    c.scale = this.scale;
    return c;
  }

  /** Adds units / 10^scale, units a safe integer. */
  private addUnits(units: number, scale: number): void {
    if (scale > this.scale) this.rescale(scale);
    const shift = this.scale - scale;
    if (this.big === undefined && shift <= 15) {
      // Exact: each operand is a safe integer, and a rounded result above MAX_SAFE_INTEGER shows as one.
      const sum = this.small + units * 10 ** shift;
      if (sum <= MAX) {
        this.small = sum;
        return;
      }
    }
    this.addBig(BigInt(units), scale);
  }

  private addBig(units: bigint, scale: number): void {
    if (scale > this.scale) this.rescale(scale);
    this.big = this.units() + units * 10n ** BigInt(this.scale - scale);
  }

  toString(): string {
    const digits = this.units().toString();
    if (this.scale === 0) return digits;
    const padded = digits.padStart(this.scale + 1, '0');
    return `${padded.slice(0, -this.scale)}.${padded.slice(-this.scale)}`;
  }

  private units(): bigint {
    return this.big ?? BigInt(this.small);
  }

  private rescale(scale: number): void {
    const by = scale - this.scale;
    this.scale = scale;
    if (this.big === undefined && by <= 15) {
      const units = this.small * 10 ** by;
      if (units <= MAX) {
        this.small = units;
        return;
      }
    }
    this.big = this.units() * 10n ** BigInt(by);
  }
}
