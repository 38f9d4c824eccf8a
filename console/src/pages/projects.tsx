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

// Each budget window's start, UTC; "total" reaches back as far as the usage report may (366 days).
function windowStart(w: (typeof WINDOWS)[number], now: Date): Date {
  if (w === 'day') return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()));
  if (w === 'month') return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
  return new Date(now.getTime() - 365 * 86_400_000);
}

/** What the ledger says was spent in each budget window, as exact decimal strings. */
async function spendFromLedger(windows: (typeof WINDOWS)[number][], scope: Record<string, string>): Promise<BudgetState> {
  const now = new Date();
  const to = new Date(now.getTime() + 3_600_000).toISOString();
  const spent = await Promise.all(windows.map((w) => get<Usage>('/admin/v1/usage', { from: windowStart(w, now).toISOString(), to, bucket: 'day', group_by: 'project', ...scope })));
  return Object.fromEntries(windows.map((w, i) => [w, spent[i].total.cost_points]));
}

export function BudgetPanel({ budget, limits, scope }: { budget?: Budget; limits?: Limits; scope: Record<string, string> }) {
  const windows = WINDOWS.filter((w) => budget?.[w] !== undefined);
  const spend = useLoad(() => (windows.length ? spendFromLedger(windows, scope) : Promise.resolve({})), [windows.join(), JSON.stringify(scope)]);
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
              const spent = spentIn(spend.data, w);
              const left = spent === undefined ? undefined : subtractDecimal(limit, spent);
              return (
                <tr key={w} data-window={w}>
                  <td>{w === 'total' ? 'total (spent: last 366 days)' : w === 'day' ? 'today (UTC)' : 'this month (UTC)'}</td>
                  <td class="num mono">{formatPoints(limit)}</td>
                  <td class="num mono" data-spent={spent}>
                    {spent === undefined ? '—' : formatPoints(spent)}
                  </td>
                  <td class={`num mono ${left?.startsWith('-') ? 'over' : ''}`} data-left={left}>
                    {left === undefined ? '—' : left.startsWith('-') ? `0 (over by ${formatPoints(left.slice(1))})` : formatPoints(left)}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
      <ErrorNote error={spend.error} />
      {windows.length > 0 && <p class="muted">Spent is the ledger's cost in the window, the same sums as the usage report.</p>}
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
      {info.data ? <BudgetPanel budget={info.data.budget} limits={info.data.limits} scope={{ organization, project }} /> : !info.loading && <p class="muted">This project has no entry of its own yet: only its organization's limits apply.</p>}
      <KeysManager organization={organization} project={project} />
    </div>
  );
}
