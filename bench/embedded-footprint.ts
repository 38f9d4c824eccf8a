// The embedded default's footprint, as `npm start` gives it: each start a fresh `node bin/tollgate.js start` process (what `npm start` runs)
// (the gateway's Node options, default log level, no DATABASE_URL) on a temp data directory. Reports, per start:
// start-to-ready (spawn until /readyz answers 200), peak RSS during start, idle RSS (after a settle), RSS after the
// first request and after a burst. RSS is the gateway's plus its child processes' (older checkouts run the embedded store in one; first boot's initdb still does),
// sampled every 20 ms, so a peak is of the sum, and first boot's short-lived initdb process is counted. The first start is the first boot (initdb); the
// others reuse the data directory. --root runs another checkout's gateway (before/after in one sitting).
// Usage: node bench/embedded-footprint.ts [--starts 3] [--burst 2000] [--root DIR] [--env K=V ...]
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { generateApiKey } from '../gateway/auth/api-key.ts';
import { freePort, memory, processTree } from './proc.ts';

/** RSS of the gateway and its children (proc.ts sums the process tree); 0 once the gateway is gone. */
function treeRss(pid: number): number {
  try {
    return memory(pid).rss;
  } catch {
    return 0;
  }
}
import { benchConfig, GATEWAY_NODE_OPTIONS, startUpstream } from './targets.ts';

/**
 * The tree's memory with file-backed pages counted once: anonymous RSS summed, plus the largest file-backed RSS of
 * one process. A gateway and a PGlite child process (older checkouts) map the same Node binary (~50 MB of text), which an RSS sum counts
 * twice and a container's memory accounting (page cache) once; an approximation, since other mapped files differ.
 */
function treeDistinct(pid: number): number {
  let anon = 0;
  let file = 0;
  for (const p of processTree(pid)) {
    try {
      const status = readFileSync(`/proc/${p}/status`, 'utf8');
      const kb = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0) * 1024;
      anon += kb('RssAnon');
      file = Math.max(file, kb('RssFile'));
    } catch {
      // the process is gone
    }
  }
  return anon + file;
}

const { values } = parseArgs({ options: { starts: { type: 'string', default: '3' }, burst: { type: 'string', default: '2000' }, env: { type: 'string', multiple: true }, root: { type: 'string', default: '.' } } });
const starts = Number(values.starts);
const burst = Number(values.burst);
const extraEnv = Object.fromEntries((values.env ?? []).map((kv) => kv.split('=', 2) as [string, string]));

const MB = 1024 * 1024;
const mb = (b: number) => (b / MB).toFixed(0);

const upstream = await startUpstream();
const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-footprint-'));
const key = { ...generateApiKey(), organization: 'bench', project: 'bench' };
const configPath = join(dataDir, 'tollgate.json');
writeFileSync(configPath, JSON.stringify(benchConfig(upstream.proc.url, [key])));
const body = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });

console.log(`load average before: ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
console.log('start        | ready ms | peak RSS MB | idle RSS MB | idle, binary once MB | after 1st req MB | after burst MB | peak MB (whole run)');
try {
  for (let i = 0; i < starts; i++) {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const t0 = performance.now();
    const child = spawn(process.execPath, [join(values.root, 'bin/tollgate.js'), 'start', '--config', configPath, '--port', String(port), '--host', '127.0.0.1'], {
      env: { ...process.env, TOLLGATE_DATA_DIR: dataDir, DATABASE_URL: '', NODE_OPTIONS: GATEWAY_NODE_OPTIONS, TOLLGATE_ADMIN_PORT: 'off', ...extraEnv },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
    let readyMs = 0;
    let peak = 0;
    const sampler = setInterval(() => (peak = Math.max(peak, treeRss(child.pid!))), 20);
    for (;;) {
      if (child.exitCode !== null) throw new Error(`gateway exited during start:\n${stderr}`);
      if (performance.now() - t0 > 180_000) {
        child.kill('SIGKILL');
        throw new Error(`gateway not ready in 180 s:\n${stderr}`);
      }
      try {
        const res = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(1000) });
        await res.arrayBuffer();
        if (res.status === 200) {
          readyMs = performance.now() - t0;
          break;
        }
      } catch {
        // not listening yet
      }
      await new Promise((r) => setTimeout(r, 10));
    }
    const peakStart = peak;
    await new Promise((r) => setTimeout(r, 3000));
    const idle = treeRss(child.pid!);
    const idleDistinct = treeDistinct(child.pid!);
    const ask = async () => {
      const res = await fetch(`${url}/api/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' }, body });
      await res.arrayBuffer();
      if (res.status !== 200) throw new Error(`request failed: ${res.status}`);
    };
    await ask();
    await new Promise((r) => setTimeout(r, 1000)); // the row reaches the store (flush interval 250 ms)
    const afterFirst = treeRss(child.pid!);
    for (let done = 0; done < burst; done += 50) await Promise.all(Array.from({ length: 50 }, ask));
    await new Promise((r) => setTimeout(r, 2000));
    const m = { rss: treeRss(child.pid!), peakRss: peak };
    clearInterval(sampler);
    const label = i === 0 ? 'first boot' : `restart ${i}`;
    console.log(`${label.padEnd(12)} | ${readyMs.toFixed(0).padStart(8)} | ${mb(peakStart).padStart(11)} | ${mb(idle).padStart(11)} | ${mb(idleDistinct).padStart(20)} | ${mb(afterFirst).padStart(16)} | ${mb(m.rss).padStart(14)} | ${mb(m.peakRss).padStart(6)}`);
    child.kill('SIGTERM');
    await once(child, 'exit');
  }
} finally {
  await upstream.close();
  rmSync(dataDir, { recursive: true, force: true });
  console.log(`load average after: ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
}
