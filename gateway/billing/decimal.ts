// Exact decimal arithmetic over BigInt: value = units / 10^scale. Money never touches a JS float.
export interface Decimal {
  readonly units: bigint;
  readonly scale: number;
}

const POW10: bigint[] = [1n];
/** 10^n, kept once computed. */
export function pow10(n: number): bigint {
  while (POW10.length <= n) POW10.push(POW10[POW10.length - 1] * 10n);
  return POW10[n];
}

export const ZERO: Decimal = { units: 0n, scale: 0 };

const DECIMAL_TEXT = /^(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/;

/** Whether parseDecimal accepts the text, without building the value. */
export function isDecimalText(text: string): boolean {
  return DECIMAL_TEXT.test(text.trim());
}

/** Parses "12", "0.15", "1e-7", "2.5E+3"; rejects anything else (and negatives). */
export function parseDecimal(text: string | number): Decimal {
  const d = readDecimal(typeof text === 'number' ? numberText(text) : text.trim());
  if (!d) throw new Error(`not a non-negative decimal: ${JSON.stringify(text)}`);
  return normalize(d);
}

/**
 * The value of a decimal text with its display scale kept, as Postgres' numeric reads it ('0.10': 10 units at scale
 * 2); undefined when it is not a non-negative decimal, or its scale is beyond ±maxScale (bounds the BigInt built).
 */
export function readDecimal(text: string, maxScale = Infinity): Decimal | undefined {
  const m = DECIMAL_TEXT.exec(text);
  if (!m) return undefined;
  const frac = m[2] ?? '';
  let scale = frac.length - Number(m[3] ?? 0);
  if (Math.abs(scale) > maxScale) return undefined;
  let units = BigInt(m[1] + frac);
  if (scale < 0) {
    units *= pow10(-scale);
    scale = 0;
  }
  return { units, scale };
}

// A JS number's shortest round-trip text is the literal the user wrote (0.15 -> "0.15").
function numberText(n: number): string {
  if (!Number.isFinite(n) || n < 0) throw new Error(`not a non-negative decimal: ${n}`);
  return String(n);
}

export function fromInt(n: number | bigint): Decimal {
  return { units: BigInt(n), scale: 0 };
}

export function add(a: Decimal, b: Decimal): Decimal {
  if (a.scale === b.scale) return { units: a.units + b.units, scale: a.scale };
  if (a.scale > b.scale) return { units: a.units + b.units * pow10(a.scale - b.scale), scale: a.scale };
  return { units: a.units * pow10(b.scale - a.scale) + b.units, scale: b.scale };
}

export function mul(a: Decimal, b: Decimal): Decimal {
  return { units: a.units * b.units, scale: a.scale + b.scale };
}

/** Divides by 10^n exactly (a shift of the scale). */
export function shift(a: Decimal, n: number): Decimal {
  return { units: a.units, scale: a.scale + n };
}

export function compare(a: Decimal, b: Decimal): number {
  const d = add(a, { units: -b.units, scale: b.scale }).units;
  return d === 0n ? 0 : d > 0n ? 1 : -1;
}

/** Exactly 1, in any scale (1, 1.0, 1.00...). */
export function isOne(d: Decimal): boolean {
  return d.scale >= 0 && d.units === pow10(d.scale);
}

export function normalize(a: Decimal): Decimal {
  let { units, scale } = a;
  if (units === 0n) return ZERO;
  while (scale > 0 && units % 10n === 0n) {
    units /= 10n;
    scale--;
  }
  return { units, scale };
}

/** Plain notation, no exponent, no trailing zeros: "0.0000125", "3", "1234.5". */
export function toPlainString(a: Decimal): string {
  const { units, scale } = normalize(a);
  const neg = units < 0n;
  const digits = (neg ? -units : units).toString();
  if (scale === 0) return (neg ? '-' : '') + digits;
  const padded = digits.padStart(scale + 1, '0');
  return (neg ? '-' : '') + padded.slice(0, padded.length - scale) + '.' + padded.slice(padded.length - scale);
}
