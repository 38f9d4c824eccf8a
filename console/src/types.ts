// The admin API's JSON shapes as the console reads them. Money is always a decimal string, never a number.
export type Decimal = string;

export interface ApiErrorBody {
  error?: { code?: string; message?: string };
}

export interface Page<T> {
  data: T[];
  next_cursor: string | null;
}

export interface Session {
  name: string;
  role: 'read' | 'write';
  mode: 'standalone' | 'kubernetes';
  writable: boolean;
}

export interface ModelLimit {
  model: string;
  rpm?: number;
  tpm?: number;
  concurrency?: number;
}

export interface Limits {
  rpm?: number;
  tpm?: number;
  concurrency?: number;
  models?: ModelLimit[];
}

export interface Budget {
  day?: Decimal | number;
  month?: Decimal | number;
  total?: Decimal | number;
  softPercent?: number;
}

/** What is left now of a scope's own limits and budgets, as the governor counts them. */
export interface Spend {
  limits: { scope: string; owner: string; kind: string; model?: string; limit: number; remaining: number; reset_seconds: number }[];
  budgets: { scope: string; owner: string; period: string; points: Decimal; spent: Decimal; remaining: Decimal; soft_points?: Decimal; resets_at: string | null }[];
}

export interface Organization {
  id: string;
  models: string[];
  discount?: Decimal;
  limits?: Limits;
  budget?: Budget;
  projects: string[];
  keys: number;
  spend?: Spend;
}

export interface Project {
  id: string;
  organization: string;
  limits?: Limits;
  budget?: Budget;
  keys: number;
  spend?: Spend;
}

export type KeyState = 'active' | 'revoked' | 'expired';

export interface ApiKey {
  id: string;
  prefix: string;
  name?: string;
  organization: string;
  project: string;
  state: KeyState;
  createdAt?: string;
  expiresAt?: string;
  limits?: Limits;
  budget?: Budget;
}

export interface CreatedKey {
  key: ApiKey;
  secret: string;
}

export interface UsageGroup {
  group: string;
  /** Set when grouped by project: project ids are unique within an organization only. */
  organization?: string;
  requests: number;
  input: number;
  output: number;
  cache_read?: number;
  cache_write?: number;
  reasoning?: number;
  cost_points: Decimal;
}

export interface Usage {
  from: string;
  to: string;
  bucket: 'hour' | 'day';
  group_by: string;
  series: { start: string; groups: UsageGroup[] }[];
  totals: UsageGroup[];
  total: { requests: number; input: number; output: number; cost_points: Decimal };
}

export interface RequestRow {
  request_id: string;
  occurred_at: string;
  key_id: string | null;
  key_prefix: string | null;
  organization: string;
  project: string;
  route: string | null;
  model: string;
  model_id: string | null;
  provider: string | null;
  upstream_model: string | null;
  status: number | null;
  stream: boolean | null;
  input: number;
  output: number;
  cache_read: number;
  cache_write: number;
  reasoning: number;
  cost_points: Decimal;
  estimated: boolean;
  latency_ms: number | null;
  attempts: number | null;
}

export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
