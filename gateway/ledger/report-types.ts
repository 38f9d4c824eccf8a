// The usage report's shape (docs/contract.md, usage report): snake_case, tokens as integers, money as exact decimal strings.
export interface UsageReportQuery {
  project: string;
  from: Date;
  to: Date;
}

export interface UsageRow {
  prompt_tokens: number;
  billable_prompt_tokens: number;
  cached_tokens: number;
  cache_explicit_read_tokens: number;
  cache_creation_tokens: number;
  completion_tokens: number;
  reasoning_tokens: number;
  total_tokens: number;
  generated_artifacts: number;
  request_count: number;
  cost_points: string;
  original_cost: string;
}

/** What the report's `$schema` names: this version of the report format (docs/contract.md, usage report). */
export const USAGE_REPORT_SCHEMA = 'https://tollgate.dev/schemas/usage-report.json';

export interface UsageReport {
  $schema: string;
  /** The key's project; the empty string would mean organization-wide (an admin view). */
  project_id: string;
  from: string;
  to: string;
  totals: UsageRow;
  by_model: (UsageRow & { model: string })[];
}
