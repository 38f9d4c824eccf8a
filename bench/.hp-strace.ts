// throwaway (not committed): syscalls per request via strace -c
import { execFileSync, spawn } from 'node:child_process';
import { createBenchDatabase, DEFAULT_POSTGRES_URL } from './databases.ts';
import { chatBody, closedLoop } from './load.ts';
import { startBare, startTollgate, startUpstream } from './targets.ts';
const n = Number(process.argv[2] ?? 3000);
const root = process.argv[3];
const up = await startUpstream();
const db = await createBenchDatabase(DEFAULT_POSTGRES_URL, 'hpst');
const runs = [await startBare(up.target.origin, { buffered: true }), await startTollgate({ name: 'tg', upstreamUrl: up.target.origin, databaseUrl: db.url, root })];
try {
  const body = chatBody();
  for (const r of runs) {
    await closedLoop(r.target, body, 3000, 32);
    const st = spawn('strace', ['-f', '-c', '-p', String(r.target.pid), '-o', `/tmp/hp/strace-${r.target.name}.txt`]);
    await new Promise((res) => setTimeout(res, 1000));
    await closedLoop(r.target, body, n, 32);
    st.kill('SIGINT');
    await new Promise((res) => st.on('exit', res));
    console.log(r.target.name, execFileSync('cat', [`/tmp/hp/strace-${r.target.name}.txt`]).toString());
  }
} finally {
  for (const r of runs) await r.close();
  await up.close();
  await db.drop();
}
