import { describe, expect, it } from 'vitest';
import { ceilHour, floorHour, HOUR_MS } from './hour.ts';

describe('UTC hour buckets', () => {
  it('floors and ceils to whole UTC hours', () => {
    const h = Date.UTC(2025, 6, 1, 13);
    expect(floorHour(h)).toBe(h);
    expect(ceilHour(h)).toBe(h);
    expect(floorHour(h + 1)).toBe(h);
    expect(ceilHour(h + 1)).toBe(h + HOUR_MS);
    expect(floorHour(h - 1)).toBe(h - HOUR_MS);
  });

  it('handles times before 1970', () => {
    expect(floorHour(-1)).toBe(-HOUR_MS);
    expect(ceilHour(-1)).toBe(0);
  });
});
