// Limits and budgets compiled once per snapshot into flat rule lists, so admission walks an array and parses nothing.
// A key without any limit on itself, its project or its organization compiles to `undefined`: the governor then
// costs one property read per request.
import type { Budget, ProjectConfig, RateLimits } from './limits-schema.ts';
import type { BudgetPeriod } from './periods.ts';
import { pointsToUnits } from './spend-units.ts';

export type RuleKind = 'rpm' | 'tpm' | 'concurrency' | 'budget';
export type Scope = 'key' | 'project' | 'organization';

export interface Rule {
  kind: RuleKind;
  /** Counter name (before the backend's prefix and, for budgets, the period suffix), e.g. "k:alpha:rpm". */
  id: string;
  scope: Scope;
  /** The scope's id as shown to the caller (key id, project id, organization id). */
  owner: string;
  /** Canonical model id for per-model limits. */
  model?: string;
  /** rpm / tpm / concurrency. */
  limit: number;
  period?: BudgetPeriod;
  /** Budget in femtopoints (spend-units.ts). */
  units?: bigint;
  /** Soft threshold in femtopoints: answers are flagged past it. */
  softUnits?: bigint;
}

export interface KeyGovernance {
  /** Rules for a model without per-model limits. */
  rules: readonly Rule[];
  /** Per canonical model id: `rules` plus that model's own limits. */
  byModel: ReadonlyMap<string, readonly Rule[]>;
}

/** An organization's rules and its projects' rules; `resolve` maps a model name or alias to its canonical id. */
export interface OrgGovernance {
  rules: Rule[];
  projects: ReadonlyMap<string, Rule[]>;
}

export type ModelResolver = (name: string) => string | undefined;

export function compileScope(scope: Scope, owner: string, prefix: string, limits: RateLimits | undefined, budget: Budget | undefined, resolve: ModelResolver, warn?: (m: string) => void): Rule[] {
  const rules: Rule[] = [];
  const rates = (l: { rpm?: number; tpm?: number; concurrency?: number }, model: string | undefined) => {
    const base = model === undefined ? prefix : `${prefix}:m:${model}`;
    if (l.rpm !== undefined) rules.push({ kind: 'rpm', id: `${base}:rpm`, scope, owner, model, limit: l.rpm });
    if (l.tpm !== undefined) rules.push({ kind: 'tpm', id: `${base}:tpm`, scope, owner, model, limit: l.tpm });
    if (l.concurrency !== undefined) rules.push({ kind: 'concurrency', id: `${base}:conc`, scope, owner, model, limit: l.concurrency });
  };
  if (limits) {
    rates(limits, undefined);
    for (const m of limits.models ?? []) {
      const id = resolve(m.model);
      if (id === undefined) {
        warn?.(`${scope} "${owner}": limits for unknown model "${m.model}" are ignored`);
        continue;
      }
      rates(m, id);
    }
  }
  if (budget) {
    const soft = budget.softPercent;
    for (const period of ['day', 'month', 'total'] as const) {
      const v = budget[period];
      if (v === undefined) continue;
      const units = pointsToUnits(v);
      rules.push({ kind: 'budget', id: `${prefix}:spend:`, scope, owner, limit: 0, period, units, softUnits: soft === undefined ? undefined : (units * BigInt(soft)) / 100n });
    }
  }
  return rules;
}

export function compileOrgGovernance(
  org: { id: string; limits?: RateLimits; budget?: Budget; projects?: ProjectConfig[] },
  resolve: ModelResolver,
  warn?: (m: string) => void,
): OrgGovernance | undefined {
  const rules = compileScope('organization', org.id, `o:${org.id}`, org.limits, org.budget, resolve, warn);
  const projects = new Map<string, Rule[]>();
  for (const p of org.projects ?? []) projects.set(p.id, compileScope('project', p.id, `p:${org.id}/${p.id}`, p.limits, p.budget, resolve, warn));
  if (rules.length === 0 && ![...projects.values()].some((r) => r.length > 0)) return undefined;
  return { rules, projects };
}

/** Key rules first (the narrowest scope refuses first), then project, then organization. */
export function compileKeyGovernance(keyRules: Rule[], org: OrgGovernance | undefined, project: string): KeyGovernance | undefined {
  const all = [...keyRules, ...(org?.projects.get(project) ?? []), ...(org?.rules ?? [])];
  if (all.length === 0) return undefined;
  const rules = all.filter((r) => r.model === undefined);
  const byModel = new Map<string, Rule[]>();
  for (const r of all) if (r.model !== undefined && !byModel.has(r.model)) byModel.set(r.model, all.filter((x) => x.model === undefined || x.model === r.model));
  return { rules, byModel };
}
