import { describe, expect, it } from 'vitest';
import { isoTime } from './iso-time.ts';

describe('isoTime', () => {
  it('writes what toISOString writes for the truncated ms, across hours, days and before 1970', () => {
    const starts = [Date.UTC(2025, 5, 1, 10, 59, 59, 990), Date.UTC(1969, 11, 31, 23, 59, 58), Date.UTC(2000, 1, 29, 0, 0), Date.UTC(1, 0, 1), Date.UTC(9999, 11, 31, 23, 59, 59, 900)];
    for (const start of starts) {
      for (let i = 0; i < 2000; i++) {
        const ms = start + i * 7.3 - 3 * (i % 3);
        if (ms >= Date.UTC(10000, 0, 1)) break;
        expect(isoTime(ms)).toBe(new Date(Math.trunc(ms)).toISOString());
      }
    }
  });
});
