// throwaway: allocation sampling (collected objects included) over n requests
import { createBenchDatabase, DEFAULT_POSTGRES_URL } from './databases.ts';
import { chatBody, closedLoop } from './load.ts';
import { startBare, startTollgate, startUpstream } from './targets.ts';
const which = process.argv[2] ?? 'tg';
const up = await startUpstream();
const db = await createBenchDatabase(DEFAULT_POSTGRES_URL, 'hpal');
const nodeArgs = ['--import', '/tmp/hp/alloc-preload.mjs'];
const t = which === 'bare' ? await startBare(up.target.origin, { buffered: true, nodeArgs }) : await startTollgate({ name: 'tg', upstreamUrl: up.target.origin, databaseUrl: db.url, nodeArgs });
try {
  const body = chatBody();
  await closedLoop(t.target, body, 4000, 32);
  process.kill(t.target.pid, 'SIGUSR2');
  await new Promise((r) => setTimeout(r, 200));
  await closedLoop(t.target, body, 5000, 32);
  process.kill(t.target.pid, 'SIGWINCH');
  await new Promise((r) => setTimeout(r, 1500));
  console.log('pid', t.target.pid);
} finally {
  await t.close(); await up.close(); await db.drop();
}
