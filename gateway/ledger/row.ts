// One billed request, as the ledger stores it (docs/contract.md: usage, durability). Money fields are exact decimal strings.
export interface LedgerRow {
  requestId: string;
  /** Epoch milliseconds when the response completed. */
  occurredAt: number;
  organization: string;
  project: string;
  apiKeyId: string;
  /** The `model` string the client sent. */
  clientModel: string;
  /** The configured model id it resolved to. */
  modelId: string;
  /** provider id and upstream model, e.g. "openai/gpt-4o-2024-08-06" under provider "openai". */
  provider: string;
  upstreamModel: string;
  endpoint: string;
  stream: boolean;
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  reasoning: number;
  artifacts: number;
  /** cache_read counted as explicit (docs/contract.md, usage cache_explicit_read_tokens). */
  explicitCache: boolean;
  estimated: boolean;
  costPoints: string;
  originalCost: string;
  detail: unknown;
  /** Upstream attempts the request took (retries and fallbacks included); absent in rows journaled before it existed. */
  attempts?: number;
  /** HTTP status the client got; absent in rows journaled before it existed (as are the next two). */
  status?: number;
  /** Milliseconds from the request's arrival until its row was recorded (the answer's last bytes follow at once). */
  latencyMs?: number;
  /** The key's display prefix (sk_live_Ab3dEf), for views that show which key without a lookup. */
  keyPrefix?: string;
}

/** The fields stored as Postgres text (which cannot hold NUL). */
export const TEXT_FIELDS = [
  'requestId', 'organization', 'project', 'apiKeyId', 'clientModel', 'modelId', 'provider', 'upstreamModel', 'endpoint',
] as const satisfies readonly (keyof LedgerRow)[];

/**
 * Whether two rows share the columns organization to stream, which repeat from row to row (one key, one model, one
 * route): a batch encoder reuses their encoding while they do, one comparison each instead of encoding them again.
 */
export function sameRoute(r: LedgerRow, prev: LedgerRow | undefined): boolean {
  return (
    prev !== undefined && r.organization === prev.organization && r.project === prev.project && r.apiKeyId === prev.apiKeyId &&
    r.clientModel === prev.clientModel && r.modelId === prev.modelId && r.provider === prev.provider &&
    r.upstreamModel === prev.upstreamModel && r.endpoint === prev.endpoint && r.stream === prev.stream
  );
}
