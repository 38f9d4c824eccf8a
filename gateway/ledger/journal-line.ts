// Checks a journaled row (read back from a line, or still in memory) for what Postgres would
// otherwise reject or store wrongly: a bad row must be set aside, not block every batch behind it forever.
import { isDecimalText } from '../billing/decimal.ts';
import { TEXT_FIELDS } from './row.ts';
import type { LedgerRow } from './row.ts';

const COUNT_FIELDS = ['input', 'output', 'cacheRead', 'cacheWrite', 'reasoning', 'artifacts'] as const;
const FLAG_FIELDS = ['stream', 'explicitCache', 'estimated'] as const;

/** Throws with a reason when the line is not a row the database will accept. */
export function parseJournalLine(line: string): LedgerRow {
  return checkRow(JSON.parse(line));
}

/** Returns the row when the database will accept it; throws with a reason when not. */
export function checkRow(value: unknown): LedgerRow {
  if (value === null || typeof value !== 'object') throw new Error('not an object');
  const row = value as Record<string, unknown>;
  for (const f of TEXT_FIELDS) {
    const v = row[f];
    if (typeof v !== 'string') throw new Error(`${f}: not a string`);
    // Postgres text cannot hold NUL.
    if (v.includes('\u0000')) throw new Error(`${f}: contains NUL`);
  }
  if (row.requestId === '') throw new Error('requestId: empty');
  // What new Date() accepts: finite and within ±8.64e15 ms.
  if (typeof row.occurredAt !== 'number' || !(Math.abs(row.occurredAt) <= 8.64e15)) {
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
    const v = row[f];
    if (typeof v !== 'string') throw new Error(`${f}: not a decimal string`);
    if (!isDecimalText(v)) throw new Error(`${f}: not a non-negative decimal: ${JSON.stringify(v)}`);
  }
  // Optional: lines journaled before these fields existed replay without them (stored as NULL).
  if (row.status !== undefined && !(Number.isInteger(row.status) && (row.status as number) >= 0 && (row.status as number) <= 32767)) throw new Error('status: not an HTTP status');
  if (row.latencyMs !== undefined && !(Number.isInteger(row.latencyMs) && (row.latencyMs as number) >= 0 && (row.latencyMs as number) <= 2147483647)) throw new Error('latencyMs: not a non-negative integer');
  if (row.keyPrefix !== undefined && (typeof row.keyPrefix !== 'string' || row.keyPrefix.includes('\u0000'))) throw new Error('keyPrefix: not a string without NUL');
  return row as unknown as LedgerRow;
}
