// Upstream health in this process: each target's state (healthy, ejected, half open) and its counts.
import { get } from '../api.ts';
import { ErrorNote, Loading, useLoad } from '../components/load.tsx';
import { summarize } from './models.tsx';
import type { Json } from '../types.ts';

interface UpstreamsView {
  generation?: number | string | null;
  targets?: Record<string, Json>[];
  /** The admin port's /upstreams names the list this way. */
  upstreams?: Record<string, Json>[];
}

const FIRST = ['provider', 'model', 'state'];
// `healthy` repeats `state`.
const HIDDEN = new Set(['healthy']);
const LABELS: Record<string, string> = { consecutiveFailures: 'failures in a row', ejectedUntil: 'ejected until', inFlight: 'in flight' };

/** Attempt counters by outcome, the non-zero ones only. */
function cell(v: Json | undefined): string {
  if (v && typeof v === 'object' && !Array.isArray(v)) {
    const parts = Object.entries(v).filter(([, n]) => n !== 0);
    return parts.length ? parts.map(([k, n]) => `${k.replace(/_/g, ' ')} ${summarize(n)}`).join(', ') : 'none';
  }
  return summarize(v);
}

export function Upstreams() {
  const view = useLoad(() => get<UpstreamsView>('/admin/v1/upstreams'), []);
  const targets = view.data?.targets ?? view.data?.upstreams ?? [];
  const columns = [...FIRST.filter((c) => targets.some((t) => c in t)), ...[...new Set(targets.flatMap((t) => Object.keys(t)))].filter((c) => !FIRST.includes(c) && !HIDDEN.has(c))];
  return (
    <div class="page">
      <header class="page-head">
        <h2>Upstream health</h2>
        <div class="controls">
          <button type="button" class="secondary" onClick={view.reload}>
            Refresh
          </button>
        </div>
      </header>
      <ErrorNote error={view.error} />
      <Loading when={view.loading && !view.data}>
        <section class="panel">
          <p class="muted">Snapshot generation {String(view.data?.generation ?? '—')}. Health is this gateway process's own view; each pod keeps its own.</p>
          {targets.length === 0 ? (
            <p class="muted">No upstream has been called yet.</p>
          ) : (
            <table class="data" data-testid="upstreams-table">
              <thead>
                <tr>
                  {columns.map((c) => (
                    <th key={c}>{LABELS[c] ?? c}</th>
                  ))}
                </tr>
              </thead>
              <tbody>
                {targets.map((t, i) => (
                  <tr key={i}>
                    {columns.map((c) => (
                      <td key={c} class={c === 'state' ? `state-${String(t[c])}` : typeof t[c] === 'number' ? 'num' : ''}>
                        {c === 'state' ? <span class={`badge ${String(t[c])}`}>{String(t[c])}</span> : cell(t[c])}
                      </td>
                    ))}
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </section>
      </Loading>
    </div>
  );
}
