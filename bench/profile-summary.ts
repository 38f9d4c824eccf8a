// Reads a V8 .cpuprofile (node --cpu-prof) and returns the hottest functions by self time and by
// inclusive time, so a missed target comes with what the profile shows.
//   node bench/profile-summary.ts <file.cpuprofile> [top]
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

export interface HotFunction {
  name: string;
  where: string;
  selfPct: number;
  totalPct: number;
}

function label(n: ProfileNode): { name: string; where: string } {
  const f = n.callFrame;
  const url = f.url.replace(/^file:\/\//, '').replace(process.cwd() + '/', '');
  return { name: f.functionName || '(anonymous)', where: url ? `${url}:${f.lineNumber + 1}` : '' };
}

export function summarizeProfile(path: string, top = 15): { self: HotFunction[]; inclusive: HotFunction[]; samples: number } {
  const p = JSON.parse(readFileSync(path, 'utf8')) as CpuProfile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const selfHits = new Map<number, number>();
  for (const s of p.samples) selfHits.set(s, (selfHits.get(s) ?? 0) + 1);
  // Percentages of busy samples: time the thread sat idle is not cost.
  const idleIds = new Set(p.nodes.filter((n) => n.callFrame.functionName === '(idle)').map((n) => n.id));
  const total = p.samples.filter((s) => !idleIds.has(s)).length;
  const selfBy = new Map<string, { name: string; where: string; hits: number }>();
  const inclBy = new Map<string, { name: string; where: string; hits: number }>();
  for (const [id, hits] of selfHits) {
    if (idleIds.has(id)) continue;
    const n = byId.get(id)!;
    const l = label(n);
    const key = l.name + ' ' + l.where;
    const e = selfBy.get(key) ?? { ...l, hits: 0 };
    e.hits += hits;
    selfBy.set(key, e);
    // Inclusive: count this sample once for every distinct function on its stack.
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const cl = label(byId.get(cur)!);
      const ck = cl.name + ' ' + cl.where;
      if (seen.has(ck)) continue;
      seen.add(ck);
      const ie = inclBy.get(ck) ?? { ...cl, hits: 0 };
      ie.hits += hits;
      inclBy.set(ck, ie);
    }
  }
  const pct = (h: number) => (100 * h) / Math.max(1, total);
  const self = [...selfBy.values()]
    .sort((a, b) => b.hits - a.hits)
    .slice(0, top)
    .map((e) => ({ name: e.name, where: e.where, selfPct: pct(e.hits), totalPct: pct(inclBy.get(e.name + ' ' + e.where)?.hits ?? 0) }));
  const inclusive = [...inclBy.values()]
    .filter((e) => !['(root)', '(program)', '(idle)', '(garbage collector)'].includes(e.name))
    .sort((a, b) => b.hits - a.hits)
    .slice(0, top)
    .map((e) => ({ name: e.name, where: e.where, selfPct: pct(selfBy.get(e.name + ' ' + e.where)?.hits ?? 0), totalPct: pct(e.hits) }));
  return { self, inclusive, samples: total };
}

if (import.meta.main) {
  const [file, top] = process.argv.slice(2);
  const s = summarizeProfile(file, Number(top ?? 25));
  console.log(`busy samples: ${s.samples}\n\nself%  total%  function`);
  for (const h of s.self) console.log(`${h.selfPct.toFixed(1).padStart(5)}  ${h.totalPct.toFixed(1).padStart(6)}  ${h.name} ${h.where}`);
  console.log(`\ninclusive (total%  self%  function)`);
  for (const h of s.inclusive) console.log(`${h.totalPct.toFixed(1).padStart(5)}  ${h.selfPct.toFixed(1).padStart(6)}  ${h.name} ${h.where}`);
}
