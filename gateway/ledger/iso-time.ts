// A time as ISO 8601 text (what Date#toISOString writes for years 0001-9999), for COPY into a timestamptz column.
import { HOUR_MS } from './hour.ts';

// Built from the hour's text, kept from the last call (a batch spans a few hours at most), and the minutes, seconds
// and ms: a third of toISOString's cost a row.
let isoHour = NaN;
let isoHourText = '';
// Rows come in time order, several to a millisecond at a high rate.
let lastMs = NaN;
let lastText = '';
/** The ms truncated, as Date and the jsonb statement truncate them. */
export function isoTime(ms: number): string {
  const t = Math.trunc(ms);
  if (t === lastMs) return lastText;
  const hour = Math.floor(t / HOUR_MS) * HOUR_MS;
  if (hour !== isoHour) {
    isoHourText = new Date(hour).toISOString().slice(0, 14);
    isoHour = hour;
  }
  const rest = t - hour;
  const min = Math.floor(rest / 60_000);
  const sec = Math.floor(rest / 1000) % 60;
  const milli = rest % 1000;
  lastMs = t;
  lastText = `${isoHourText}${min < 10 ? '0' : ''}${min}:${sec < 10 ? '0' : ''}${sec}.${milli < 100 ? (milli < 10 ? '00' : '0') : ''}${milli}Z`;
  return lastText;
}

