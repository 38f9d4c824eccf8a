import { describe, expect, it } from 'vitest';
import { DecimalSum } from './decimal-sum.ts';

const sum = (...texts: string[]) => {
  const s = new DecimalSum();
  for (const t of texts) expect(s.add(t)).toBe(true);
  return s.toString();
};

describe('DecimalSum', () => {
  it('keeps the most digits after the point of any addend, as sum(numeric) does', () => {
    expect(sum('0.10', '0.2')).toBe('0.30');
    expect(sum('3', '4')).toBe('7');
    expect(sum('0.0015', '0.0015', '1')).toBe('1.0030');
    expect(sum('0.000')).toBe('0.000');
    expect(sum()).toBe('0');
  });

  it('reads exponents as numeric_in does (scale = digits after the point less the exponent, at least 0)', () => {
    expect(sum('1e-7')).toBe('0.0000001');
    expect(sum('2.5E+3', '0.5')).toBe('2500.5');
    expect(sum('1.50e1')).toBe('15.0');
    expect(sum('12e0')).toBe('12');
  });

  it('stays exact past 2^53 units and across 15-digit texts', () => {
    expect(sum('9007199254740991', '1')).toBe('9007199254740992');
    expect(sum('9007199254740993')).toBe('9007199254740993');
    expect(sum('900719925474099.3', '0.1')).toBe('900719925474099.4');
    expect(sum('0.999999999999999', '0.000000000000001')).toBe('1.000000000000000');
    expect(sum('12345678901234567890.123456789', '0.000000001')).toBe('12345678901234567890.123456790');
    const s = new DecimalSum();
    for (let i = 0; i < 20_000; i++) s.add('0.0000001');
    expect(s.toString()).toBe('0.0020000');
    const big = new DecimalSum();
    for (let i = 0; i < 1000; i++) big.add('99999999999999.9');
    expect(big.toString()).toBe('99999999999999900.0');
  });

  it('refuses what is not a non-negative decimal, adding nothing', () => {
    const s = new DecimalSum();
    s.add('1.5');
    for (const t of ['-1', ' 1', '.5', '5.', '1e', 'NaN', '0x10', '1_000', '', '1e99999']) expect(s.add(t)).toBe(false);
    expect(s.toString()).toBe('1.5');
  });
});
