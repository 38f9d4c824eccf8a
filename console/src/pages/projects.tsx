// Projects: every project with its limits and budget; a project's page adds its usage, budget left and keys.
import { useState } from 'preact/hooks';
import { get, list } from '../api.ts';
import { ErrorNote, Loading, useLoad } from '../components/load.tsx';
import { useRange } from '../components/range.tsx';
import type { Metric } from '../components/usage-chart.tsx';
import { UsageChart } from '../components/usage-chart.tsx';
import { compareDecimal, formatCount, formatPoints } from '../decimal.ts';
import { href } from '../router.ts';
import type { Budget, Limits, Organization, Project, Spend, Usage } from '../types.ts';
import { budgetText, KeysManager, limitsText } from './keys.tsx';
import { MetricToggle, Totals, usageQuery } from './overview.tsx';

/** Budgets left in a compact line: "day 4.99 of 5 left; month …". */
function budgetLeftText(spend: Spend | undefined): string | undefined {
  const own = spend?.budgets ?? [];
  return own.length ? own.map((b) => `${b.period}: ${formatPoints(b.remaining)} of ${formatPoints(b.points)} left`).join('; ') : undefined;
}

function Organizations() {
  // The list, then each organization's own view, which carries what is left of its limits and budgets.
  const orgs = useLoad(async () => {
    const page = await list<Organization>('/admin/v1/organizations', { limit: 500 });
    return Promise.all(page.data.map((o) => (o.limits || o.budget ? get<Organization>(`/admin/v1/organizations/${encodeURIComponent(o.id)}`) : Promise.resolve(o))));
  }, []);
  return (
    <section class="panel">
      <h3>Organizations</h3>
      <ErrorNote error={orgs.error} />
      <table class="data" data-testid="organizations-table">
        <thead>
          <tr>
            <th>Organization</th>
            <th>Models</th>
            <th class="num">Discount</th>
            <th class="num">Keys</th>
            <th>Limits</th>
            <th>Budget</th>
          </tr>
        </thead>
        <tbody>
          {orgs.data?.map((o) => (
            <tr key={o.id}>
              <td>{o.id}</td>
              <td class="mono small-text">{o.models.join(', ') || '—'}</td>
              <td class="num mono">{o.discount ?? '—'}</td>
              <td class="num">{o.keys}</td>
              <td class="small-text">{o.limits ? limitsText(o.limits) : '—'}</td>
              <td class="small-text">
                {o.budget ? budgetText(o.budget) : '—'}
                {budgetLeftText(o.spend) && <div class="muted">{budgetLeftText(o.spend)}</div>}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

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
                  <td class="small-text">
                    {p.budget ? budgetText(p.budget) : '—'}
                    {budgetLeftText(p.spend) && <div class="muted">{budgetLeftText(p.spend)}</div>}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </section>
      </Loading>
      <Organizations />
    </div>
  );
}

const WINDOWS = ['day', 'month', 'total'] as const;
interface BudgetRow {
  period: string;
  points: string;
  spent?: string;
  remaining?: string;
  resetsAt?: string | null;
}

const periodLabel = (p: string): string => (p === 'day' ? 'today (UTC)' : p === 'month' ? 'this month (UTC)' : p === 'total' ? 'total' : p);

function resetIn(seconds: number): string {
  if (seconds < 90) return `${seconds} s`;
  if (seconds < 5400) return `${Math.round(seconds / 60)} min`;
  return `${Math.round(seconds / 3600)} h`;
}

export function BudgetPanel({ budget, limits, spend }: { budget?: Budget; limits?: Limits; spend?: Spend }) {
  // The gateway's own admission counters, as the admin API reports them (its `spend`); the configured budget when
  // the API reports none (then spent and left are unknown, never guessed).
  const counted = spend?.budgets ?? [];
  const rows: BudgetRow[] = counted.length
    ? counted.map((b) => ({ period: b.period, points: b.points, spent: b.spent, remaining: b.remaining, resetsAt: b.resets_at }))
    : WINDOWS.filter((w) => budget?.[w] !== undefined).map((w) => ({ period: w, points: String(budget![w]) }));
  const rateLeft = spend?.limits ?? [];
  return (
    <section class="panel">
      <h3>Limits and budget</h3>
      <p>
        <strong>Rate limits:</strong> {limits ? limitsText(limits) || 'none' : 'none of its own (organization and key limits still apply)'}
      </p>
      {rateLeft.length > 0 && (
        <table class="data" data-testid="limits-left">
          <thead>
            <tr>
              <th>Limit</th>
              <th class="num">Per minute / at once</th>
              <th class="num">Left now</th>
              <th class="num">Refills in</th>
            </tr>
          </thead>
          <tbody>
            {rateLeft.map((l, i) => (
              <tr key={i}>
                <td>
                  {l.kind}
                  {l.model ? ` (${l.model})` : ''}
                </td>
                <td class="num">{formatCount(l.limit)}</td>
                <td class="num">{formatCount(l.remaining)}</td>
                <td class="num">{resetIn(l.reset_seconds)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {rows.length === 0 ? (
        <p>
          <strong>Budget:</strong> none of its own.
        </p>
      ) : (
        <table class="data" data-testid="budget-table" data-source={counted.length ? 'governor' : 'config'}>
          <thead>
            <tr>
              <th>Budget</th>
              <th class="num">Limit (points)</th>
              <th class="num">Spent</th>
              <th class="num">Left</th>
              <th>Resets</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((r) => {
              const over = r.remaining?.startsWith('-') || (r.remaining !== undefined && r.spent !== undefined && compareDecimal(r.spent, r.points) >= 0);
              return (
                <tr key={r.period} data-window={r.period}>
                  <td>{periodLabel(r.period)}</td>
                  <td class="num mono">{formatPoints(r.points)}</td>
                  <td class="num mono" data-spent={r.spent}>
                    {r.spent === undefined ? '—' : formatPoints(r.spent)}
                  </td>
                  <td class={`num mono ${over ? 'over' : ''}`} data-left={r.remaining}>
                    {r.remaining === undefined ? '—' : r.remaining.startsWith('-') ? `0 (over by ${formatPoints(r.remaining.slice(1))})` : formatPoints(r.remaining)}
                  </td>
                  <td class="mono small-text">{r.resetsAt ? r.resetsAt.slice(0, 16).replace('T', ' ') : r.period === 'total' ? 'never' : '—'}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
      {counted.length > 0 && <p class="muted">Spent and left as the gateway counts them for admission right now (a new day or month starts at zero).</p>}
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
