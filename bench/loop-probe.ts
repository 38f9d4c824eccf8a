// Loaded into a server under test with `--import ./bench/loop-probe.ts`: on each SIGUSR2 it writes what its main
// thread saw since the previous signal (event-loop delay at 1 ms resolution, GC pauses by count, total and longest,
// and long turns) to a file bench/loop-probe-read.ts reads, then starts a new window. The bench signals before and
// after a run.
// Long turns: a 1 ms interval timer reads the process's CPU clock each time it runs. A late tick whose gap was
// spent on our CPU is our own work blocking the loop; one whose gap was not is the scheduler running
// something else (on a shared machine, neighbours): wall-clock delay alone cannot tell the two apart.
import { writeFileSync } from 'node:fs';
import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';
import { loopProbeFile } from './loop-probe-read.ts';

const delay = monitorEventLoopDelay({ resolution: 1 });
delay.enable();
let gcCount = 0;
let gcTotalMs = 0;
let gcMaxMs = 0;
let gcOverMs = 0;
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) {
    gcCount++;
    gcTotalMs += e.duration;
    if (e.duration > gcMaxMs) gcMaxMs = e.duration;
    if (e.duration >= 1) gcOverMs++;
  }
}).observe({ entryTypes: ['gc'] });
let busy1 = 0;
let busy2 = 0;
let busyMaxMs = 0;
let busyTotalMs = 0;
let descheduled2 = 0;
let lastWall = performance.now();
let lastCpu = processCpuMs();
// The process's CPU (the main thread's, mostly, at a steady rate): getrusage(RUSAGE_SELF) reads the scheduler's
// runtime to the microsecond, where process.threadCpuUsage and /proc/thread-self/schedstat move in whole ticks here.
function processCpuMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}
setInterval(() => {
  const wall = performance.now();
  const cpu = processCpuMs();
  const spent = cpu - lastCpu;
  // The timer's own period (1 ms) is not a stall: count what the gap held beyond it.
  if (spent >= 1) busy1++;
  if (spent >= 2) busy2++;
  if (spent >= 1) busyTotalMs += spent;
  if (spent > busyMaxMs) busyMaxMs = spent;
  if (wall - lastWall - spent >= 3) descheduled2++;
  lastWall = wall;
  lastCpu = cpu;
}, 1).unref();
let seq = 0;
let windowStart = performance.now();
process.on('SIGUSR2', () => {
  const ms = (ns: number) => ns / 1e6;
  const window = { seq: ++seq, windowMs: performance.now() - windowStart, delayP50Ms: ms(delay.percentile(50)), delayP99Ms: ms(delay.percentile(99)), delayMaxMs: ms(delay.max), gcCount, gcTotalMs, gcMaxMs, gcOver1Ms: gcOverMs, busyOver1Ms: busy1, busyOver2Ms: busy2, busyMaxMs, busyTotalMs, descheduledOver3Ms: descheduled2 };
  writeFileSync(loopProbeFile(process.pid), JSON.stringify(window));
  delay.reset();
  windowStart = performance.now();
  gcCount = gcTotalMs = gcMaxMs = gcOverMs = 0;
  busy1 = busy2 = busyMaxMs = busyTotalMs = descheduled2 = 0;
});
