// Latency samples (milliseconds, float) and the percentiles the report prints.

export class Samples {
  private buf = new Float64Array(1024);
  private n = 0;

  add(ms: number): void {
    if (this.n === this.buf.length) {
      const next = new Float64Array(this.buf.length * 2);
      next.set(this.buf);
      this.buf = next;
    }
    this.buf[this.n++] = ms;
  }

  get count(): number {
    return this.n;
  }

  summary(): LatencySummary {
    const s = this.buf.slice(0, this.n).sort();
    const at = (q: number) => (this.n === 0 ? NaN : s[Math.min(this.n - 1, Math.ceil(q * this.n) - 1)]);
    let sum = 0;
    for (let i = 0; i < this.n; i++) sum += s[i];
    return { count: this.n, mean: this.n ? sum / this.n : NaN, p50: at(0.5), p90: at(0.9), p99: at(0.99), p999: at(0.999), max: this.n ? s[this.n - 1] : NaN };
  }
}

export interface LatencySummary {
  count: number;
  mean: number;
  p50: number;
  p90: number;
  p99: number;
  p999: number;
  max: number;
}

export const ms = (v: number, digits = 2): string => (Number.isFinite(v) ? v.toFixed(digits) : 'n/a');
export const us = (seconds: number): string => (Number.isFinite(seconds) ? (seconds * 1e6).toFixed(0) : 'n/a');
export const mb = (bytes: number): string => (Number.isFinite(bytes) ? (bytes / 1024 / 1024).toFixed(0) : 'n/a');
export const ratio = (a: number, b: number): string => (Number.isFinite(a / b) && b !== 0 ? (a / b).toFixed(2) + '×' : 'n/a');
/** The middle value (the upper one of an even count). */
export const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1];
/** The q-quantile (0..1) of `xs`, nearest rank; NaN when empty. */
export const quantile = (xs: number[], q: number): number => (xs.length === 0 ? NaN : [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.max(0, Math.ceil(q * xs.length) - 1))]);
