// An independent, integer-only reckoning of expected costs, so tests do not check the billing module with itself.

/** Prices in thousandths of a point per million tokens (0.15 -> 150); discount as a fraction num/den. */
export interface TestPrices {
  input: bigint;
  output: bigint;
  cacheRead: bigint;
  cacheWrite: bigint;
  discountNum: bigint;
  discountDen: bigint;
}

export const MINI_ACME: TestPrices = { input: 150n, output: 600n, cacheRead: 75n, cacheWrite: 0n, discountNum: 9n, discountDen: 10n };
export const MINI_FULL: TestPrices = { ...MINI_ACME, discountNum: 1n, discountDen: 1n };

export interface Tokens {
  input: number;
  output: number;
  cacheRead?: number;
  cacheWrite?: number;
}

/** (tokens x price) / 1e6 x discount, printed exactly. */
export function expectedCost(t: Tokens, p: TestPrices): { cost: string; original: string } {
  const milli = BigInt(t.input) * p.input + BigInt(t.output) * p.output + BigInt(t.cacheRead ?? 0) * p.cacheRead + BigInt(t.cacheWrite ?? 0) * p.cacheWrite;
  // milli / 1e9 = original; cost = milli * num / (1e9 * den): scale up so den divides evenly (den is 1 or 10 here).
  return { original: fraction(milli, 1_000_000_000n), cost: fraction(milli * p.discountNum * (10n / p.discountDen), 10_000_000_000n) };
}

function fraction(num: bigint, den: bigint): string {
  const whole = num / den;
  let rest = num % den;
  if (rest === 0n) return whole.toString();
  let digits = '';
  let d = den;
  while (d > 1n) {
    d /= 10n;
    digits += (rest / d).toString();
    rest %= d;
  }
  return `${whole}.${digits.replace(/0+$/, '')}`;
}

/** Adds exact decimal strings (test-side, independent of the gateway's decimal module). */
export function sumDecimals(values: string[]): string {
  const scale = 20;
  let total = 0n;
  for (const v of values) {
    const [w, f = ''] = v.split('.');
    total += BigInt(w + f.padEnd(scale, '0'));
  }
  return fraction(total, 10n ** BigInt(scale));
}
