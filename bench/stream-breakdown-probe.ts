// Preloaded into the gateway by bench/stream-breakdown.ts (--import): on SIGUSR2 it runs a full GC and appends one JSON
// line to $STREAM_PROBE_OUT: V8's heap by space, process.memoryUsage(), and the resident size of malloc's main arena
// ([heap] in smaps) and of anonymous mappings (V8's pages, other arenas), read before the GC.
import { appendFileSync, readFileSync } from 'node:fs';
import { getHeapSpaceStatistics, getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const out = process.env.STREAM_PROBE_OUT!;

function mappings(): { mallocMain: number; anonymous: number } {
  const r = { mallocMain: 0, anonymous: 0 };
  let kind: 'mallocMain' | 'anonymous' | undefined;
  for (const line of readFileSync('/proc/self/smaps', 'utf8').split('\n')) {
    const m = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (m) kind = m[1] === '[heap]' ? 'mallocMain' : m[1] === '' ? 'anonymous' : undefined;
    else if (kind && line.startsWith('Rss:')) r[kind] += Number(/(\d+) kB/.exec(line)![1]) * 1024;
  }
  return r;
}

process.on('SIGUSR2', () => {
  const rss = mappings();
  const heapUsedBeforeGc = process.memoryUsage().heapUsed;
  gc();
  const spaces = Object.fromEntries(getHeapSpaceStatistics().map((s) => [s.space_name, { used: s.space_used_size, physical: s.physical_space_size }]));
  appendFileSync(out, `${JSON.stringify({ ...rss, heapUsedBeforeGc, memory: process.memoryUsage(), heapPhysical: getHeapStatistics().total_physical_size, spaces })}\n`);
});
