// Overview: spend and requests over time stacked by model, with the top projects and keys for the same range.
import { useState } from 'preact/hooks';
import { get, list } from '../api.ts';
import { ErrorNote, Loading, useLoad } from '../components/load.tsx';
import { useRange } from '../components/range.tsx';
import type { Range } from '../components/range.tsx';
import type { Metric } from '../components/usage-chart.tsx';
import { groupLabel, UsageChart } from '../components/usage-chart.tsx';
import { compareDecimal, formatCount, formatPoints } from '../decimal.ts';
import { href } from '../router.ts';
import type { ApiKey, Organization, Usage, UsageGroup } from '../types.ts';

export const usageQuery = (range: Range, groupBy: string, scope: Record<string, string | undefined> = {}) => ({ from: range.from, to: range.to, bucket: range.bucket, group_by: groupBy, ...scope });

export function MetricToggle({ metric, onChange }: { metric: Metric; onChange: (m: Metric) => void }) {
  return (
    <div class="toggle" role="group" aria-label="Metric">
      <button type="button" class={metric === 'cost' ? 'on' : ''} aria-pressed={metric === 'cost'} onClick={() => onChange('cost')}>
        Spend
      </button>
      <button type="button" class={metric === 'requests' ? 'on' : ''} aria-pressed={metric === 'requests'} onClick={() => onChange('requests')}>
        Requests
      </button>
    </div>
  );
}

export function Totals({ usage }: { usage: Usage }) {
  return (
    <div class="cards">
      <div class="card">
        <div class="card-label">Spend (points)</div>
        <div class="card-value mono" data-testid="total-spend" data-value={usage.total.cost_points}>
          {formatPoints(usage.total.cost_points)}
        </div>
      </div>
      <div class="card">
        <div class="card-label">Requests</div>
        <div class="card-value">{formatCount(usage.total.requests)}</div>
      </div>
      <div class="card">
        <div class="card-label">Input tokens</div>
        <div class="card-value">{formatCount(usage.total.input)}</div>
      </div>
      <div class="card">
        <div class="card-label">Output tokens</div>
        <div class="card-value">{formatCount(usage.total.output)}</div>
      </div>
    </div>
  );
}

const byCost = (a: UsageGroup, b: UsageGroup): number => compareDecimal(b.cost_points, a.cost_points) || b.requests - a.requests;

export function TopTable({ title, rows, link, label, testid }: { title: string; rows: UsageGroup[]; link?: (row: UsageGroup) => string | undefined; label?: (group: string) => string; testid: string }) {
  const top = [...rows].sort(byCost).slice(0, 10);
  return (
    <section class="panel">
      <h3>{title}</h3>
      {top.length === 0 ? (
        <p class="muted">Nothing in this range.</p>
      ) : (
        <table class="data" data-testid={testid}>
          <thead>
            <tr>
              <th>Name</th>
              <th class="num">Requests</th>
              <th class="num">Tokens in / out</th>
              <th class="num">Spend (points)</th>
            </tr>
          </thead>
          <tbody>
            {top.map((r) => {
              const to = link?.(r);
              const name = label?.(r.group) ?? groupLabel(r);
              return (
                <tr key={groupLabel(r)}>
                  <td title={groupLabel(r)}>{to ? <a href={to}>{name}</a> : name || '—'}</td>
                  <td class="num">{formatCount(r.requests)}</td>
                  <td class="num">
                    {formatCount(r.input)} / {formatCount(r.output)}
                  </td>
                  <td class="num mono">{formatPoints(r.cost_points)}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
    </section>
  );
}

export function Overview() {
  const [range, rangeControl] = useRange('24h');
  const [metric, setMetric] = useState<Metric>('cost');
  const [organization, setOrganization] = useState('');
  const [stackBy, setStackBy] = useState<'model' | 'project' | 'organization'>('model');
  const orgs = useLoad(() => list<Organization>('/admin/v1/organizations', { limit: 500 }), []);
  // Key groups are key ids: shown by name and prefix (the first page of keys covers most gateways; others show the id).
  const keys = useLoad(() => list<ApiKey>('/admin/v1/keys', { limit: 500 }), []);
  const keyLabel = (id: string): string => {
    const k = keys.data?.data.find((x) => x.id === id);
    return k ? `${k.name ? `${k.name} · ` : ''}${k.prefix}…` : id;
  };
  const scope = { organization: organization || undefined };
  const byModel = useLoad(() => get<Usage>('/admin/v1/usage', usageQuery(range, stackBy, scope)), [range, organization, stackBy]);
  const byProject = useLoad(() => get<Usage>('/admin/v1/usage', usageQuery(range, 'project', scope)), [range, organization]);
  const byKey = useLoad(() => get<Usage>('/admin/v1/usage', usageQuery(range, 'key', scope)), [range, organization]);
  return (
    <div class="page">
      <header class="page-head">
        <h2>Overview</h2>
        <div class="controls">
          <select aria-label="Organization" value={organization} onChange={(e) => setOrganization(e.currentTarget.value)}>
            <option value="">All organizations</option>
            {orgs.data?.data.map((o) => (
              <option key={o.id} value={o.id}>
                {o.id}
              </option>
            ))}
          </select>
          {rangeControl}
          <select aria-label="Stack by" value={stackBy} onChange={(e) => setStackBy(e.currentTarget.value as typeof stackBy)}>
            <option value="model">by model</option>
            <option value="project">by project</option>
            <option value="organization">by organization</option>
          </select>
          <MetricToggle metric={metric} onChange={setMetric} />
          <button type="button" class="secondary" onClick={() => (byModel.reload(), byProject.reload(), byKey.reload())}>
            Refresh
          </button>
        </div>
      </header>
      <ErrorNote error={byModel.error} />
      <Loading when={byModel.loading && !byModel.data}>
        {byModel.data && (
          <>
            <Totals usage={byModel.data} />
            <section class="panel">
              <h3>
                {metric === 'cost' ? 'Spend' : 'Requests'} by {stackBy}, {range.label.toLowerCase()}, per {range.bucket}
              </h3>
              <UsageChart usage={byModel.data} metric={metric} />
            </section>
          </>
        )}
      </Loading>
      <div class="two">
        <div>
          <ErrorNote error={byProject.error} />
          {byProject.data && <TopTable title="Top projects" testid="top-projects" rows={byProject.data.totals} link={projectLink} />}
        </div>
        <div>
          <ErrorNote error={byKey.error} />
          {byKey.data && <TopTable title="Top keys" testid="top-keys" rows={byKey.data.totals} label={keyLabel} />}
        </div>
      </div>
    </div>
  );
}

/** A project group names its organization: linked to the project's page. */
function projectLink(row: UsageGroup): string | undefined {
  return row.group && row.organization ? href({ page: 'project', organization: row.organization, project: row.group }) : undefined;
}
