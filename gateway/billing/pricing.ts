// Prices a normalised usage record (docs/contract.md, pricing). Only this module knows prices.
import type { Usage } from '../meter/usage.ts';
import { promptTokens } from '../meter/usage.ts';
import type { Decimal } from './decimal.ts';
import { add, fromInt, isOne, mul, parseDecimal, shift, toPlainString, ZERO } from './decimal.ts';
import type { PricingGroup } from '../snapshot/schema.ts';

export interface TierPrices {
  /** Inclusive upper bound on whole-prompt tokens; null = unbounded. */
  upTo: number | null;
  input: Decimal;
  output: Decimal;
  cacheRead: Decimal;
  cacheWrite: Decimal;
}

/** A pricing group compiled once per snapshot, so pricing a request parses nothing. */
export interface CompiledPricing {
  id: string;
  tiers: TierPrices[];
  discount: Decimal;
}

export interface Cost {
  costPoints: string;
  originalCost: string;
}

/** How a request is priced: text tokens (four dimensions), images style (in/out only), or output only (generateContent images). */
export type BillingRule = 'text' | 'images' | 'output_only';

export function compilePricing(group: PricingGroup): CompiledPricing {
  const tier = (t: { input: string | number; output: string | number; cacheRead: string | number; cacheWrite: string | number }, upTo: number | null): TierPrices => ({
    upTo,
    input: parseDecimal(t.input),
    output: parseDecimal(t.output),
    cacheRead: parseDecimal(t.cacheRead),
    cacheWrite: parseDecimal(t.cacheWrite),
  });
  const tiers = group.mode === 'flat_tokens' ? [tier(group.prices, null)] : group.tiers.map((t) => tier(t, t.upTo));
  return { id: group.id, tiers, discount: parseDecimal(group.discount) };
}

/** The first tier whose bound is >= the whole prompt (input + cache read + cache write). */
export function selectTier(pricing: CompiledPricing, prompt: number): TierPrices {
  for (const t of pricing.tiers) if (t.upTo === null || prompt <= t.upTo) return t;
  return pricing.tiers[pricing.tiers.length - 1];
}

export function priceUsage(pricing: CompiledPricing, usage: Usage, discount: Decimal | undefined, rule: BillingRule = 'text'): Cost {
  const tier = selectTier(pricing, promptTokens(usage));
  let sum: Decimal = ZERO;
  if (rule !== 'output_only') sum = add(sum, mul(fromInt(usage.input), tier.input));
  sum = add(sum, mul(fromInt(usage.output), tier.output));
  if (rule === 'text') {
    sum = add(sum, mul(fromInt(usage.cacheRead), tier.cacheRead));
    sum = add(sum, mul(fromInt(usage.cacheWrite), tier.cacheWrite));
  }
  const original = shift(sum, 6);
  const originalCost = toPlainString(original);
  const d = discount ?? pricing.discount;
  // No discount (a factor of exactly 1, the default): the cost is the original, already written out.
  return { originalCost, costPoints: isOne(d) ? originalCost : toPlainString(mul(original, d)) };
}
