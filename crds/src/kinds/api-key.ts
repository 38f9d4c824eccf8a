import { SLUG, name, status } from '../common.ts';
import { AGE_COLUMN, APPLIED_COLUMN, READY_COLUMN, REASON_COLUMN, type KindDefinition } from '../crd.ts';
import { budget, rateLimits, spendStatus } from '../limits.ts';
import { bool, obj, str } from '../openapi.ts';

export const apiKey: KindDefinition = {
  kind: 'ApiKey',
  plural: 'apikeys',
  singular: 'apikey',
  shortNames: ['tgkey'],
  description: 'ApiKey issues one sk_live_ key for a project of an Organization. The operator generates the key once into a Secret owned by this ApiKey (status.secretName, key "key") and gives the gateway only its hash. Disabling, expiring or deleting the ApiKey revokes the key.',
  spec: obj('Desired state of the ApiKey.', {
    organization: { ...name('Name of the Organization this key belongs to. Fixed once set: a key never moves between tenants.'),
      'x-kubernetes-validations': [{ rule: 'self == oldSelf', message: 'organization is immutable: create a new ApiKey instead' }],
    },
    project: str('Project the usage of this key is reported under, e.g. web.', { minLength: 1, maxLength: 253, pattern: SLUG }),
    displayName: str('Human-readable name, e.g. "Web frontend".', { maxLength: 200 }),
    disabled: bool('true revokes the key at once; false (default) lets it authenticate again.'),
    expiresAt: str('RFC 3339 time after which the key is refused, e.g. 2027-01-01T00:00:00Z. Omit for no expiry.', { format: 'date-time' }),
    limits: rateLimits('Rate limits of this key alone.'),
    budget: budget('Spend budget of this key alone, in points.'),
  }, ['organization', 'project']),
  status: status({
    secretName: str('Name of the Secret (owned by this ApiKey) whose data.key holds the sk_live_ key.', { maxLength: 253 }),
    prefix: str('Display prefix of the key, e.g. sk_live_Ab3dEf: enough to recognise it in logs, never enough to use it.', { maxLength: 24 }),
    spend: spendStatus('this key'),
  }),
  columns: [
    { name: 'Org', type: 'string', jsonPath: '.spec.organization', description: 'Organization.' },
    { name: 'Project', type: 'string', jsonPath: '.spec.project', description: 'Project.' },
    { name: 'Prefix', type: 'string', jsonPath: '.status.prefix', description: 'Key display prefix.' },
    { name: 'RPM', type: 'integer', jsonPath: '.spec.limits.rpm', description: 'Requests per minute for this key.', priority: 1 },
    { name: 'Budget', type: 'string', jsonPath: '.spec.budget.month', description: 'Points per UTC month for this key.', priority: 1 },
    { name: 'Spent/Month', type: 'string', jsonPath: '.status.spend.month', description: 'Points spent this UTC month (keys with a month budget).', priority: 1 },
    READY_COLUMN,
    { name: 'Disabled', type: 'boolean', jsonPath: '.spec.disabled', description: 'Revoked by hand.', priority: 1 },
    { name: 'Expires', type: 'string', jsonPath: '.spec.expiresAt', description: 'Expiry time.', priority: 1 },
    { name: 'Secret', type: 'string', jsonPath: '.status.secretName', description: 'Secret holding the key.', priority: 1 },
    REASON_COLUMN,
    APPLIED_COLUMN,
    AGE_COLUMN,
  ],
};
