// Reads the batch script's answers (redis-scripts.ts: one space-separated string per admission or read) field by
// field, without splitting them: a 13-rule admission's answer has 27 fields, and splitting made an array and a
// string per field for every request.
import { join } from './spend-units.ts';

/** Walks one answer string: each call returns the next field and moves past it. */
export class ReplyCursor {
  private text = '';
  private at = 0;

  reset(text: string): this {
    this.text = text;
    this.at = 0;
    return this;
  }

  /**
   * The next field as a number. Integers (counts, remaining, femtopoints below 2^53) are read digit by digit; any
   * other text (a %.17g float such as a reset time) goes to Number, exactly as before.
   */
  number(): number {
    const s = this.text;
    const start = this.at;
    const len = s.length;
    let i = start;
    const neg = s.charCodeAt(i) === 45;
    if (neg) i++;
    const first = i;
    let n = 0;
    for (; i < len; i++) {
      const c = s.charCodeAt(i);
      if (c === 32) break;
      const d = c - 48;
      if (d < 0 || d > 9) return this.general(start);
      n = n * 10 + d;
    }
    // Up to 15 digits are exact in a double whatever they are; longer fields (and empty ones) take the general path.
    if (i === first || i - first > 15) return this.general(start);
    this.at = i + 1;
    return neg ? -n : n;
  }

  /** The field from `start` through Number (what every field went through before). */
  private general(start: number): number {
    const s = this.text;
    let end = s.indexOf(' ', start);
    if (end < 0) end = s.length;
    this.at = end + 1;
    return Number(s.slice(start, end));
  }

  /** The next two fields as a spend counter: whole points and femtopoints (spend-units.ts split). */
  spend(): bigint {
    const start = this.at;
    const w = this.number();
    const f = this.number();
    // Both exact as numbers (the usual case: femtopoints are below 10^15, whole points few): no text parsed.
    if (Number.isSafeInteger(w) && Number.isSafeInteger(f)) return w === 0 ? BigInt(f) : join(w, f);
    this.at = start;
    const whole = this.field();
    return join(whole, this.field());
  }

  /** The next field as text. */
  field(): string {
    const s = this.text;
    const start = this.at;
    let end = s.indexOf(' ', start);
    if (end < 0) end = s.length;
    this.at = end + 1;
    return s.slice(start, end);
  }
}
