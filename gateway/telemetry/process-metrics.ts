// The process's own health on /metrics: RSS, V8 heap, event-loop delay (p50/p99), open file descriptors and GC time.
// Names follow the OpenTelemetry runtime and process conventions. Everything is read when metrics are collected,
// except GC pauses, which a performance observer sums as they happen; nothing runs per request.
import type { Meter } from '@opentelemetry/api';
import { readdirSync } from 'node:fs';
import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';
import { getHeapStatistics } from 'node:v8';

// Sampling interval of the event-loop delay histogram, ms: fine enough for a p99, a timer that costs nothing.
const LOOP_RESOLUTION_MS = 10;
const GC_KINDS: Record<number, string> = { 1: 'minor', 2: 'major', 4: 'incremental', 8: 'weakcb' };

export interface ProcessMetrics {
  stop(): void;
}

export function observeProcess(meter: Meter): ProcessMetrics {
  const loop = monitorEventLoopDelay({ resolution: LOOP_RESOLUTION_MS });
  loop.enable();
  const gcSeconds = new Map<string, number>();
  const gc = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      const kind = GC_KINDS[((e as unknown as { detail?: { kind?: number } }).detail)?.kind ?? 0] ?? 'other';
      gcSeconds.set(kind, (gcSeconds.get(kind) ?? 0) + e.duration / 1000);
    }
  });
  gc.observe({ entryTypes: ['gc'] });

  const rss = meter.createObservableGauge('process.memory.usage', { description: 'Resident set size of the gateway process.', unit: 'By' });
  const heapUsed = meter.createObservableGauge('v8js.memory.heap.used', { description: 'V8 heap in use.', unit: 'By' });
  const heapLimit = meter.createObservableGauge('v8js.memory.heap.limit', { description: 'V8 heap size limit.', unit: 'By' });
  const loopP50 = meter.createObservableGauge('nodejs.eventloop.delay.p50', { description: 'Event-loop delay, median since the last collection.', unit: 's' });
  const loopP99 = meter.createObservableGauge('nodejs.eventloop.delay.p99', { description: 'Event-loop delay, 99th percentile since the last collection.', unit: 's' });
  const loopMax = meter.createObservableGauge('nodejs.eventloop.delay.max', { description: 'Event-loop delay, largest since the last collection.', unit: 's' });
  const fds = meter.createObservableGauge('process.open_file_descriptor.count', { description: 'Open file descriptors (sockets, journal, PGlite files).', unit: '{file_descriptor}' });
  const gcTime = meter.createObservableCounter('v8js.gc.time', { description: 'Time spent in garbage collection, by v8js.gc.type.', unit: 's' });

  meter.addBatchObservableCallback(
    (r) => {
      r.observe(rss, process.memoryUsage.rss());
      const h = getHeapStatistics();
      r.observe(heapUsed, h.used_heap_size);
      r.observe(heapLimit, h.heap_size_limit);
      // Percentiles of the delays sampled since the last collection (ns), then start over.
      if (loop.count > 0) {
        r.observe(loopP50, loop.percentile(50) / 1e9);
        r.observe(loopP99, loop.percentile(99) / 1e9);
        r.observe(loopMax, loop.max / 1e9);
      }
      loop.reset();
      const open = openFds();
      if (open !== undefined) r.observe(fds, open);
      for (const [kind, s] of gcSeconds) r.observe(gcTime, s, { 'v8js.gc.type': kind });
    },
    [rss, heapUsed, heapLimit, loopP50, loopP99, loopMax, fds, gcTime],
  );
  return {
    stop() {
      loop.disable();
      gc.disconnect();
    },
  };
}

/** Linux: entries of /proc/self/fd (less the one readdir opens); elsewhere unknown. */
function openFds(): number | undefined {
  try {
    return readdirSync('/proc/self/fd').length - 1;
  } catch {
    return undefined;
  }
}
