// The bench's side of bench/loop-probe.ts: signal a probed server and read the window it writes back.
import { readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface LoopWindow {
  seq: number;
  windowMs: number;
  delayP50Ms: number;
  delayP99Ms: number;
  delayMaxMs: number;
  gcCount: number;
  gcTotalMs: number;
  gcMaxMs: number;
  gcOver1Ms: number;
  /** Timer gaps with at least 1 ms / 2 ms of this thread's CPU in them (our own long turns), the longest, their sum. */
  busyOver1Ms: number;
  busyOver2Ms: number;
  busyMaxMs: number;
  busyTotalMs: number;
  /** Timer gaps at least 3 ms longer than the thread's CPU in them: the thread was waiting for a core. */
  descheduledOver3Ms: number;
}

export const loopProbeFile = (pid: number): string => join(tmpdir(), `tollgate-loop-probe-${pid}.json`);

/** Ends the server's current window and returns it (the next one starts now); waits at most 2 s for the file. */
export async function loopProbeRead(pid: number): Promise<LoopWindow> {
  const file = loopProbeFile(pid);
  rmSync(file, { force: true });
  process.kill(pid, 'SIGUSR2');
  const deadline = performance.now() + 2000;
  for (;;) {
    try {
      return JSON.parse(readFileSync(file, 'utf8')) as LoopWindow;
    } catch {
      // Not written yet, or half written: try again shortly.
    }
    if (performance.now() > deadline) throw new Error(`loop probe: pid ${pid} wrote no window (started with --import ./bench/loop-probe.ts?)`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
