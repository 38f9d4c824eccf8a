import { decimal, status } from '../common.ts';
import { AGE_COLUMN, APPLIED_COLUMN, READY_COLUMN, REASON_COLUMN, type KindDefinition } from '../crd.ts';
import { PRICING_MODES } from '../../../gateway/snapshot/schema.ts';
import { int, list, obj, str } from '../openapi.ts';

// Twice the price fields: a flat price set, and each tier. Per million tokens, in points.
function prices(description: string, extra: Record<string, ReturnType<typeof int>> = {}) {
  return obj(description, {
    ...extra,
    input: decimal('Points per million uncached input tokens (images style: per million usage.input_tokens).'),
    output: decimal('Points per million output tokens (images style: per million usage.output_tokens).'),
    cacheRead: decimal('Points per million cache-read tokens; default "0".'),
    cacheWrite: decimal('Points per million cache-write tokens; default "0".'),
  }, ['input', 'output']);
}

const tier = prices('One tier: the upper bound on the prompt and the four prices that apply to the whole request when the prompt falls in it.', {
  upTo: int('Inclusive upper bound on prompt tokens (input + cache read + cache write). Omit it (or write null) on the last tier, which is unbounded.', {
    minimum: 1,
    nullable: true,
  }),
});

export const pricingGroup: KindDefinition = {
  kind: 'PricingGroup',
  plural: 'pricinggroups',
  singular: 'pricinggroup',
  shortNames: ['tgpg'],
  description: 'PricingGroup sets what a model costs: unit prices per million tokens for input, output, cache read and cache write, either flat or in tiers chosen by prompt size, and a discount. Money is exact: prices are decimal strings.',
  spec: obj('Desired state of the PricingGroup.', {
    mode: str('flat_tokens: one set of prices (spec.prices). input_tokens_tiers: ordered tiers (spec.tiers); the first tier whose upTo is at least the prompt size prices the whole request.', {
      enum: [...PRICING_MODES],
    }),
    prices: prices('Prices for mode flat_tokens. For image models, input and output price usage.input_tokens and usage.output_tokens.'),
    tiers: list('Tiers for mode input_tokens_tiers, in strictly ascending upTo order; the last one has no upTo.', tier, {
      minItems: 1,
      maxItems: 16,
      'x-kubernetes-list-type': 'atomic',
      'x-kubernetes-validations': [
        { rule: '!has(self[self.size() - 1].upTo)', message: 'the last tier must be unbounded: omit its upTo' },
        { rule: 'self.filter(t, !has(t.upTo)).size() <= 1', message: 'only the last tier may be unbounded: every other tier needs upTo' },
        {
          // isSorted is the Kubernetes list library; exists_one makes the order strict (no repeated bound).
          rule: 'self.filter(t, has(t.upTo)).map(t, t.upTo).isSorted() && self.filter(t, has(t.upTo)).all(a, self.exists_one(b, has(b.upTo) && b.upTo == a.upTo))',
          message: 'tier bounds (upTo) must be strictly ascending',
        },
      ],
    }),
    discount: decimal('Multiplier applied to the cost; "1" (default) is full price, "0.8" is 20% off. An Organization may override it.'),
  }, ['mode'], {
    'x-kubernetes-validations': [
      { rule: "self.mode != 'flat_tokens' || (has(self.prices) && !has(self.tiers))", message: 'mode flat_tokens requires prices and no tiers' },
      { rule: "self.mode != 'input_tokens_tiers' || (has(self.tiers) && !has(self.prices))", message: 'mode input_tokens_tiers requires tiers and no prices' },
    ],
  }),
  status: status(),
  columns: [
    { name: 'Mode', type: 'string', jsonPath: '.spec.mode', description: 'flat_tokens or input_tokens_tiers.' },
    { name: 'Input', type: 'string', jsonPath: '.spec.prices.input', description: 'Flat input price per million tokens (empty for tiers).' },
    { name: 'Output', type: 'string', jsonPath: '.spec.prices.output', description: 'Flat output price per million tokens (empty for tiers).' },
    { name: 'Discount', type: 'string', jsonPath: '.spec.discount', description: 'Cost multiplier (empty means 1).' },
    READY_COLUMN,
    REASON_COLUMN,
    APPLIED_COLUMN,
    AGE_COLUMN,
  ],
};
