// The console's decimal helpers: money stays a string; grouping and comparing are exact.
import { describe, expect, it } from 'vitest';
import { compareDecimal, formatPoints } from '../../console/src/decimal.ts';

describe('console decimals', () => {
  it('groups the integer part and keeps every fraction digit', () => {
    expect(formatPoints('1234567.000000100')).toBe('1,234,567.000000100');
    expect(formatPoints('0.000005805')).toBe('0.000005805');
    expect(formatPoints('999')).toBe('999');
    expect(formatPoints('-1000.5')).toBe('-1,000.5');
    expect(formatPoints(undefined)).toBe('—');
    expect(formatPoints('not a number')).toBe('not a number');
  });

  it('compares beyond float precision', () => {
    expect(compareDecimal('0.10000000000000000001', '0.1')).toBe(1);
    expect(compareDecimal('2', '10')).toBe(-1);
    expect(compareDecimal('1.50', '1.5')).toBe(0);
  });
});
