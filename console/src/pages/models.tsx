// Models, pricing groups and providers, read-only: what the snapshot in force says.
import { list } from '../api.ts';
import { ErrorNote, Loading, useLoad } from '../components/load.tsx';
import { formatPoints } from '../decimal.ts';
import type { Json } from '../types.ts';

type Row = Record<string, Json | undefined>;

/** A compact one-line rendering of a nested value (upstream lists, fallbacks) without inventing fields. */
export function summarize(v: Json | undefined): string {
  if (v === undefined || v === null) return '—';
  if (Array.isArray(v)) return v.map(summarize).join(', ');
  if (typeof v === 'object') {
    const o = v as Record<string, Json>;
    if (typeof o.provider === 'string' && typeof o.model === 'string') return `${o.provider} → ${o.model}${o.weight !== undefined ? ` (weight ${String(o.weight)})` : ''}`;
    return Object.entries(o)
      .map(([k, x]) => `${k}: ${summarize(x)}`)
      .join('; ');
  }
  return String(v);
}

const PRICE_FIELDS = ['input', 'output', 'cacheRead', 'cacheWrite'] as const;

function Prices({ group }: { group: Row }) {
  const prices = group.prices as Record<string, Json> | undefined;
  const tiers = group.tiers as Record<string, Json>[] | undefined;
  if (prices)
    return (
      <span class="mono">
        {PRICE_FIELDS.filter((f) => prices[f] !== undefined)
          .map((f) => `${f} ${formatPoints(prices[f] as string)}`)
          .join(' · ')}
      </span>
    );
  if (tiers)
    return (
      <ul class="tiers">
        {tiers.map((t, i) => (
          <li key={i} class="mono">
            {t.upTo === null || t.upTo === undefined ? 'above' : `up to ${String(t.upTo)}`}: {PRICE_FIELDS.filter((f) => t[f] !== undefined)
              .map((f) => `${f} ${formatPoints(t[f] as string)}`)
              .join(' · ')}
          </li>
        ))}
      </ul>
    );
  return <span class="muted">—</span>;
}

export function Models() {
  const models = useLoad(() => list<Row>('/admin/v1/models', { limit: 500 }), []);
  const groups = useLoad(() => list<Row>('/admin/v1/pricing-groups', { limit: 500 }), []);
  const providers = useLoad(() => list<Row>('/admin/v1/providers', { limit: 500 }), []);
  return (
    <div class="page">
      <header class="page-head">
        <h2>Models and prices</h2>
      </header>
      <section class="panel">
        <h3>Models</h3>
        <ErrorNote error={models.error} />
        <Loading when={models.loading && !models.data}>
          <table class="data" data-testid="models-table">
            <thead>
              <tr>
                <th>Model</th>
                <th>Alias</th>
                <th>Pricing group</th>
                <th>Public</th>
                <th>Upstreams</th>
                <th>Fallbacks</th>
              </tr>
            </thead>
            <tbody>
              {models.data?.data.map((m) => (
                <tr key={String(m.id)}>
                  <td class="mono">{String(m.id)}</td>
                  <td class="mono">{m.alias ? String(m.alias) : '—'}</td>
                  <td>{String(m.pricingGroup ?? '—')}</td>
                  <td>{m.public ? 'yes' : 'no'}</td>
                  <td class="small-text">{summarize(m.upstreams ?? m.protocols ?? m.providers)}</td>
                  <td class="small-text">{summarize(m.fallbacks)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </Loading>
      </section>
      <section class="panel">
        <h3>Pricing groups (points per million tokens)</h3>
        <ErrorNote error={groups.error} />
        <table class="data" data-testid="pricing-table">
          <thead>
            <tr>
              <th>Group</th>
              <th>Mode</th>
              <th>Discount</th>
              <th>Prices</th>
            </tr>
          </thead>
          <tbody>
            {groups.data?.data.map((g) => (
              <tr key={String(g.id)}>
                <td>{String(g.id)}</td>
                <td class="mono">{String(g.mode ?? '—')}</td>
                <td class="mono">{g.discount !== undefined ? String(g.discount) : '—'}</td>
                <td>
                  <Prices group={g} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </section>
      <section class="panel">
        <h3>Providers</h3>
        <ErrorNote error={providers.error} />
        <table class="data" data-testid="providers-table">
          <thead>
            <tr>
              <th>Provider</th>
              <th>Protocol</th>
              <th>Base URL</th>
              <th>Credential</th>
            </tr>
          </thead>
          <tbody>
            {providers.data?.data.map((p) => {
              const cred = p.credential as { env?: string; present?: boolean } | undefined;
              return (
                <tr key={String(p.id)}>
                  <td>{String(p.id)}</td>
                  <td class="mono">{String(p.protocol ?? '—')}</td>
                  <td class="mono small-text">{String(p.baseUrl ?? '—')}</td>
                  <td>{cred ? cred.env ? <span class={cred.present ? 'ok' : 'bad'}>{`${cred.env}: ${cred.present ? 'set' : 'missing'}`}</span> : cred.present ? 'inline' : 'none' : '—'}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </section>
    </div>
  );
}
