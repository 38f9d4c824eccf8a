// A callgrind dump's instructions split into major GC, other GC, the optimising compiler and the rest: under valgrind
// V8 runs time-driven GCs and compiles that the same requests do not cause at full speed, so "rest" is what compares.
import { execFileSync } from 'node:child_process';

/** Instructions (per request, once divided), and the parts of them that are GC or compiler work. */
export interface Count {
  total: number;
  majorGc: number;
  otherGc: number;
  compiler: number;
}

/** Self instructions per function from the dump, grouped (callgrind_annotate; JIT code has no symbols). */
export function split(file: string): Omit<Count, 'total'> {
  const text = execFileSync('callgrind_annotate', ['--inclusive=no', '--threshold=100', file], { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
  const c = { majorGc: 0, otherGc: 0, compiler: 0 };
  for (const line of text.split('\n')) {
    const m = /^\s*([\d,]+) \([^)]*\)\s+(.*)$/.exec(line);
    if (!m || m[2].includes('PROGRAM TOTALS')) continue;
    const n = Number(m[1].replaceAll(',', ''));
    const f = m[2];
    if (/Marking|MarkCompact|Sweeper|IterateObjectCache|StringTableCleaner/.test(f)) c.majorGc += n;
    else if (/Scaveng|heap::|v8::internal::Heap|PagedSpace|GlobalHandles|MemoryChunk|FreeList/.test(f)) c.otherGc += n;
    else if (/compiler::|maglev|turboshaft/i.test(f)) c.compiler += n;
  }
  return c;
}

export const rest = (c: Count): number => c.total - c.majorGc - c.otherGc - c.compiler;
