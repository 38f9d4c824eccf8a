// The fixed-rate figure is a median of same-round differences: a noisy round moves every target's p99 alike and must
// not move the figure, and the floor of a round is whichever floor was best in that round.
import { describe, expect, it } from 'vitest';
import { medianRun, summariseRounds } from '../../bench/fixed-rate.ts';
import type { RunResult } from '../../bench/load.ts';

const run = (target: string, p99: number, maxLagMs = 0.5): RunResult => ({
  maxLagMs,
  target,
  ok: 1000,
  failed: 0,
  seconds: 1,
  rps: 1000,
  latency: { count: 1000, mean: p99 / 4, p50: p99 / 4, p90: p99 / 2, p99, p999: p99 * 2, max: p99 * 3 },
  cpuPerRequest: 1e-4,
  peakRss: 0,
});

describe('fixed-rate rounds', () => {
  const p99s: Record<string, number[]> = {
    bare: [2, 50, 2.4, 2.2, 3],
    'bare-buffered': [2.5, 48, 2.0, 2.6, 2.5],
    gateway: [2.6, 90, 2.5, 2.5, 2.8],
  };
  const runs = new Map(Object.entries(p99s).map(([name, xs]) => [name, xs.map((x) => run(name, x))]));
  const r = summariseRounds(1000, 2, Object.keys(p99s), ['bare', 'bare-buffered'], runs);

  it('takes the best floor of each round', () => {
    expect(r.floorP99).toEqual([2, 48, 2.0, 2.2, 2.5]);
    expect(r.floorName).toEqual(['bare', 'bare-buffered', 'bare-buffered', 'bare', 'bare-buffered']);
  });

  it('reports the median of same-round differences, not the difference of medians, with its spread', () => {
    const g = r.targets.find((t) => t.target === 'gateway')!;
    expect(g.addedP99.map((x) => +x.toFixed(3))).toEqual([0.6, 42, 0.5, 0.3, 0.3]);
    expect(g.addedP99Spread.median).toBeCloseTo(0.5);
    expect(g.addedP99Spread.q1).toBeCloseTo(0.3);
    expect(g.addedP99Spread.q3).toBeCloseTo(0.6);
    expect(g.addedP99Spread.max).toBeCloseTo(42);
    expect(g.p99).toEqual(p99s.gateway);
  });

  it('keeps apart the rounds in which no pacer fell behind', () => {
    const lagged = new Map([...runs].map(([name, rs]) => [name, rs.map((x, i) => (name === 'gateway' && i === 1 ? run(name, x.latency.p99, 30) : x))]));
    const l = summariseRounds(1000, 2, Object.keys(p99s), ['bare', 'bare-buffered'], lagged);
    expect(l.steadyRounds).toEqual([0, 2, 3, 4]);
    const g = l.targets.find((t) => t.target === 'gateway')!;
    expect(g.addedP99Steady!.max).toBeCloseTo(0.6);
    expect(g.addedP99Steady!.median).toBeCloseTo(0.3);
    expect(r.steadyRounds).toEqual([0, 1, 2, 3, 4]);
  });

  it('keeps the run with the median p99 as the representative row', () => {
    const g = r.targets.find((t) => t.target === 'gateway')!;
    expect(medianRun(g).latency.p99).toBe(2.6);
  });
});
