// Reads one journal line back into a LedgerRow, checking what Postgres would otherwise reject
// (a bad row must be set aside, not block every batch behind it forever).
import { parseDecimal } from '../billing/decimal.ts';
import type { LedgerRow } from './row.ts';

const TEXT_FIELDS = [
  'requestId', 'organization', 'project', 'apiKeyId', 'clientModel', 'modelId', 'provider', 'upstreamModel', 'endpoint',
] as const;
const COUNT_FIELDS = ['input', 'output', 'cacheRead', 'cacheWrite', 'reasoning', 'artifacts'] as const;
const FLAG_FIELDS = ['stream', 'explicitCache', 'estimated'] as const;

/** Throws with a reason when the line is not a row the database will accept. */
export function parseJournalLine(line: string): LedgerRow {
  const row = JSON.parse(line) as Record<string, unknown>;
  if (row === null || typeof row !== 'object') throw new Error('not an object');
  for (const f of TEXT_FIELDS) {
    const v = row[f];
    if (typeof v !== 'string') throw new Error(`${f}: not a string`);
    // Postgres text cannot hold NUL.
    if (v.includes('\u0000')) throw new Error(`${f}: contains NUL`);
  }
  if (row.requestId === '') throw new Error('requestId: empty');
  if (typeof row.occurredAt !== 'number' || !Number.isFinite(new Date(row.occurredAt).getTime())) {
    throw new Error('occurredAt: not a time');
  }
  for (const f of COUNT_FIELDS) {
    const v = row[f];
    if (!Number.isSafeInteger(v) || (v as number) < 0) throw new Error(`${f}: not a non-negative integer`);
  }
  for (const f of FLAG_FIELDS) {
    if (typeof row[f] !== 'boolean') throw new Error(`${f}: not a boolean`);
  }
  for (const f of ['costPoints', 'originalCost'] as const) {
    if (typeof row[f] !== 'string') throw new Error(`${f}: not a decimal string`);
    parseDecimal(row[f]);
  }
  // jsonb rejects the \u0000 escape; detail is informational, so replace rather than reject.
  if (line.includes('\\u0000')) row.detail = withoutNul(row.detail);
  return row as unknown as LedgerRow;
}

function withoutNul(v: unknown): unknown {
  if (typeof v === 'string') return v.replaceAll('\u0000', '\uFFFD');
  if (Array.isArray(v)) return v.map(withoutNul);
  if (v && typeof v === 'object') {
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [withoutNul(k) as string, withoutNul(x)]));
  }
  return v;
}
