// The latency tail at a fixed rate (open loop), measured so that one noisy stretch on a shared machine cannot decide
// it: many short paced runs, every target once per round (the order reversed every other round, so no target always
// follows the same neighbour), and the figure per target is the median over rounds of (its p99 − the best bare
// floor's p99 in the same round). Neighbours' load moves all targets of a round alike and so mostly cancels; what is
// left is spread, reported as the quartiles and the range of the per-round differences, with the raw rounds kept.
import { paced } from './load.ts';
import type { RunResult, Target } from './load.ts';
import { quantile } from './stats.ts';
import { loopProbeRead } from './loop-probe-read.ts';
import type { LoopWindow } from './loop-probe-read.ts';

export interface FixedRateOptions {
  rate: number;
  /** Seconds per paced run. */
  seconds: number;
  rounds: number;
  /** Unmeasured seconds per target before the first round (connections, JIT). */
  warmupSeconds?: number;
  upstreamPid?: number;
  /** Targets started with bench/loop-probe.ts: their event-loop delay and GC over each run. */
  probed?: ReadonlySet<string>;
  log?: (line: string) => void;
}

export interface Spread {
  median: number;
  q1: number;
  q3: number;
  min: number;
  max: number;
}

export interface FixedRateTargetResult {
  target: string;
  /** One run per round, in round order. */
  runs: RunResult[];
  /** Probed targets: event-loop delay and GC per round. */
  loop?: LoopWindow[];
  /** p99 per round, ms. */
  p99: number[];
  /** Its p99 minus the same round's best floor p99, per round, ms (floors included: ≥ 0 by construction). */
  addedP99: number[];
  /** Over rounds: of p99, and of addedP99. */
  p99Spread: Spread;
  addedP99Spread: Spread;
  /** addedP99 over the steady rounds only (see FixedRateResult.steadyRounds); undefined when there were none. */
  addedP99Steady?: Spread;
}

export interface FixedRateResult {
  rate: number;
  seconds: number;
  rounds: number;
  floors: string[];
  /** The best floor's p99 per round, ms, and which floor it was. */
  floorP99: number[];
  floorName: string[];
  /**
   * Rounds (0-based) in which no run's pacer sent later than STEADY_LAG_MS behind its schedule: the bench process
   * itself got a core on time throughout, so no run of the round sat out a burst of the machine's other work.
   */
  steadyRounds: number[];
  steadyLagMs: number;
  targets: FixedRateTargetResult[];
}

export const STEADY_LAG_MS = 2;

export const spread = (xs: number[]): Spread => ({ median: quantile(xs, 0.5), q1: quantile(xs, 0.25), q3: quantile(xs, 0.75), min: Math.min(...xs), max: Math.max(...xs) });

/**
 * Runs `rounds` rounds of one paced run per target. `floors` names the targets whose lowest p99 in a round is that
 * round's floor (at least one must be among `targets`). Every run must answer every request with 200.
 */
export async function fixedRateRounds(targets: Target[], floors: string[], body: string, opts: FixedRateOptions): Promise<FixedRateResult> {
  const floorTargets = targets.filter((t) => floors.includes(t.name));
  if (floorTargets.length === 0) throw new Error(`fixed rate: none of the floors (${floors.join(', ')}) is a target`);
  const log = opts.log ?? (() => {});
  const warm = opts.warmupSeconds ?? 1;
  if (warm > 0) for (const t of targets) await paced(t, body, { rate: opts.rate, seconds: warm });
  const runs = new Map<string, RunResult[]>(targets.map((t) => [t.name, []]));
  const loops = new Map<string, LoopWindow[]>();
  for (let round = 0; round < opts.rounds; round++) {
    const order = round % 2 === 0 ? targets : [...targets].reverse();
    for (const t of order) {
      const probed = opts.probed?.has(t.name) ?? false;
      if (probed) await loopProbeRead(t.pid); // starts a fresh window
      const r = await paced(t, body, { rate: opts.rate, seconds: opts.seconds, upstreamPid: opts.upstreamPid });
      if (r.failed > 0 || r.ok === 0) throw new Error(`${t.name}: fixed rate round ${round + 1}: ${r.ok} ok, ${r.failed} failed`);
      runs.get(t.name)!.push(r);
      let extra = '';
      if (probed) {
        const w = await loopProbeRead(t.pid);
        (loops.get(t.name) ?? loops.set(t.name, []).get(t.name)!).push(w);
        extra = `  loop delay p99 ${w.delayP99Ms.toFixed(2)} max ${w.delayMaxMs.toFixed(2)} ms, GC ${w.gcCount} (${w.gcTotalMs.toFixed(1)} ms, max ${w.gcMaxMs.toFixed(2)}), own turns ≥1 ms ${w.busyOver1Ms} ≥2 ms ${w.busyOver2Ms} (max ${w.busyMaxMs.toFixed(2)}, sum ${w.busyTotalMs.toFixed(0)} ms), descheduled ≥3 ms ${w.descheduledOver3Ms}`;
      }
      log(`fixed rate round ${round + 1} ${t.name}: p99 ${r.latency.p99.toFixed(3)} ms, p50 ${r.latency.p50.toFixed(3)} ms, max lag ${(r.maxLagMs ?? 0).toFixed(1)} ms${extra}`);
    }
  }
  return summariseRounds(opts.rate, opts.seconds, targets.map((t) => t.name), floorTargets.map((f) => f.name), runs, loops);
}

/** The per-round floors and differences of runs already made: `runs` holds one run per round for every name. */
export function summariseRounds(rate: number, seconds: number, names: string[], floors: string[], runs: ReadonlyMap<string, RunResult[]>, loops?: ReadonlyMap<string, LoopWindow[]>): FixedRateResult {
  const rounds = runs.get(floors[0])!.length;
  const floorP99: number[] = [];
  const floorName: string[] = [];
  for (let round = 0; round < rounds; round++) {
    let best = floors[0];
    for (const f of floors) if (runs.get(f)![round].latency.p99 < runs.get(best)![round].latency.p99) best = f;
    floorP99.push(runs.get(best)![round].latency.p99);
    floorName.push(best);
  }
  const steadyRounds: number[] = [];
  for (let round = 0; round < rounds; round++) if (names.every((n) => (runs.get(n)![round].maxLagMs ?? 0) <= STEADY_LAG_MS)) steadyRounds.push(round);
  return {
    rate,
    seconds,
    rounds,
    floors,
    floorP99,
    floorName,
    steadyRounds,
    steadyLagMs: STEADY_LAG_MS,
    targets: names.map((name) => {
      const rs = runs.get(name)!;
      const p99 = rs.map((r) => r.latency.p99);
      const added = p99.map((x, i) => x - floorP99[i]);
      const steady = steadyRounds.map((i) => added[i]);
      return { target: name, runs: rs, loop: loops?.get(name), p99, addedP99: added, p99Spread: spread(p99), addedP99Spread: spread(added), addedP99Steady: steady.length ? spread(steady) : undefined };
    }),
  };
}

/** The run whose p99 is the target's median over rounds: one representative row for a table of single runs. */
export function medianRun(t: FixedRateTargetResult): RunResult {
  const order = t.runs.map((r, i) => [r.latency.p99, i] as const).sort((a, b) => a[0] - b[0]);
  return t.runs[order[Math.min(order.length - 1, Math.max(0, Math.ceil(0.5 * order.length) - 1))][1]];
}

/** Lines for a console: per target the median p99 and added p99 with their spread, and the raw rounds. */
export function fixedRateLines(r: FixedRateResult): string[] {
  const f = (x: number) => x.toFixed(2);
  const out = [`${r.rate} req/s open loop, ${r.rounds} rounds × ${r.seconds} s, interleaved; added = median over rounds of (p99 − same-round best floor p99 of ${r.floors.join(', ')})`];
  out.push(`steady rounds (every run's send lag ≤ ${r.steadyLagMs} ms): ${r.steadyRounds.length} of ${r.rounds}`);
  for (const t of r.targets) {
    const a = t.addedP99Spread;
    const st = t.addedP99Steady;
    out.push(
      `${t.target.padEnd(27)} p99 ${f(t.p99Spread.median).padStart(6)} ms   added ${f(a.median).padStart(6)} ms (quartiles ${f(a.q1)}–${f(a.q3)}, range ${f(a.min)}–${f(a.max)})   steady rounds: ${st ? `${f(st.median)} ms (${f(st.min)}–${f(st.max)})` : 'none'}   rounds p99: ${t.p99.map(f).join(' ')}`,
    );
    if (t.loop) {
      const m = (f: (w: LoopWindow) => number) => f2(quantile(t.loop!.map(f), 0.5));
      const f2 = (x: number) => x.toFixed(2);
      out.push(
        `${''.padEnd(27)} probe, median of rounds: loop delay p99 ${m((w) => w.delayP99Ms)} ms; GC ${m((w) => (w.gcCount * 1000) / w.windowMs)}/s, ${m((w) => (w.gcTotalMs * 1000) / w.windowMs)} ms/s, longest ${m((w) => w.gcMaxMs)} ms; own turns ≥1 ms ${m((w) => (w.busyOver1Ms * 1000) / w.windowMs)}/s, ≥2 ms ${m((w) => (w.busyOver2Ms * 1000) / w.windowMs)}/s, longest ${m((w) => w.busyMaxMs)} ms`,
      );
    }
  }
  return out;
}
