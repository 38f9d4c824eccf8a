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

/** An offset page over an in-memory list (snapshot-backed lists are small and already in memory). */
export function page<T>(items: readonly T[], limit: number, cursor: string | undefined): { data: T[]; next_cursor: string | null } {
  const at = decodeCursor(cursor, (v): v is { o: number } => typeof v === 'object' && v !== null && Number.isSafeInteger((v as { o: unknown }).o) && (v as { o: number }).o >= 0) ?? { o: 0 };
  const data = items.slice(at.o, at.o + limit);
  return { data, next_cursor: at.o + limit < items.length ? encodeCursor({ o: at.o + limit }) : null };
}
