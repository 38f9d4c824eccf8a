// The snapshot as the admin API shows it: organizations, projects and keys as configured, never a hash or a secret.
import type { Rule } from '../governance/rules.ts';
import type { RuntimeKey, RuntimeSnapshot } from '../snapshot/runtime.ts';
import type { ApiKey } from '../snapshot/schema.ts';
import { ConfigEditError } from '../snapshot/config-keys.ts';
import { SnapshotError } from '../snapshot/validate.ts';
import { AdminError } from './errors.ts';
import type { AdminContext } from './route.ts';

export type KeyState = 'active' | 'revoked' | 'expired';

export function keyState(k: ApiKey, now = Date.now()): KeyState {
  if (k.disabled) return 'revoked';
  return k.expiresAt && Date.parse(k.expiresAt) <= now ? 'expired' : 'active';
}

export function keyView(k: ApiKey, now = Date.now()) {
  return {
    id: k.id,
    prefix: k.prefix,
    ...(k.name !== undefined ? { name: k.name } : {}),
    organization: k.organization,
    project: k.project,
    state: keyState(k, now),
    ...(k.createdAt !== undefined ? { createdAt: k.createdAt } : {}),
    ...(k.expiresAt !== undefined ? { expiresAt: k.expiresAt } : {}),
    ...(k.limits !== undefined ? { limits: k.limits } : {}),
    ...(k.budget !== undefined ? { budget: k.budget } : {}),
  };
}

/** Every key, ordered by id (a stable order for paging). */
export function allKeys(s: RuntimeSnapshot): ApiKey[] {
  const keys: ApiKey[] = [];
  for (const k of s.keysByHash.values()) keys.push(k.config);
  return keys.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

export function findKey(s: RuntimeSnapshot, id: string): RuntimeKey | undefined {
  for (const k of s.keysByHash.values()) if (k.id === id) return k;
  return undefined;
}

export function organizationView(s: RuntimeSnapshot, id: string) {
  const org = s.organizations.get(id);
  if (!org) throw new AdminError('not_found', `No organization "${id}".`);
  const c = org.config;
  const projects = new Set((c.projects ?? []).map((p) => p.id));
  let keys = 0;
  for (const k of s.keysByHash.values()) {
    if (k.organization.id !== id) continue;
    keys++;
    projects.add(k.project);
  }
  return {
    id: c.id,
    models: c.models,
    ...(c.discount !== undefined ? { discount: String(c.discount) } : {}),
    ...(c.limits !== undefined ? { limits: c.limits } : {}),
    ...(c.budget !== undefined ? { budget: c.budget } : {}),
    projects: [...projects].sort(),
    keys,
  };
}

/** A project's sort and cursor key: organization, then id (NUL sorts before every character a slug may hold). */
export function projectKey(p: { organization: string; id: string }): string {
  return `${p.organization}\u0000${p.id}`;
}

/** Every project an organization lists or a key names, ordered by organization then id. */
export function projectViews(s: RuntimeSnapshot, organization?: string) {
  const byId = new Map<string, { id: string; organization: string; limits?: unknown; budget?: unknown; keys: number }>();
  for (const org of s.organizations.values()) {
    if (organization !== undefined && org.id !== organization) continue;
    for (const p of org.config.projects ?? []) {
      byId.set(`${org.id}\u0000${p.id}`, { id: p.id, organization: org.id, ...(p.limits ? { limits: p.limits } : {}), ...(p.budget ? { budget: p.budget } : {}), keys: 0 });
    }
  }
  for (const k of s.keysByHash.values()) {
    if (organization !== undefined && k.organization.id !== organization) continue;
    const id = `${k.organization.id}\u0000${k.project}`;
    let p = byId.get(id);
    if (!p) byId.set(id, (p = { id: k.project, organization: k.organization.id, keys: 0 }));
    p.keys++;
  }
  return [...byId.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, p]) => p);
}

/** A key's own limits and budgets (its organization's and project's show on those), per-model ones included. */
export function keyOwnRules(k: RuntimeKey): Rule[] {
  const gov = k.governance;
  if (!gov) return [];
  const own = gov.rules.filter((r) => r.scope === 'key');
  for (const list of gov.byModel.values()) for (const r of list) if (r.scope === 'key' && !own.includes(r)) own.push(r);
  return own;
}

/** The spend view of some rules (undefined when there are none or no governor). */
export async function spendOf(ctx: AdminContext, rules: readonly Rule[] | undefined) {
  if (!ctx.governor || !rules || rules.length === 0) return undefined;
  try {
    return await ctx.governor.describeRules(rules);
  } catch (err) {
    throw new AdminError('internal', `The limit counters cannot be read right now (${(err as Error).message}); try again shortly.`, { status: 503 });
  }
}

/**
 * Runs one edit of the standalone config file, then loads it into this process, so the answer describes the
 * snapshot already serving. Cluster mode: 405, the custom resources are the source of truth there.
 */
export function editConfig<T>(ctx: AdminContext, edit: (path: string) => T): T {
  if (ctx.mode === 'kubernetes' || !ctx.configPath) {
    throw new AdminError('read_only', 'This gateway runs on Kubernetes: its configuration is the tollgate custom resources. Change them with kubectl (e.g. kubectl apply -f key.yaml, kubectl patch apikeys.tollgate.dev <name> --type merge -p \'{"spec":{"disabled":true}}\') or through GitOps.');
  }
  let out: T;
  try {
    out = edit(ctx.configPath);
  } catch (err) {
    if (err instanceof ConfigEditError) throw new AdminError(err.code, err.message);
    if (err instanceof SnapshotError) throw new AdminError('invalid_request', 'The change would make the configuration invalid.', { status: 422, details: err.issues.map((m) => ({ location: 'body', message: m })) });
    throw err;
  }
  ctx.reload?.();
  return out;
}
