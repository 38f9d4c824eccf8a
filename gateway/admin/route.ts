// One admin route: its declaration (the RouteSpec the OpenAPI document is built from) and its handler, which gets
// inputs already validated with the declaration's own schemas.
import type { z } from 'zod';
import type { Governor } from '../governance/governor.ts';
import type { Ledger } from '../ledger/ledger.ts';
import type { SnapshotHolder } from '../snapshot/holder.ts';
import type { RuntimeSnapshot } from '../snapshot/runtime.ts';
import type { RouteSpec } from '../openapi/spec.ts';
import { AdminError } from './errors.ts';
import type { AdminToken } from './tokens.ts';

export type AdminMode = 'standalone' | 'kubernetes';

export interface AdminContext {
  holder: SnapshotHolder;
  ledger: Pick<Ledger, 'adminUsage' | 'recentRequests'>;
  mode: AdminMode;
  /** Standalone: the config file the admin API edits. */
  configPath?: string;
  /** Standalone: loads the config file into the holder now (after an edit). */
  reload?: () => void;
  /** Limits and budgets left now, for an organization's or a project's rules; absent: no `spend` in the views. */
  governor?: Pick<Governor, 'describeRules'>;
  /** The registry's view of upstream health (the admin /upstreams body). */
  upstreams: () => { generation: number | null; upstreams: unknown[] };
}

type Out<S> = S extends z.ZodType ? z.output<S> : undefined;

export interface AdminInput<S extends RouteSpec> {
  params: Out<S['params']>;
  query: Out<S['query']>;
  body: Out<S['body']>;
  who: AdminToken;
}

export interface AdminResult {
  status?: number;
  body: unknown;
  headers?: Record<string, string>;
  /** What the call acted on, for the audit line (an id, never a secret). */
  target?: string;
}

export interface AdminRoute {
  spec: RouteSpec;
  handle(ctx: AdminContext, input: AdminInput<RouteSpec>): Promise<AdminResult> | AdminResult;
}

export function adminRoute<const S extends RouteSpec>(spec: S, handle: (ctx: AdminContext, input: AdminInput<S>) => Promise<AdminResult> | AdminResult): AdminRoute {
  return { spec, handle: handle as AdminRoute['handle'] };
}

export function snapshotOf(ctx: AdminContext): RuntimeSnapshot {
  const s = ctx.holder.current;
  if (!s) throw new AdminError('internal', 'No configuration is loaded yet.', { status: 503 });
  return s;
}

/** Opaque page cursors: base64url JSON, checked on the way back in. */
export function encodeCursor(v: unknown): string {
  return Buffer.from(JSON.stringify(v)).toString('base64url');
}

export function decodeCursor<T>(cursor: string | undefined, check: (v: unknown) => v is T): T | undefined {
  if (cursor === undefined) return undefined;
  let v: unknown;
  try {
    v = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    v = undefined;
  }
  if (!check(v)) throw new AdminError('invalid_request', 'The cursor is not one this API returned.', { details: [{ location: 'query.cursor', message: 'not a valid cursor', value: cursor }] });
  return v;
}

/**
 * A keyset page over an in-memory list sorted by `keyOf` (strictly ascending, byte order): the cursor is the last
 * key shown, so an item added or removed meanwhile neither repeats nor skips another.
 */
export function page<T>(items: readonly T[], limit: number, cursor: string | undefined, keyOf: (item: T) => string): { data: T[]; next_cursor: string | null } {
  const after = decodeCursor(cursor, (v): v is { a: string } => typeof v === 'object' && v !== null && typeof (v as { a: unknown }).a === 'string');
  let start = 0;
  if (after) while (start < items.length && keyOf(items[start]) <= after.a) start++;
  const data = items.slice(start, start + limit);
  return { data, next_cursor: start + limit < items.length ? encodeCursor({ a: keyOf(data[data.length - 1]) }) : null };
}

/** Byte-order comparison (the order every list pages in). */
export function byKey<T>(keyOf: (item: T) => string): (a: T, b: T) => number {
  return (a, b) => {
    const x = keyOf(a);
    const y = keyOf(b);
    return x < y ? -1 : x > y ? 1 : 0;
  };
}
