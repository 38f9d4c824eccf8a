// throwaway: scavenges per request via --trace-gc
import { createBenchDatabase, DEFAULT_POSTGRES_URL } from './databases.ts';
import { chatBody, closedLoop } from './load.ts';
import { startTollgate, startUpstream } from './targets.ts';
const semi = process.argv[2] ?? '8';
const up = await startUpstream();
const db = await createBenchDatabase(DEFAULT_POSTGRES_URL, 'hpgc');
const t = await startTollgate({ name: 'tg', upstreamUrl: up.target.origin, databaseUrl: db.url, nodeArgs: ['--trace-gc'], env: { NODE_OPTIONS: `--max-semi-space-size=${semi}` } });
try {
  const body = chatBody();
  await closedLoop(t.target, body, 4000, 32);
  let scav = 0, ms = 0, mark = 0, lines: string[] = [];
  t.proc.proc.stdout!.on('data', (d: Buffer) => { for (const l of d.toString().split('\n')) { if (l.includes('Scavenge')) { scav++; const m = / ([\d.]+) \/ [\d.]+ ms/.exec(l); if (m) ms += Number(m[1]); lines.push(l); } if (l.includes('Mark-Compact')) mark++; } });
  const n = 20000;
  await closedLoop(t.target, body, n, 32);
  await new Promise((r) => setTimeout(r, 300));
  console.log(`semi ${semi}: ${scav} scavenges (${(n / scav).toFixed(0)} req each), ${ms.toFixed(1)} ms total, ${(ms * 1000 / n).toFixed(2)} µs/req; mark-compact ${mark}`);
  console.log(lines.slice(-3).join('\n'));
} finally {
  await t.close(); await up.close(); await db.drop();
}
