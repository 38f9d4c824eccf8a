import { describe, expect, it } from 'vitest';
import type { Usage } from '../meter/usage.ts';
import { parseDecimal, toPlainString, add, mul } from './decimal.ts';
import { compilePricing, priceUsage, selectTier } from './pricing.ts';

const usage = (u: Partial<Usage>): Usage => ({ input: 0, output: 0, cacheRead: 0, cacheWrite: 0, reasoning: 0, artifacts: 0, explicitCache: false, estimated: false, detail: null, ...u });

const flat = compilePricing({ id: 'flat', mode: 'flat_tokens', prices: { input: '2.5', output: '10', cacheRead: '1.25', cacheWrite: '3.75' }, discount: '1' });
const tiers = compilePricing({
  id: 'tiers',
  mode: 'input_tokens_tiers',
  discount: '0.8',
  tiers: [
    { upTo: 1000, input: '1', output: '2', cacheRead: '0.5', cacheWrite: '1.5' },
    { upTo: 200000, input: '1.25', output: '10', cacheRead: '0.31', cacheWrite: '0' },
    { upTo: null, input: '2.5', output: '15', cacheRead: '0.625', cacheWrite: '0' },
  ],
});

describe('decimal', () => {
  it.each([
    ['0.15', '0.15'],
    ['2.50', '2.5'],
    ['1e-7', '0.0000001'],
    ['2.5E+3', '2500'],
    [0.1, '0.1'],
    [1e-7, '0.0000001'],
    ['000', '0'],
  ])('parses %s as %s', (input, out) => expect(toPlainString(parseDecimal(input))).toBe(out));

  it('rejects negatives and garbage', () => {
    for (const bad of ['-1', 'abc', '1.', '.5', '', 'NaN']) expect(() => parseDecimal(bad)).toThrow();
    expect(() => parseDecimal(-0.5)).toThrow();
  });

  it('adds and multiplies exactly where floats do not', () => {
    expect(toPlainString(add(parseDecimal('0.1'), parseDecimal('0.2')))).toBe('0.3');
    expect(toPlainString(mul(parseDecimal('1.1'), parseDecimal('1.1')))).toBe('1.21');
  });
});

describe('flat_tokens', () => {
  it('prices the four dimensions per million tokens', () => {
    // 1000*2.5 + 500*10 + 200*1.25 + 100*3.75 = 2500 + 5000 + 250 + 375 = 8125 per million
    expect(priceUsage(flat, usage({ input: 1000, output: 500, cacheRead: 200, cacheWrite: 100 }), undefined)).toEqual({ costPoints: '0.008125', originalCost: '0.008125' });
  });
  it('bills a single token to the last decimal', () => {
    expect(priceUsage(flat, usage({ input: 1 }), undefined).costPoints).toBe('0.0000025');
  });
  it('handles huge token counts without losing digits', () => {
    const r = priceUsage(flat, usage({ input: 9_007_199_254_740_991, output: 123_456_789_012 }), undefined);
    // 9007199254740991*2.5 = 22517998136852477.5 ; 123456789012*10 = 1234567890120 -> sum 22519232704742597.5 / 1e6
    expect(r.costPoints).toBe('22519232704.7425975');
  });
  it('zero usage costs zero', () => {
    expect(priceUsage(flat, usage({}), undefined)).toEqual({ costPoints: '0', originalCost: '0' });
  });
});

describe('discounts', () => {
  it('applies the pricing group discount to cost_points, never to original_cost', () => {
    const r = priceUsage(tiers, usage({ input: 100, output: 100 }), undefined);
    expect(r.originalCost).toBe('0.0003');
    expect(r.costPoints).toBe('0.00024');
  });
  it('an organization override replaces the group discount', () => {
    const r = priceUsage(tiers, usage({ input: 100, output: 100 }), parseDecimal('0.5'));
    expect(r).toEqual({ originalCost: '0.0003', costPoints: '0.00015' });
  });
  it('an override of 1 means full price even when the group discounts', () => {
    expect(priceUsage(tiers, usage({ input: 100 }), parseDecimal('1')).costPoints).toBe('0.0001');
  });
  it('a factor of 1 in any scale is full price, and 10 or 0.1 are not', () => {
    const u = usage({ input: 100 });
    expect(priceUsage(tiers, u, { units: 100n, scale: 2 }).costPoints).toBe('0.0001');
    expect(priceUsage(tiers, u, { units: 10n, scale: 0 }).costPoints).toBe('0.001');
    expect(priceUsage(tiers, u, { units: 1n, scale: 1 }).costPoints).toBe('0.00001');
  });
});

describe('input_tokens_tiers', () => {
  it.each([
    [999, 1000],
    [1000, 1000],
    [1001, 200000],
    [200000, 200000],
    [200001, null],
  ])('a prompt of %i tokens falls in the tier bounded by %s', (prompt, bound) => {
    expect(selectTier(tiers, prompt).upTo).toBe(bound);
  });

  it('chooses the tier from the whole prompt: input + cache read + cache write', () => {
    // 600 + 300 + 101 = 1001 > 1000: second tier even though uncached input alone is small.
    const u = usage({ input: 600, cacheRead: 300, cacheWrite: 101, output: 10 });
    expect(selectTier(tiers, 1001).upTo).toBe(200000);
    // 600*1.25 + 300*0.31 + 101*0 + 10*10 = 750 + 93 + 0 + 100 = 943 per million
    expect(priceUsage(tiers, u, parseDecimal('1'))).toEqual({ originalCost: '0.000943', costPoints: '0.000943' });
  });

  it('applies the chosen tier to every dimension of the request', () => {
    const u = usage({ input: 250_000, output: 1000, cacheRead: 0 });
    // 250000*2.5 + 1000*15 = 625000 + 15000 = 640000 per million = 0.64
    expect(priceUsage(tiers, u, parseDecimal('1')).costPoints).toBe('0.64');
  });
});

describe('billing rules', () => {
  it('images style bills input and output only', () => {
    expect(priceUsage(flat, usage({ input: 100, output: 1000, cacheRead: 50 }), undefined, 'images').costPoints).toBe('0.01025');
  });
  it('output_only bills the output price alone', () => {
    expect(priceUsage(flat, usage({ input: 100, output: 1290 }), undefined, 'output_only').costPoints).toBe('0.0129');
  });
});
