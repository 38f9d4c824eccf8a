// Peak RSS growth of a gateway process while it forwards 60 MB multipart image edits (issue 4: at most 100 MB for
// one, 300 MB for eight at once). The gateway and the fake upstream are child processes on loopback; this process
// is the client, so its own buffers are not counted.
//   node bench/image-edit-memory.ts [--mb 60] [--concurrency 8] [--database-url postgres://…]
// (default: $DATABASE_URL, else the local Postgres when it answers, else PGlite)
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { generateApiKey } from '../gateway/auth/api-key.ts';
import type { SnapshotInput } from '../gateway/snapshot/schema.ts';
import { freePort, memory, resetPeakRss, spawnServer } from './proc.ts';
import type { ServerProc } from './proc.ts';
import { createBenchDatabase, DEFAULT_POSTGRES_URL, postgresReachable } from './databases.ts';
import { startUpstream } from './targets.ts';

const MB = 1024 * 1024;
const { values } = parseArgs({
  options: { mb: { type: 'string', default: '60' }, concurrency: { type: 'string', default: '8' }, 'database-url': { type: 'string', default: process.env.DATABASE_URL ?? '' } },
});
const size = Number(values.mb) * MB;
const concurrency = Number(values.concurrency);
// Postgres (a fresh database per gateway) is preferred when reachable: embedded PGlite adds ~400 MB of baseline whose
// freed pages the allocator reuses, which hides growth instead of measuring it.
const adminUrl = values['database-url'] || ((await postgresReachable(DEFAULT_POSTGRES_URL)) ? DEFAULT_POSTGRES_URL : '');

const upstream = await startUpstream();
const key = generateApiKey();
const config: SnapshotInput = {
  providers: [{ id: 'fake', baseUrl: `${upstream.proc.url}/v1`, apiKey: { value: 'sk-bench-provider' }, timeouts: { firstByteMs: 300_000, idleMs: 300_000, totalMs: 600_000 } }],
  pricingGroups: [{ id: 'image', mode: 'flat_tokens', prices: { input: '5', output: '40' } }],
  models: [{ id: 'gpt-image-1', public: true, pricingGroup: 'image', protocols: { images: [{ provider: 'fake', model: 'gpt-image-1' }] } }],
  organizations: [{ id: 'bench', models: ['*'] }],
  apiKeys: [{ id: 'bench', hash: key.hash, prefix: key.prefix, organization: 'bench', project: 'bench' }],
};

/** A fresh gateway per scenario: memory a previous scenario freed but the allocator kept would hide growth. */
async function startGateway(): Promise<{ proc: ServerProc; url: string; close(): Promise<void> }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-bench-edits-'));
  const db = adminUrl ? await createBenchDatabase(adminUrl, 'edits') : undefined;
  const configPath = join(dataDir, 'tollgate.json');
  writeFileSync(configPath, JSON.stringify(config));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const proc = await spawnServer({
    name: 'tollgate',
    args: ['bin/tollgate.js', 'start', '--config', configPath, '--port', String(port), '--host', '127.0.0.1'],
    env: { TOLLGATE_DATA_DIR: dataDir, DATABASE_URL: db?.url ?? '', LOG_LEVEL: 'warn' },
    readyUrl: `${url}/healthz`,
    url,
    timeoutMs: 60_000,
  });
  return {
    proc,
    url,
    async close() {
      await proc.stop();
      await db?.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

// One image buffer shared by every request: fetch streams it from the Blob into the request body.
const image = new Blob([Buffer.alloc(size, 0x5a)], { type: 'image/png' });
const small = new Blob([Buffer.alloc(1000, 0x5a)], { type: 'image/png' });

async function edit(gwUrl: string, blob: Blob, modelFirst: boolean): Promise<void> {
  const form = new FormData();
  if (modelFirst) form.append('model', 'gpt-image-1');
  form.append('prompt', 'bench edit');
  form.append('image', blob, 'in.png');
  if (!modelFirst) form.append('model', 'gpt-image-1');
  const res = await fetch(`${gwUrl}/api/v1/images/edits`, { method: 'POST', headers: { authorization: `Bearer ${key.key}` }, body: form });
  const text = await res.text();
  if (res.status !== 200 || !res.headers.get('x-tollgate-cost-points')) throw new Error(`edit failed: ${res.status} ${text.slice(0, 300)}`);
}

interface Result {
  scenario: string;
  requests: number;
  baselineMb: number;
  peakMb: number;
  growthMb: number;
  limitMb: number;
  seconds: number;
}

async function measure(scenario: string, limitMb: number, requests: number, run: (url: string) => Promise<unknown>): Promise<Result> {
  const gw = await startGateway();
  try {
    // Warm-up: every code path once, with small bodies.
    for (let i = 0; i < 3; i++) await Promise.all([edit(gw.url, small, true), edit(gw.url, small, false)]);
    await new Promise((r) => setTimeout(r, 500));
    const pid = gw.proc.pid;
    const baseline = memory(pid).rss;
    const canReset = resetPeakRss(pid);
    let sampled = baseline;
    const sampler = setInterval(() => (sampled = Math.max(sampled, memory(pid).rss)), 10);
    const t0 = performance.now();
    await run(gw.url);
    const seconds = (performance.now() - t0) / 1000;
    clearInterval(sampler);
    const peak = Math.max(sampled, canReset ? memory(pid).peakRss : 0);
    const mb = (b: number) => Math.round((b / MB) * 10) / 10;
    return { scenario, requests, baselineMb: mb(baseline), peakMb: mb(peak), growthMb: mb(peak - baseline), limitMb, seconds: Math.round(seconds * 100) / 100 };
  } finally {
    await gw.close();
  }
}

const results: Result[] = [];
try {
  results.push(await measure(`one ${values.mb} MB edit, model first (streamed)`, 100, 1, (url) => edit(url, image, true)));
  results.push(await measure(`one ${values.mb} MB edit, model last (spooled to disk)`, 100, 1, (url) => edit(url, image, false)));
  results.push(
    await measure(`${concurrency} concurrent ${values.mb} MB edits (half model last)`, 300, concurrency, (url) => Promise.all(Array.from({ length: concurrency }, (_, i) => edit(url, image, i % 2 === 0)))),
  );
} finally {
  await upstream.close();
}

console.log(`gateway database: ${adminUrl ? 'Postgres' : 'PGlite (embedded)'}`);
console.table(results);
const over = results.filter((r) => r.growthMb > r.limitMb);
console.log(over.length === 0 ? 'within bounds: every scenario grew the gateway by less than its limit' : `OVER the limit: ${over.map((r) => r.scenario).join('; ')}`);
if (over.length > 0) process.exitCode = 1;
