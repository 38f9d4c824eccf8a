// Projects: every project with its limits and budget; a project's page adds its usage, budget left and keys.
import { useState } from 'preact/hooks';
import { get, list } from '../api.ts';
import { ErrorNote, Loading, useLoad } from '../components/load.tsx';
import { useRange } from '../components/range.tsx';
import type { Metric } from '../components/usage-chart.tsx';
import { UsageChart } from '../components/usage-chart.tsx';
import { formatPoints, isDecimal, subtractDecimal } from '../decimal.ts';
import { href } from '../router.ts';
import type { Budget, BudgetState, Limits, Project, Usage } from '../types.ts';
import { budgetText, KeysManager, limitsText } from './keys.tsx';
import { MetricToggle, Totals, usageQuery } from './overview.tsx';

export function Projects() {
  const [organization, setOrganization] = useState('');
  const projects = useLoad(() => list<Project>('/admin/v1/projects', { organization: organization || undefined, limit: 500 }), [organization]);
  const orgs = [...new Set(projects.data?.data.map((p) => p.organization) ?? [])];
  return (
    <div class="page">
      <header class="page-head">
        <h2>Projects</h2>
        <div class="controls">
          <select aria-label="Organization" value={organization} onChange={(e) => setOrganization(e.currentTarget.value)}>
            <option value="">All organizations</option>
            {orgs.map((o) => (
              <option key={o} value={o}>
                {o}
              </option>
            ))}
          </select>
        </div>
      </header>
      <ErrorNote error={projects.error} />
      <Loading when={projects.loading && !projects.data}>
        <section class="panel">
          <table class="data" data-testid="projects-table">
            <thead>
              <tr>
                <th>Organization</th>
                <th>Project</th>
                <th class="num">Keys</th>
                <th>Limits</th>
                <th>Budget</th>
              </tr>
            </thead>
            <tbody>
              {projects.data?.data.map((p) => (
                <tr key={`${p.organization}/${p.id}`}>
                  <td>{p.organization}</td>
                  <td>
                    <a href={href({ page: 'project', organization: p.organization, project: p.id })}>{p.id}</a>
                  </td>
                  <td class="num">{p.keys}</td>
                  <td class="small-text">{p.limits ? limitsText(p.limits) : '—'}</td>
                  <td class="small-text">{p.budget ? budgetText(p.budget) : '—'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </section>
      </Loading>
    </div>
  );
}

const WINDOWS = ['day', 'month', 'total'] as const;

/** One budget window's spent amount from whatever shape the API reports it in. */
function spentIn(state: BudgetState | undefined, window: string): string | undefined {
  const v = state?.[window];
  if (isDecimal(v)) return v;
  if (v && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    for (const k of ['spent', 'used', 'cost_points']) if (isDecimal(o[k])) return o[k];
  }
  return undefined;
}

export function BudgetPanel({ budget, limits, spend }: { budget?: Budget; limits?: Limits; spend?: BudgetState }) {
  const windows = WINDOWS.filter((w) => budget?.[w] !== undefined);
  return (
    <section class="panel">
      <h3>Limits and budget</h3>
      <p>
        <strong>Rate limits:</strong> {limits ? limitsText(limits) || 'none' : 'none of its own (organization and key limits still apply)'}
      </p>
      {windows.length === 0 ? (
        <p>
          <strong>Budget:</strong> none of its own.
        </p>
      ) : (
        <table class="data" data-testid="budget-table">
          <thead>
            <tr>
              <th>Budget</th>
              <th class="num">Limit (points)</th>
              <th class="num">Spent</th>
              <th class="num">Left</th>
            </tr>
          </thead>
          <tbody>
            {windows.map((w) => {
              const limit = String(budget![w]);
              const spent = spentIn(spend, w);
              const left = spent === undefined ? undefined : subtractDecimal(limit, spent);
              return (
                <tr key={w}>
                  <td>{w === 'total' ? 'total (never resets)' : `per ${w} (UTC)`}</td>
                  <td class="num mono">{formatPoints(limit)}</td>
                  <td class="num mono">{spent === undefined ? '—' : formatPoints(spent)}</td>
                  <td class={`num mono ${left?.startsWith('-') ? 'over' : ''}`}>{left === undefined ? '—' : formatPoints(left.startsWith('-') ? '0' : left)}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
      {budget?.softPercent !== undefined && <p class="muted">Answers are flagged once {budget.softPercent}% of a budget is spent.</p>}
    </section>
  );
}

export function ProjectPage({ organization, project }: { organization: string; project: string }) {
  const [range, rangeControl] = useRange('30d');
  const [metric, setMetric] = useState<Metric>('cost');
  const info = useLoad(async () => (await list<Project>('/admin/v1/projects', { organization, limit: 500 })).data.find((p) => p.id === project), [organization, project]);
  const usage = useLoad(() => get<Usage>('/admin/v1/usage', usageQuery(range, 'model', { organization, project })), [range, organization, project]);
  return (
    <div class="page">
      <header class="page-head">
        <h2>
          <a href={href({ page: 'projects' })}>Projects</a> / {organization} / {project}
        </h2>
        <div class="controls">
          {rangeControl}
          <MetricToggle metric={metric} onChange={setMetric} />
        </div>
      </header>
      <ErrorNote error={usage.error ?? info.error} />
      {usage.data && (
        <>
          <Totals usage={usage.data} />
          <section class="panel">
            <h3>{metric === 'cost' ? 'Spend' : 'Requests'} by model</h3>
            <UsageChart usage={usage.data} metric={metric} height={220} />
          </section>
        </>
      )}
      {info.data ? <BudgetPanel budget={info.data.budget} limits={info.data.limits} spend={info.data.spend} /> : !info.loading && <p class="muted">This project has no entry of its own yet: only its organization's limits apply.</p>}
      <KeysManager organization={organization} project={project} />
    </div>
  );
}
