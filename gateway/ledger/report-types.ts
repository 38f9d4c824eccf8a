// The usage report's shape (docs/contract.md, usage report): snake_case, tokens as integers, money as exact decimal
// strings. The zod schemas are the source of the types and of the OpenAPI document's description.
import { z } from 'zod';

export interface UsageReportQuery {
  project: string;
  from: Date;
  to: Date;
}

const tokens = z.number().int().nonnegative();
const decimal = z.string().regex(/^-?\d+(\.\d+)?$/, 'a decimal string').describe('Exact decimal, as a string.');

export const usageRowSchema = z
  .object({
    prompt_tokens: tokens,
    billable_prompt_tokens: tokens,
    cached_tokens: tokens,
    cache_explicit_read_tokens: tokens,
    cache_creation_tokens: tokens,
    completion_tokens: tokens,
    reasoning_tokens: tokens,
    total_tokens: tokens,
    generated_artifacts: tokens,
    request_count: tokens,
    cost_points: decimal,
    original_cost: decimal,
  })
  .meta({ id: 'UsageRow', description: 'Sums over the rows of a period: token counts as integers, money as decimal strings.' });

export type UsageRow = z.output<typeof usageRowSchema>;

/** What the report's `$schema` names: this version of the report format (docs/contract.md, usage report). */
export const USAGE_REPORT_SCHEMA = 'https://tollgate.dev/schemas/usage-report.json';

export const usageReportSchema = z
  .object({
    $schema: z.string(),
    project_id: z.string().describe("The key's project; the empty string would mean organization-wide (an admin view)."),
    from: z.string(),
    to: z.string(),
    totals: usageRowSchema,
    by_model: z.array(usageRowSchema.extend({ model: z.string() })),
  })
  .meta({ id: 'UsageReport', description: "The calling key's project usage in [from, to), by model." });

export type UsageReport = z.output<typeof usageReportSchema>;
