// The body of GET /api/business/v1/customer/limits: the calling key's limits and budgets with what is left. The zod
// schema is the source of the type and of the OpenAPI document's description.
import { z } from 'zod';

const scope = z.string().describe('key, project or organization');
const points = z.string().regex(/^\d+(\.\d+)?$/, 'a decimal string').describe('Points, as an exact decimal string.');

export const limitsViewSchema = z
  .object({
    key: z.string(),
    project: z.string(),
    organization: z.string(),
    backend: z.enum(['memory', 'redis']).describe('Where the counters live: this process, or Redis shared by every pod.'),
    limits: z.array(
      z.object({
        scope,
        owner: z.string(),
        kind: z.string().describe('rpm, tpm or concurrency'),
        model: z.string().optional(),
        limit: z.number().int(),
        remaining: z.number().int().nonnegative(),
        reset_seconds: z.number().int().nonnegative(),
      }),
    ),
    budgets: z.array(
      z.object({
        scope,
        owner: z.string(),
        period: z.string().describe('day, month or total'),
        points,
        spent: points,
        remaining: points,
        soft_points: points.optional(),
        resets_at: z.string().nullable().describe('RFC 3339; null for a total budget, which never resets.'),
      }),
    ),
  })
  .meta({ id: 'LimitsView', description: 'The limits and budgets that apply to the calling key, and what is left of each.' });

export type LimitsView = z.output<typeof limitsViewSchema>;
