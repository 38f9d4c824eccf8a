// Child servers for the benchmark and what the kernel says about them: CPU time, peak RSS, open fds.
import { execFileSync, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { once } from 'node:events';

export const CLK_TCK = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;

export interface ServerProc {
  name: string;
  pid: number;
  url: string;
  proc: ChildProcess;
  /** The last lines the process printed (bounded). */
  logs(): string;
  /** Spawn to first answer of readyUrl, ms. */
  readyMs: number;
  /** Peak RSS from spawn until ready (VmHWM read at ready), bytes. */
  startPeakRss: number;
  stop(): Promise<void>;
}

export interface SpawnOptions {
  name: string;
  args: string[];
  env?: Record<string, string>;
  /** GET this URL until it answers (any status) to know the server is up. */
  readyUrl: string;
  url: string;
  timeoutMs?: number;
  /** A program that runs node (e.g. valgrind and its options), given node's path and `args`. */
  wrapper?: string[];
}

// One free-port finder for tests and benchmarks.
export { freePort } from '../test/support/child-gateway.ts';

/** Starts `node <args>` and waits until readyUrl answers. */
export async function spawnServer(opts: SpawnOptions): Promise<ServerProc> {
  const started = performance.now();
  const [command, ...commandArgs] = [...(opts.wrapper ?? []), process.execPath, ...opts.args];
  const proc = spawn(command, commandArgs, {
    env: { ...process.env, ...opts.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let tail = '';
  const keep = (d: Buffer) => {
    tail = (tail + d.toString()).slice(-8000);
  };
  proc.stdout!.on('data', keep);
  proc.stderr!.on('data', keep);
  let exited = false;
  proc.once('exit', () => {
    exited = true;
  });
  const deadline = Date.now() + (opts.timeoutMs ?? 30_000);
  for (;;) {
    if (exited) throw new Error(`${opts.name} exited during start:\n${tail}`);
    if (Date.now() > deadline) {
      proc.kill('SIGKILL');
      throw new Error(`${opts.name} did not start in time:\n${tail}`);
    }
    try {
      const res = await fetch(opts.readyUrl, { signal: AbortSignal.timeout(1000) });
      await res.arrayBuffer();
      break;
    } catch {
      // Polled often: start-to-ready is a reported figure.
      await new Promise((r) => setTimeout(r, 20));
    }
  }
  const readyMs = performance.now() - started;
  const startPeakRss = memory(proc.pid!).peakRss;
  return {
    readyMs,
    startPeakRss,
    name: opts.name,
    pid: proc.pid!,
    url: opts.url,
    proc,
    logs: () => tail,
    async stop() {
      if (exited) return;
      const done = once(proc, 'exit');
      proc.kill('SIGTERM');
      const timer = setTimeout(() => proc.kill('SIGKILL'), 10_000);
      await done;
      clearTimeout(timer);
    },
  };
}

/** The process and its descendants (the embedded store runs in a child of the gateway: its work counts too). */
export function processTree(pid: number): number[] {
  const out = [pid];
  for (let i = 0; i < out.length; i++) {
    try {
      for (const child of readFileSync(`/proc/${out[i]}/task/${out[i]}/children`, 'utf8').trim().split(/\s+/)) if (child) out.push(Number(child));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** Sums `f` over the process tree; a process that ended meanwhile counts nothing. */
function overTree(pid: number, f: (p: number) => number): number {
  let sum = 0;
  for (const p of processTree(pid)) {
    try {
      sum += f(p);
    } catch {
      if (p === pid) throw new Error(`process ${pid} is gone`);
    }
  }
  return sum;
}

/** User + system CPU seconds the process and its descendants have used so far (/proc/<pid>/stat utime + stime). */
export function cpuSeconds(pid: number): number {
  return overTree(pid, ownCpuSeconds);
}

/** The process's own user + system CPU seconds, without its descendants. */
export function ownCpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name, which is in parentheses and may hold spaces.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLK_TCK;
}

/**
 * CPU seconds on the scheduler's nanosecond clock (/proc/<pid>/task/<tid>/schedstat, time on a CPU) summed over every
 * thread of the process and its descendants. /proc/<pid>/stat counts in 10 ms ticks, too coarse for a few µs per
 * request over a short segment; a thread that exits between two readings takes its time with it (Node's threads live
 * as long as the process).
 */
export function cpuSecondsFine(pid: number): number {
  return overTree(pid, (p) => {
    let ns = 0;
    for (const tid of readdirSync(`/proc/${p}/task`)) {
      try {
        ns += Number(readFileSync(`/proc/${p}/task/${tid}/schedstat`, 'utf8').split(' ', 1)[0]);
      } catch {
        // the thread ended meanwhile
      }
    }
    return ns / 1e9;
  });
}

/** VmHWM (peak RSS) and VmRSS in bytes, summed over the process and its descendants (the peak: an upper bound). */
export function memory(pid: number): { peakRss: number; rss: number } {
  let peakRss = 0;
  const rss = overTree(pid, (p) => {
    const status = readFileSync(`/proc/${p}/status`, 'utf8');
    const kb = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0) * 1024;
    peakRss += kb('VmHWM');
    return kb('VmRSS');
  });
  return { peakRss, rss };
}

/** Resets VmHWM to the current RSS, so the next peak belongs to the next scenario (Linux ≥ 4.0). */
export function resetPeakRss(pid: number): boolean {
  let ok = true;
  for (const p of processTree(pid)) {
    try {
      writeFileSync(`/proc/${p}/clear_refs`, '5');
    } catch {
      ok = false;
    }
  }
  return ok;
}

export function openFds(pid: number): number {
  try {
    return readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return 0;
  }
}

/** CPU seconds and peak RSS of a process over a measured window. */
export class ProcWindow {
  private readonly pid: number;
  private readonly cpu0: number;
  private readonly t0: number;
  private maxFds = 0;
  private maxRss = 0;
  private readonly sampler: NodeJS.Timeout;

  constructor(pid: number) {
    this.pid = pid;
    resetPeakRss(pid);
    this.cpu0 = cpuSeconds(pid);
    this.t0 = performance.now();
    this.sampler = setInterval(() => this.sample(), 200);
    this.sampler.unref();
  }

  private sample(): void {
    try {
      this.maxFds = Math.max(this.maxFds, openFds(this.pid));
      this.maxRss = Math.max(this.maxRss, memory(this.pid).rss);
    } catch {
      // the process ended; the window's end reports it
    }
  }

  end(): { cpuSeconds: number; wallSeconds: number; peakRss: number; maxFds: number } {
    clearInterval(this.sampler);
    this.sample();
    const cpu = cpuSeconds(this.pid) - this.cpu0;
    const peak = memory(this.pid).peakRss;
    return { cpuSeconds: cpu, wallSeconds: (performance.now() - this.t0) / 1000, peakRss: Math.max(peak, this.maxRss), maxFds: this.maxFds };
  }
}

/** Whole-machine busy CPU seconds (all cores) from /proc/stat, to see whether the machine was saturated. */
export function machineBusySeconds(): number {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  const idle = line[3] + line[4];
  const total = line.slice(0, 8).reduce((a, b) => a + b, 0);
  return (total - idle) / CLK_TCK;
}
