import { decimal, status } from '../common.ts';
import { AGE_COLUMN, APPLIED_COLUMN, READY_COLUMN, REASON_COLUMN, type KindDefinition } from '../crd.ts';
import { budget, projects, rateLimits, spendStatus } from '../limits.ts';
import { list, obj, str } from '../openapi.ts';

export const organization: KindDefinition = {
  kind: 'Organization',
  plural: 'organizations',
  singular: 'organization',
  shortNames: ['tgorg'],
  description: 'Organization is a tenant: the models its ApiKeys may call and an optional discount. Usage is reported per organization, project and model.',
  spec: obj('Desired state of the Organization.', {
    models: list('Model ids this organization may call: an exact id (openai/gpt-4o), a prefix ending in * ("openai/*") or everything ("*"). Empty: none.', str('Model id or pattern.', {
      minLength: 1,
      maxLength: 200,
      pattern: '^(\\*|[A-Za-z0-9][A-Za-z0-9._:/@-]*\\*?)$',
    }), { maxItems: 1000, 'x-kubernetes-list-type': 'set' }),
    discount: decimal('Overrides every PricingGroup discount for this organization, e.g. "0.9" for 10% off.'),
    limits: rateLimits('Rate limits of the whole organization (all its keys together).'),
    budget: budget('Spend budget of the whole organization, in points.'),
    projects: projects(),
  }),
  status: status({ spend: spendStatus('the whole organization') }),
  columns: [
    { name: 'Models', type: 'string', jsonPath: '.spec.models', description: 'Models this organization may call.' },
    { name: 'Discount', type: 'string', jsonPath: '.spec.discount', description: 'Discount override (empty: the pricing groups\' own).' },
    { name: 'RPM', type: 'integer', jsonPath: '.spec.limits.rpm', description: 'Requests per minute for the organization.' },
    { name: 'Budget/Day', type: 'string', jsonPath: '.spec.budget.day', description: 'Points per UTC day.' },
    { name: 'Budget/Month', type: 'string', jsonPath: '.spec.budget.month', description: 'Points per UTC month.' },
    { name: 'Spent/Month', type: 'string', jsonPath: '.status.spend.month', description: 'Points spent this UTC month (from the ledger, up to a minute behind).' },
    { name: 'Spent/Day', type: 'string', jsonPath: '.status.spend.day', description: 'Points spent this UTC day.', priority: 1 },
    { name: 'TPM', type: 'integer', jsonPath: '.spec.limits.tpm', description: 'Tokens per minute for the organization.', priority: 1 },
    { name: 'Concurrency', type: 'integer', jsonPath: '.spec.limits.concurrency', description: 'Requests in flight for the organization.', priority: 1 },
    READY_COLUMN,
    REASON_COLUMN,
    APPLIED_COLUMN,
    AGE_COLUMN,
  ],
};
