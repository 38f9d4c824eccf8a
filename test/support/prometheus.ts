// Reads a /metrics endpoint with a real Prometheus text-format parser (prom2javascript) and sums series by label.
import type { PromHistogramData, PromMetrics, PromData } from 'prom2javascript';
import { getMetricsFromIterator } from 'prom2javascript';

export async function scrape(adminUrl: string): Promise<{ text: string; metrics: PromMetrics }> {
  const res = await fetch(`${adminUrl}/metrics`);
  if (res.status !== 200) throw new Error(`GET /metrics answered ${res.status}`);
  const text = await res.text();
  return { text, metrics: await getMetricsFromIterator(text.split('\n')[Symbol.iterator]()) };
}

type Labels = Record<string, string>;

function matches(labels: Labels, want: Labels): boolean {
  return Object.entries(want).every(([k, v]) => labels[k] === v);
}

/** Sum of a counter's or gauge's samples whose labels include `want`. */
export function sumValues(m: PromMetrics, name: string, want: Labels = {}): number {
  const family = m[name];
  if (!family) return 0;
  return (family.data as PromData[]).filter((d) => matches(d.labels, want)).reduce((a, d) => a + d.value, 0);
}

/** Sum of a histogram's `_sum` (field 'sum') or `_count` (field 'count') over the series whose labels include `want`. */
export function sumHistogram(m: PromMetrics, name: string, field: 'sum' | 'count', want: Labels = {}): number {
  const family = m[name];
  if (!family) return 0;
  return (family.data as PromHistogramData[]).filter((d) => matches(d.labels, want)).reduce((a, d) => a + (d[field] ?? 0), 0);
}

/** Every label set a family has. */
export function labelSets(m: PromMetrics, name: string): Labels[] {
  return (m[name]?.data ?? []).map((d) => d.labels);
}
