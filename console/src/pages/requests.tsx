// Recent requests from the ledger, newest first, filterable, a page at a time (cursor). Never bodies.
import { useState } from 'preact/hooks';
import { usePaged } from '../components/paged.tsx';
import { ErrorNote } from '../components/load.tsx';
import { formatCount } from '../decimal.ts';
import type { RequestRow } from '../types.ts';

const FILTERS = ['organization', 'project', 'key', 'model', 'status'] as const;
type Filters = Partial<Record<(typeof FILTERS)[number], string>>;

function statusClass(s: number | null): string {
  if (s === null) return '';
  return s < 400 ? 'ok' : s < 500 ? 'warn' : 'bad';
}

export function Requests() {
  const [draft, setDraft] = useState<Filters>({});
  const [filters, setFilters] = useState<Filters>({});
  const [limit, setLimit] = useState(50);
  const page = usePaged<RequestRow>('/admin/v1/requests', { ...filters, limit });
  return (
    <div class="page">
      <header class="page-head">
        <h2>Recent requests</h2>
        <div class="controls">
          <button type="button" class="secondary" onClick={page.reload} data-action="refresh">
            Refresh
          </button>
        </div>
      </header>
      <form
        class="panel filters"
        aria-label="Filter requests"
        onSubmit={(e) => {
          e.preventDefault();
          setFilters(Object.fromEntries(Object.entries(draft).filter(([, v]) => v)));
        }}
      >
        {FILTERS.map((f) => (
          <label key={f}>
            {f === 'key' ? 'key id' : f}
            <input name={f} value={draft[f] ?? ''} inputMode={f === 'status' ? 'numeric' : undefined} onInput={(e) => setDraft({ ...draft, [f]: e.currentTarget.value.trim() })} />
          </label>
        ))}
        <label>
          per page
          <select value={String(limit)} onChange={(e) => setLimit(Number(e.currentTarget.value))}>
            {[25, 50, 100, 200].map((n) => (
              <option key={n} value={n}>
                {n}
              </option>
            ))}
          </select>
        </label>
        <button type="submit">Filter</button>
        <button
          type="button"
          class="secondary"
          onClick={() => {
            setDraft({});
            setFilters({});
          }}
        >
          Clear
        </button>
      </form>
      <ErrorNote error={page.error} />
      <section class="panel scroll-x">
        {page.rows.length === 0 && !page.loading ? (
          <p class="muted">No requests match.</p>
        ) : (
          <table class="data compact" data-testid="requests-table">
            <thead>
              <tr>
                <th>Time (UTC)</th>
                <th>Request id</th>
                <th>Key</th>
                <th>Org / project</th>
                <th>Model / route</th>
                <th>Upstream</th>
                <th class="num">Status</th>
                <th class="num">Tokens in / out</th>
                <th class="num">Cost (points)</th>
                <th class="num">Latency</th>
                <th class="num" title="Attempts upstream">Tries</th>
              </tr>
            </thead>
            <tbody>
              {page.rows.map((r) => (
                <tr key={r.request_id} data-request-id={r.request_id}>
                  <td class="mono nowrap" title={r.occurred_at}>
                    {r.occurred_at.slice(5, 19).replace('T', ' ')}
                  </td>
                  <td class="mono small-text" title={r.request_id}>
                    {r.request_id.length > 10 ? `${r.request_id.slice(0, 8)}…` : r.request_id}
                  </td>
                  <td class="mono">{r.key_prefix ? `${r.key_prefix}…` : '—'}</td>
                  <td>
                    {r.organization} / {r.project}
                  </td>
                  <td class="nowrap">
                    <span class="mono">{r.model}</span>
                    {r.route && <div class="mono muted small-text">{r.route}</div>}
                  </td>
                  <td class="small-text">
                    {r.provider ?? '—'}
                    {r.upstream_model && <div class="mono muted nowrap">{r.upstream_model}</div>}
                  </td>
                  <td class={`num ${statusClass(r.status)}`}>{r.status ?? '—'}</td>
                  <td class="num nowrap">
                    {formatCount(r.input)} / {formatCount(r.output)}
                  </td>
                  <td class="num mono" data-cost={r.cost_points}>
                    {r.cost_points}
                    {r.estimated && (
                      <abbr class="est" title="Estimated: the upstream reported no usage">
                        ~
                      </abbr>
                    )}
                  </td>
                  <td class="num">{r.latency_ms === null ? '—' : `${formatCount(r.latency_ms)} ms`}</td>
                  <td class="num">{r.attempts ?? '—'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
        {page.more && (
          <button type="button" class="secondary" disabled={page.loading} onClick={page.loadMore} data-action="more">
            Older requests
          </button>
        )}
      </section>
    </div>
  );
}
