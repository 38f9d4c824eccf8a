// The time range a usage view covers: presets (last 24 hours by hour, 7/30/90 days by day) or two dates.
import { useMemo, useState } from 'preact/hooks';

export type Bucket = 'hour' | 'day';
export interface Range {
  from: string;
  to: string;
  bucket: Bucket;
  label: string;
}

const PRESETS: { id: string; label: string; hours: number; bucket: Bucket }[] = [
  { id: '24h', label: 'Last 24 hours', hours: 24, bucket: 'hour' },
  { id: '7d', label: 'Last 7 days', hours: 7 * 24, bucket: 'day' },
  { id: '30d', label: 'Last 30 days', hours: 30 * 24, bucket: 'day' },
  { id: '90d', label: 'Last 90 days', hours: 90 * 24, bucket: 'day' },
];

function presetRange(id: string, bucketOverride?: Bucket): Range {
  const p = PRESETS.find((x) => x.id === id) ?? PRESETS[0];
  const bucket = bucketOverride ?? p.bucket;
  const now = new Date();
  const from = new Date(now.getTime() - p.hours * 3_600_000);
  // Aligned to the bucket so the first bar is a whole hour or day.
  if (bucket === 'hour') from.setUTCMinutes(0, 0, 0);
  else from.setUTCHours(0, 0, 0, 0);
  // An hour ahead: the bucket under way is whole, and a request the clock of this browser sees as "future" counts.
  const to = new Date(now.getTime() + 3_600_000);
  to.setUTCMinutes(0, 0, 0);
  return { from: from.toISOString().replace('.000Z', 'Z'), to: to.toISOString().replace('.000Z', 'Z'), bucket, label: p.label };
}

const today = (): string => new Date().toISOString().slice(0, 10);

export function useRange(initial = '24h'): [Range, preact.JSX.Element] {
  const [preset, setPreset] = useState(initial);
  const [bucket, setBucket] = useState<Bucket | undefined>(undefined);
  const [custom, setCustom] = useState({ from: today(), to: today() });
  // Computed once per choice: "now" moving on every render would reload the data on every render.
  const range: Range = useMemo(
    () => (preset === 'custom' ? { from: custom.from, to: custom.to, bucket: bucket ?? 'day', label: `${custom.from} – ${custom.to}` } : presetRange(preset, bucket)),
    [preset, bucket, custom.from, custom.to],
  );
  const control = (
    <div class="range" role="group" aria-label="Time range">
      <select aria-label="Range" value={preset} onChange={(e) => (setPreset(e.currentTarget.value), setBucket(undefined))}>
        {PRESETS.map((p) => (
          <option value={p.id} key={p.id}>
            {p.label}
          </option>
        ))}
        <option value="custom">Dates…</option>
      </select>
      {preset === 'custom' && (
        <>
          <input type="date" aria-label="From" value={custom.from} onChange={(e) => setCustom({ ...custom, from: e.currentTarget.value })} />
          <input type="date" aria-label="To" value={custom.to} onChange={(e) => setCustom({ ...custom, to: e.currentTarget.value })} />
        </>
      )}
      <select aria-label="Bucket" value={range.bucket} onChange={(e) => setBucket(e.currentTarget.value as Bucket)}>
        <option value="hour">by hour</option>
        <option value="day">by day</option>
      </select>
    </div>
  );
  return [range, control];
}
