// The admin API's shared zod schemas: inputs are validated with them and the OpenAPI document is generated from them.
import { z } from 'zod';
import { budgetSchema, rateLimitsSchema } from '../governance/limits-schema.ts';

export const slugSchema = z
  .string()
  .min(1)
  .max(253)
  .regex(/^[a-z0-9]([a-z0-9._-]*[a-z0-9])?$/, 'lower-case letters, digits, ".", "_" or "-"');

/** Exact decimal text, never a JSON number. */
export const moneySchema = z.string().regex(/^\d+(\.\d+)?$/).describe('Exact decimal (points), as a string.');

export const errorSchema = z
  .object({
    error: z.object({
      code: z.enum(['unauthorized', 'forbidden', 'not_found', 'invalid_request', 'conflict', 'read_only', 'admin_disabled', 'unsupported_media_type', 'internal']),
      message: z.string(),
      details: z.array(z.object({ location: z.string(), message: z.string(), value: z.unknown().optional() })).optional(),
    }),
  })
  .meta({ id: 'AdminError' });

/** The error answers every route that reads the configuration declares. */
export const readErrors = {
  400: { description: 'Invalid input.', schema: errorSchema },
  401: { description: 'No or wrong token.', schema: errorSchema },
  503: { description: 'No configuration loaded yet, or the limit counters cannot be read.', schema: errorSchema },
};

/** And those of every write. */
export const writeErrors = {
  ...readErrors,
  403: { description: 'A read-only token, or a cross-site request.', schema: errorSchema },
  405: { description: 'Read-only here (Kubernetes: change the custom resources).', schema: errorSchema },
  415: { description: 'A body that is not application/json.', schema: errorSchema },
};

/** A write the snapshot's validation refuses. */
export const invalidConfigError = { 422: { description: 'The change would make the configuration invalid.', schema: errorSchema } };

export const listQuery = {
  limit: z.coerce.number().int().min(1).max(500).default(50).describe('Items per page (1–500).'),
  cursor: z.string().min(1).max(512).optional().describe('next_cursor of the previous page.'),
};

export function listOf<T extends z.ZodType>(item: T) {
  return z.object({ data: z.array(item), next_cursor: z.string().nullable() });
}

export const limitsSchema = rateLimitsSchema;
export { budgetSchema };

export const sessionSchema = z
  .object({ name: z.string(), role: z.enum(['read', 'write']), mode: z.enum(['standalone', 'kubernetes']), writable: z.boolean() })
  .meta({ id: 'AdminSession' });

export const spendSchema = z
  .object({
    limits: z.array(z.object({ scope: z.string(), owner: z.string(), kind: z.string(), model: z.string().optional(), limit: z.number().int(), remaining: z.number().int(), reset_seconds: z.number().int() })),
    budgets: z.array(
      z.object({ scope: z.string(), owner: z.string(), period: z.string(), points: moneySchema, spent: moneySchema, remaining: moneySchema, soft_points: moneySchema.optional(), resets_at: z.string().nullable() }),
    ),
  })
  .describe('What is left now of the scope\'s own rate limits and budgets (the same entries as the key\'s limits report).')
  .meta({ id: 'AdminSpend' });

export const organizationSchema = z
  .object({
    id: z.string(),
    models: z.array(z.string()),
    discount: moneySchema.optional(),
    limits: limitsSchema.optional(),
    budget: budgetSchema.optional(),
    projects: z.array(z.string()).describe('Projects the organization lists or that one of its keys names.'),
    keys: z.number().int().describe('Keys in the organization (any state).'),
    spend: spendSchema.optional().describe('On GET /admin/v1/organizations/:id only, when the organization has limits or a budget.'),
  })
  .meta({ id: 'AdminOrganization' });

export const projectSchema = z
  .object({
    id: z.string(),
    organization: z.string(),
    limits: limitsSchema.optional(),
    budget: budgetSchema.optional(),
    keys: z.number().int(),
    spend: spendSchema.optional().describe('When the project has limits or a budget of its own.'),
  })
  .meta({ id: 'AdminProject' });

export const keyStateSchema = z.enum(['active', 'revoked', 'expired']);

export const keySchema = z
  .object({
    id: z.string(),
    prefix: z.string(),
    name: z.string().optional(),
    organization: z.string(),
    project: z.string(),
    state: keyStateSchema,
    createdAt: z.string().optional(),
    expiresAt: z.string().optional(),
    limits: limitsSchema.optional(),
    budget: budgetSchema.optional(),
    spend: spendSchema.optional().describe('On GET /admin/v1/keys/:id only, when the key has limits or a budget of its own.'),
  })
  .meta({ id: 'AdminKey' });

export const createdKeySchema = z
  .object({ key: keySchema, secret: z.string().describe('The API key itself: shown in this answer only, never again.') })
  .meta({ id: 'AdminCreatedKey' });

const countsShape = {
  requests: z.number().int(),
  input: z.number().int(),
  output: z.number().int(),
  cache_read: z.number().int(),
  cache_write: z.number().int(),
  reasoning: z.number().int(),
  cost_points: moneySchema,
};

const usageGroupSchema = z.object({
  group: z.string(),
  organization: z.string().optional().describe("With group_by=project: the project's organization (a project id is unique within its organization only)."),
  ...countsShape,
});

export const usageSchema = z
  .object({
    from: z.string(),
    to: z.string(),
    bucket: z.enum(['hour', 'day']),
    group_by: z.enum(['model', 'project', 'key', 'organization']),
    series: z.array(z.object({ start: z.string(), groups: z.array(usageGroupSchema) })),
    totals: z.array(usageGroupSchema),
    total: z.object(countsShape),
  })
  .meta({ id: 'AdminUsage' });

export const requestSchema = z
  .object({
    request_id: z.string(),
    occurred_at: z.string(),
    key_id: z.string(),
    key_prefix: z.string().nullable(),
    organization: z.string(),
    project: z.string(),
    route: z.string(),
    model: z.string(),
    model_id: z.string(),
    provider: z.string(),
    upstream_model: z.string(),
    status: z.number().int().nullable(),
    stream: z.boolean(),
    input: z.number().int(),
    output: z.number().int(),
    cache_read: z.number().int(),
    cache_write: z.number().int(),
    reasoning: z.number().int(),
    cost_points: moneySchema,
    estimated: z.boolean(),
    latency_ms: z.number().int().nullable(),
    attempts: z.number().int(),
  })
  .meta({ id: 'AdminRequest' });

export const upstreamTargetSchema = z.object({ provider: z.string(), model: z.string(), weight: z.number().int() });

export const modelSchema = z
  .object({
    id: z.string(),
    alias: z.string().optional(),
    public: z.boolean(),
    pricingGroup: z.string(),
    created: z.number().int(),
    protocols: z.record(z.string(), z.array(upstreamTargetSchema)),
    providers: z.array(z.string()),
    fallbacks: z.array(z.string()).optional(),
  })
  .meta({ id: 'AdminModel' });

const tierPrices = { input: moneySchema, output: moneySchema, cacheRead: moneySchema, cacheWrite: moneySchema };

export const pricingGroupSchema = z
  .object({
    id: z.string(),
    mode: z.enum(['flat_tokens', 'input_tokens_tiers']),
    discount: moneySchema,
    prices: z.object(tierPrices).optional(),
    tiers: z.array(z.object({ upTo: z.number().int().nullable(), ...tierPrices })).optional(),
    models: z.array(z.string()).describe('Models priced by this group.'),
  })
  .meta({ id: 'AdminPricingGroup' });

export const providerSchema = z
  .object({
    id: z.string(),
    protocols: z.array(z.string()).describe('Protocols its models are served over.'),
    baseUrl: z.string(),
    credential: z.object({
      env: z.string().nullable().describe('The environment variable it is read from; null for a literal or none.'),
      present: z.boolean().describe('Whether a credential is configured and non-empty (its value is never shown).'),
    }),
  })
  .meta({ id: 'AdminProvider' });

export const upstreamsSchema = z
  .object({
    generation: z.number().int().nullable(),
    targets: z.array(
      z.object({
        provider: z.string(),
        model: z.string(),
        state: z.enum(['healthy', 'ejected', 'half_open']),
        healthy: z.boolean(),
        consecutiveFailures: z.number().int(),
        window: z.object({ requests: z.number().int(), failures: z.number().int() }).describe('Outcomes in the failure-ratio window (while healthy).'),
        lastEjectCause: z.enum(['consecutive', 'ratio']).nullable(),
        ejectedUntil: z.string().nullable(),
        inFlight: z.number().int(),
        attempts: z.record(z.string(), z.number().int()),
        retries: z.number().int(),
        ejections: z.number().int(),
        ejectionsBy: z.object({ consecutive: z.number().int(), ratio: z.number().int() }),
      }),
    ),
  })
  .meta({ id: 'AdminUpstreams' });
