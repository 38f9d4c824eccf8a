// The usage report's shape (DESIGN §5): snake_case, tokens as integers, money as exact decimal strings.
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

export interface UsageReport {
  object: 'usage_report';
  project: string;
  from: string;
  to: string;
  totals: UsageRow;
  by_model: (UsageRow & { model: string })[];
}
