// Parses an untrusted snapshot and names the exact path of every bad field.
import type { z } from 'zod';
import type { Snapshot } from './schema.ts';
import { snapshotSchema } from './schema.ts';

export class SnapshotError extends Error {
  readonly issues: string[];
  constructor(source: string, issues: string[]) {
    super(`invalid snapshot from ${source}:\n  ${issues.join('\n  ')}`);
    this.issues = issues;
  }
}

export function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const p of path) out += typeof p === 'number' ? `[${p}]` : out === '' ? String(p) : `.${String(p)}`;
  return out || '(root)';
}

export function formatIssues(error: z.ZodError): string[] {
  return error.issues.map((i) => `${formatPath(i.path)}: ${i.message}`);
}

export function parseSnapshot(input: unknown, source: string): Snapshot {
  const r = snapshotSchema.safeParse(dropNullLists(input));
  if (!r.success) throw new SnapshotError(source, formatIssues(r.error));
  return r.data;
}

// A YAML list header with nothing under it (`apiKeys:`) reads as null; it means "none yet".
function dropNullLists(input: unknown): unknown {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) return input;
  return Object.fromEntries(Object.entries(input).filter(([, v]) => v !== null));
}
