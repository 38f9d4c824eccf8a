// What a platform engineer may set on a key, a project or an organization: rate limits and budgets.
// Imported by the snapshot schema; kept free of transforms so the JSON Schema documents exactly what a file may hold.
import { z } from 'zod';

// Budgets in points: a decimal string ("12.5") or a plain number, exact downstream (same rule as prices).
const points = z
  .union([z.string().regex(/^\d+(\.\d+)?$/, 'a non-negative decimal such as "2.5"'), z.number().nonnegative()])
  .describe('Points. Quote it ("12.5") to keep it exact in YAML.');

const perMinute = z.number().int().positive().max(1_000_000_000);

const rates = {
  rpm: perMinute.optional().describe('Requests per minute (GCRA: up to this many at once, then one every 60/rpm seconds).'),
  tpm: perMinute.optional().describe('Tokens per minute, input + output, settled with the real usage after each answer.'),
  concurrency: z.number().int().positive().max(1_000_000).optional().describe('Requests in flight at once (streams count until they end).'),
};

export const modelLimitSchema = z
  .object({ model: z.string().min(1).describe('Model id or alias this limit applies to.'), ...rates })
  .strict();

export const rateLimitsSchema = z
  .object({
    ...rates,
    models: z.array(modelLimitSchema).optional().describe('Extra limits for one model each; they apply on top of the ones above.'),
  })
  .strict()
  .describe('Rate limits. Every limit that applies to a request (key, project, organization; per model) must admit it.');

export const budgetSchema = z
  .object({
    day: points.optional().describe('Points per UTC calendar day.'),
    month: points.optional().describe('Points per UTC calendar month.'),
    total: points.optional().describe('Points in total, never reset.'),
    softPercent: z.number().int().min(1).max(100).optional().describe('Percent of a budget at which answers are flagged (x-tollgate-budget-warning) but still served.'),
  })
  .strict()
  .describe('Spend budgets in points. A request is refused (429 insufficient_quota) once a budget is spent.');

export const projectSchema = z
  .object({
    id: z
      .string()
      .min(1)
      .max(253)
      .regex(/^[a-z0-9]([a-z0-9._-]*[a-z0-9])?$/, 'lower-case letters, digits, ".", "_" or "-"')
      .describe('Project id, as named by its keys.'),
    limits: rateLimitsSchema.optional(),
    budget: budgetSchema.optional(),
  })
  .strict();

export type RateLimits = z.output<typeof rateLimitsSchema>;
export type Budget = z.output<typeof budgetSchema>;
export type ProjectConfig = z.output<typeof projectSchema>;
