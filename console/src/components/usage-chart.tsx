// Spend or requests over time, stacked by group (model, project, …), drawn with uPlot. Bar heights are floats (a
// picture), but the legend under the cursor and the data table beside the chart print the API's exact strings.
// The table also carries the series as JSON in data-series, the form a test (or a curious operator) reads.
import { useEffect, useMemo, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import { formatCount, formatPoints, numberForChart } from '../decimal.ts';
import type { Usage, UsageGroup } from '../types.ts';

export type Metric = 'cost' | 'requests';

const PALETTE = ['#4e79a7', '#f28e2b', '#59a14f', '#e15759', '#76b7b2', '#edc948', '#b07aa1', '#ff9da7', '#9c755f', '#bab0ac'];

export const colorFor = (i: number): string => PALETTE[i % PALETTE.length];

/** A group's name on screen: projects carry their organization (two organizations may both have a "web"). */
export const groupLabel = (g: UsageGroup): string => (g.organization ? `${g.organization}/${g.group}` : g.group);

interface Prepared {
  groups: string[];
  xs: number[];
  /** exact per-bucket values per group: cells[g][i] */
  cells: (UsageGroup | undefined)[][];
}

// Every bucket of the range, empty ones included, so time runs evenly along the axis (at most 366 days of hours).
function bucketStarts(usage: Usage): number[] {
  const step = usage.bucket === 'hour' ? 3600 : 86400;
  const from = Math.floor(Date.parse(usage.from) / 1000 / step) * step;
  const to = Date.parse(usage.to) / 1000;
  const xs: number[] = [];
  if (Number.isFinite(from) && Number.isFinite(to)) for (let x = from; x < to && xs.length < 9000; x += step) xs.push(x);
  return xs;
}

function prepare(usage: Usage): Prepared {
  // Groups in the order of the API's totals; the first is drawn on top of the stack.
  const groups = usage.totals.map(groupLabel);
  for (const b of usage.series) for (const g of b.groups) if (!groups.includes(groupLabel(g))) groups.push(groupLabel(g));
  const xs = bucketStarts(usage);
  for (const b of usage.series) {
    const x = Date.parse(b.start) / 1000;
    if (!xs.includes(x)) xs.push(x);
  }
  xs.sort((a, b) => a - b);
  const at = new Map(usage.series.map((b) => [Date.parse(b.start) / 1000, b]));
  const cells = groups.map((g) => xs.map((x) => at.get(x)?.groups.find((c) => groupLabel(c) === g)));
  return { groups, xs, cells };
}

const valueOf = (cell: UsageGroup | undefined, metric: Metric): number => (cell ? (metric === 'cost' ? numberForChart(cell.cost_points) : cell.requests) : 0);
const exactOf = (cell: UsageGroup | undefined, metric: Metric): string => (cell ? (metric === 'cost' ? formatPoints(cell.cost_points) : formatCount(cell.requests)) : '0');

function cssVar(name: string, fallback: string): string {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim() || fallback;
}

export function UsageChart({ usage, metric, height = 260 }: { usage: Usage; metric: Metric; height?: number }) {
  const box = useRef<HTMLDivElement>(null);
  const prepared = useMemo(() => prepare(usage), [usage]);

  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const { groups, xs, cells } = prepared;
    // Stacked: series k draws the sum of groups k..n-1, painted top-first so each lower band covers the rest.
    const stacks: number[][] = groups.map(() => xs.map(() => 0));
    for (let g = groups.length - 1; g >= 0; g--)
      for (let i = 0; i < xs.length; i++) stacks[g][i] = valueOf(cells[g][i], metric) + (g + 1 < groups.length ? stacks[g + 1][i] : 0);
    const bucketSeconds = usage.bucket === 'hour' ? 3600 : 86400;
    const axisColor = cssVar('--muted', '#666');
    const gridColor = cssVar('--grid', 'rgba(128,128,128,0.2)');
    const bars = uPlot.paths.bars!({ size: [0.8, 64], align: 1 });
    const opts: uPlot.Options = {
      width: Math.max(320, el.clientWidth),
      height,
      // Buckets are UTC hours and days: the axis says so rather than the browser's zone.
      tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
      cursor: { points: { show: false }, drag: { x: false, y: false } },
      legend: { live: true },
      // The whole range; each bar spans its bucket from its start (uPlot's own guess for a single bar spans years).
      scales: { x: { time: true, range: () => [xs[0], xs[xs.length - 1] + bucketSeconds] }, y: { range: (_u, _min, max) => [0, max > 0 ? max * 1.1 : 1] } },
      axes: [
        { stroke: axisColor, grid: { stroke: gridColor }, ticks: { stroke: gridColor } },
        { stroke: axisColor, grid: { stroke: gridColor }, ticks: { stroke: gridColor }, size: (_u, values) => 24 + 7 * Math.max(4, ...(values ?? []).map((v) => v.length)), values: (_u, ticks) => ticks.map((t) => (metric === 'cost' ? String(+t.toPrecision(6)) : String(Math.round(t)))) },
      ],
      series: [
        { label: usage.bucket === 'hour' ? 'Hour (UTC)' : 'Day (UTC)', value: (_u, v) => (v == null ? '—' : new Date(v * 1000).toISOString().slice(0, usage.bucket === 'hour' ? 16 : 10).replace('T', ' ')) },
        ...groups.map((g, k) => ({
          label: g,
          stroke: colorFor(k),
          fill: colorFor(k),
          width: 0,
          paths: bars,
          points: { show: false },
          // The legend prints this group's own exact value, not the stacked height.
          value: (_u: uPlot, _v: number | null, _si: number, idx: number | null) => (idx == null ? '' : exactOf(cells[k][idx], metric)),
        })),
      ],
    };
    const plot = new uPlot(opts, [xs, ...stacks] as uPlot.AlignedData, el);
    const resize = new ResizeObserver(() => plot.setSize({ width: Math.max(320, el.clientWidth), height }));
    resize.observe(el);
    return () => {
      resize.disconnect();
      plot.destroy();
    };
  }, [prepared, metric, height, usage.bucket]);

  return (
    <div class="chart">
      {usage.series.length === 0 ? <p class="muted empty-chart">No usage in this range.</p> : <div ref={box} class="chart-plot" />}
      <UsageTable usage={usage} groups={prepared.groups} />
    </div>
  );
}

/** Every bucket and group with the API's exact numbers; data-series holds the same as JSON. */
function UsageTable({ usage, groups }: { usage: Usage; groups: string[] }) {
  const rows = usage.series.flatMap((b) => b.groups.map((g) => ({ start: b.start, ...g, label: groupLabel(g) })));
  return (
    <details class="chart-data">
      <summary>
        Data ({rows.length} {rows.length === 1 ? 'row' : 'rows'})
      </summary>
      <table class="data" data-testid="chart-data" data-series={JSON.stringify(usage.series)} data-total={usage.total.cost_points}>
        <thead>
          <tr>
            <th>Bucket start (UTC)</th>
            <th>{usage.group_by}</th>
            <th class="num">Requests</th>
            <th class="num">Input</th>
            <th class="num">Output</th>
            <th class="num">Cost (points)</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr key={`${r.start}/${r.label}`}>
              <td class="mono">{r.start}</td>
              <td>
                <span class="swatch" ref={(e) => {
                    // Through the CSSOM, which the CSP allows (a style attribute it would refuse).
                    if (e) e.style.background = colorFor(groups.indexOf(r.label));
                  }} />
                {r.label || '—'}
              </td>
              <td class="num">{formatCount(r.requests)}</td>
              <td class="num">{formatCount(r.input)}</td>
              <td class="num">{formatCount(r.output)}</td>
              <td class="num mono" data-cost={r.cost_points}>
                {r.cost_points}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </details>
  );
}
