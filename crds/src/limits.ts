// Rate limits and budgets, shared by Organization (and its projects) and ApiKey; compiled into the snapshot's
// `limits` / `budget` fields as they are (docs/limits.md).
import { decimal, SLUG } from './common.ts';
import { int, list, obj, str, type Schema } from './openapi.ts';

const perMinute = (d: string): Schema => int(d, { minimum: 1, maximum: 1_000_000_000 });

const rates = () => ({
  rpm: perMinute('Requests per minute: up to this many at once, then one every 60/rpm seconds.'),
  tpm: perMinute('Tokens per minute, input + output, settled with the real usage after each answer.'),
  concurrency: int('Requests in flight at once (a stream counts until it ends).', { minimum: 1, maximum: 1_000_000 }),
});

export function rateLimits(description: string): Schema {
  return obj(description, {
    ...rates(),
    models: list(
      'Extra limits for one model each, on top of the ones above.',
      obj('Limits for one model.', { model: str('Model id or alias.', { minLength: 1, maxLength: 200 }), ...rates() }, ['model'], {
        'x-kubernetes-validations': [{ rule: 'has(self.rpm) || has(self.tpm) || has(self.concurrency)', message: 'set at least one of rpm, tpm, concurrency' }],
      }),
      { maxItems: 100, 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['model'] },
    ),
  }, [], {
    'x-kubernetes-validations': [{ rule: 'has(self.rpm) || has(self.tpm) || has(self.concurrency) || has(self.models)', message: 'set at least one of rpm, tpm, concurrency, models' }],
  });
}

export function budget(description: string): Schema {
  return obj(description, {
    day: decimal('Points per UTC calendar day.'),
    month: decimal('Points per UTC calendar month.'),
    total: decimal('Points in total, never reset.'),
    softPercent: int('Percent of a budget past which answers carry x-tollgate-budget-warning (still served).', { minimum: 1, maximum: 100 }),
  }, [], {
    'x-kubernetes-validations': [{ rule: 'has(self.day) || has(self.month) || has(self.total)', message: 'set at least one of day, month, total' }],
  });
}

export function projects(): Schema {
  return list(
    'Limits and budgets per project of this organization (an ApiKey names its project).',
    obj('One project.', {
      id: str('Project id, as ApiKeys name it in spec.project.', { minLength: 1, maxLength: 253, pattern: SLUG }),
      limits: rateLimits('Rate limits of the project (all its keys together).'),
      budget: budget('Spend budget of the project (all its keys together).'),
    }, ['id']),
    { maxItems: 1000, 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['id'] },
  );
}

/** Status: spend so far per budget period, from the gateways' ledger reconciliation (docs/limits.md). */
export function spendStatus(of: string): Schema {
  const points = (what: string) => str(`${what} A decimal string of points; up to a minute behind the ledger.`, { maxLength: 48 });
  return obj(`Spend so far of ${of} for each budget it has, as the gateways last read it from the ledger (written at most once a minute). Absent without a budget.`, {
    day: points('Spent this UTC day.'),
    month: points('Spent this UTC month.'),
    total: points('Spent in total.'),
  });
}
