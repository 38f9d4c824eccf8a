// Kubernetes control plane at scale, as separate processes: the fake API server (this process) holds N ApiKeys
// (default 50,000) with their key Secrets, seeded in their settled state; an operator process and two gateway
// processes run from the repository's entry points, as the image runs them. Measured: operator start to first
// snapshot, each gateway's first load, one key change to every gateway, and every process's RSS (VmRSS, VmHWM).
// Gateways are observed through their report Leases in the API server, so no process is instrumented; each
// change is also broken into stages from the processes' own log lines (operator: compile, serialize, API writes;
// gateway: assemble) and the CPU time (utime+stime from /proc) each process spent on it, which a loaded machine
// does not inflate the way it inflates wall time.
//   node bench/k8s-scale.ts [--keys 50000] [--operator-heap 384]
// docs/kubernetes.md quotes its output. One or two runs only: it loads a shared machine for a minute or two.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { displayPrefix } from '../gateway/auth/api-key.ts';
import { SERVED_GENERATION_ANNOTATION } from '../gateway/snapshot/kube-format.ts';
import { API_KEY_LABEL, API_VERSION, FINALIZER } from '../operator/kinds.ts';
import { startFakeApiServer } from '../test/k8s-fake/api-server.ts';
import { TestCluster } from '../test/k8s-fake/cluster.ts';

const { values } = parseArgs({ options: { keys: { type: 'string', default: '50000' }, 'operator-heap': { type: 'string', default: '384' } } });
const N = Number(values.keys);
const NS = 'scale';
const APIKEYS = 'tollgate.dev/v1alpha1/apikeys';
const B62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const NODE = process.execPath;
// As the chart runs the operator (operator.heapMiB); --operator-heap 0 leaves the old generation unbounded.
const OPERATOR_NODE_OPTIONS = `--max-semi-space-size=8${values['operator-heap'] === '0' ? '' : ` --max-old-space-size=${values['operator-heap']}`}`;
const PG = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

const dir = mkdtempSync(join(tmpdir(), 'tollgate-k8s-scale-'));
const api = await startFakeApiServer({ bookmarkIntervalMs: 1000, historyLimit: 1000 });
const s = api.store;
s.create('tollgate.dev/v1alpha1/organizations', NS, { metadata: { name: 'acme' }, spec: { models: ['*'] } });
s.create('tollgate.dev/v1alpha1/providers', NS, { metadata: { name: 'openai' }, spec: { baseUrl: 'https://api.openai.com/v1', protocols: ['openai'] } });
s.create('tollgate.dev/v1alpha1/pricinggroups', NS, { metadata: { name: 'mini' }, spec: { mode: 'flat_tokens', prices: { input: '0.15', output: '0.6' } } });
s.create('tollgate.dev/v1alpha1/models', NS, { metadata: { name: 'mini' }, spec: { id: 'openai/gpt-4o-mini', pricingGroupRef: { name: 'mini' }, upstreams: [{ protocol: 'openai', providerRef: { name: 'openai' }, model: 'gpt-4o-mini' }] } });
const stamp = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
for (let i = 0; i < N; i++) {
  const name = `key-${i}`;
  const key = 'sk_live_' + Array.from(randomBytes(43), (b) => B62[b % 62]).join('');
  const prefix = displayPrefix(key);
  const k = s.create(APIKEYS, NS, { metadata: { name, finalizers: [FINALIZER] }, spec: { organization: 'acme', project: `p${i % 100}` } });
  s.create('/v1/secrets', NS, { metadata: { name: `${name}-key`, labels: { [API_KEY_LABEL]: name }, ownerReferences: [{ apiVersion: API_VERSION, kind: 'ApiKey', name, uid: k.metadata.uid!, controller: true }] }, stringData: { key } });
  const conditions = [
    { type: 'Ready', status: 'True', reason: 'Issued', message: `key ${prefix}… is in Secret "${name}-key" (data.key)`, observedGeneration: 1, lastTransitionTime: stamp },
    { type: 'Applied', status: 'True', reason: 'Served', message: '2/2 pods serve generation 1', observedGeneration: 1, lastTransitionTime: stamp },
  ];
  s.update(APIKEYS, NS, name, { ...k, status: { secretName: `${name}-key`, prefix, observedGeneration: 1, conditions } }, 'status');
}
const kubeconfig = join(dir, 'kubeconfig');
writeFileSync(kubeconfig, api.kubeConfig(NS).exportConfig());

// A database of its own for the gateways' ledger (migrations must not touch anyone else's).
const dbName = `tollgate_scale_${randomBytes(4).toString('hex')}`;
const admin = new pg.Client({ connectionString: PG });
await admin.connect();
await admin.query(`CREATE DATABASE ${dbName}`);
const dbUrl = new URL(PG);
dbUrl.pathname = `/${dbName}`;

const children: ChildProcess[] = [];
/** Log lines carrying stage timings, by process name, in arrival order. */
const lines = new Map<string, Record<string, unknown>[]>();
function run(name: string, args: string[], env: Record<string, string>): ChildProcess {
  const c = spawn(NODE, args, { env: { ...process.env, NODE_OPTIONS: name === 'operator' ? OPERATOR_NODE_OPTIONS : '--max-semi-space-size=8', KUBECONFIG: kubeconfig, TOLLGATE_NAMESPACE: NS, TOLLGATE_METRICS_PORT: 'off', TOLLGATE_ADMIN_PORT: 'off', LOG_LEVEL: 'info', LOG_FORMAT: 'json', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  c.stderr!.on('data', (d: Buffer) => process.stderr.write(`[${name}] ${d.toString()}`));
  const mine: Record<string, unknown>[] = [];
  lines.set(name, mine);
  let rest = '';
  c.stdout!.on('data', (d: Buffer) => {
    const parts = (rest + d.toString()).split('\n');
    rest = parts.pop()!;
    for (const l of parts) {
      if (!l.includes('snapshot written') && !l.includes('snapshot loaded from the cluster')) continue;
      try {
        mine.push(JSON.parse(l) as Record<string, unknown>);
      } catch {
        // not JSON: ignore
      }
    }
  });
  children.push(c);
  return c;
}
const TICK_MS = 10; // USER_HZ is 100 on Linux
/** utime+stime of a process, ms. */
const cpu = (c: ChildProcess): number => {
  const f = readFileSync(`/proc/${c.pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(f[11]) + Number(f[12])) * TICK_MS;
};
const selfCpu = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
const lineFor = (name: string, msg: string, generation: number) => lines.get(name)?.find((l) => l.msg === msg && l.generation === generation);
const rss = (c: ChildProcess) => {
  const st = readFileSync(`/proc/${c.pid}/status`, 'utf8');
  const kb = (f: string) => Number(new RegExp(`${f}:\\s+(\\d+)`).exec(st)?.[1] ?? 0);
  return { rssMB: Math.round(kb('VmRSS') / 1024), peakMB: Math.round(kb('VmHWM') / 1024) };
};
const get = (type: string, name: string): unknown => {
  try {
    return s.get(type, NS, name);
  } catch {
    return undefined;
  }
};
const manifestGeneration = () => {
  const m = get('/v1/secrets', 'tollgate-snapshot') as { data?: Record<string, string> } | undefined;
  return m?.data?.['manifest.json'] ? (JSON.parse(Buffer.from(m.data['manifest.json'], 'base64').toString()) as { generation: number }).generation : 0;
};
const served = (pod: string) => Number((get('coordination.k8s.io/v1/leases', `tollgate-gw-${pod}`) as { metadata?: { annotations?: Record<string, string> } } | undefined)?.metadata?.annotations?.[SERVED_GENERATION_ANNOTATION] ?? -1);
async function until(what: string, ok: () => boolean, ms = 600_000): Promise<number> {
  const t0 = performance.now();
  while (!ok()) {
    if (performance.now() - t0 > ms) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 5));
  }
  return Math.round(performance.now() - t0);
}

const figures: Record<string, unknown> = { keys: N };
try {
  const op = run('operator', ['operator/main.ts'], { TOLLGATE_LEADER_ELECTION: 'false' });
  const opCpu0 = cpu(op);
  figures.operatorStartToFirstSnapshotMs = await until('first snapshot', () => manifestGeneration() > 0);
  figures.operatorFirstSnapshotCpuMs = cpu(op) - opCpu0;
  const first = lineFor('operator', 'snapshot written', manifestGeneration());
  if (first) figures.operatorFirstPass = { compileMs: first.compileMs, serializeMs: first.serializeMs, putMs: first.putMs, shards: first.shards };
  const pods = ['gw-a', 'gw-b'];
  const t0 = performance.now();
  const gws = pods.map((pod, i) => run(pod, ['bin/tollgate.js', 'start', '--kubernetes', '--port', '0', '--host', '127.0.0.1'], { POD_NAME: pod, DATABASE_URL: dbUrl.toString(), TOLLGATE_DATA_DIR: join(dir, `gw-${i}`) }));
  const g1 = manifestGeneration();
  await until('gateways loaded', () => pods.every((p) => served(p) >= g1));
  figures.gatewayStartToServingMs = Math.round(performance.now() - t0);
  figures.gatewayFirstLoad = pods.map((p) => {
    const l = lineFor(p, 'snapshot loaded from the cluster', g1);
    return { assembleMs: l?.assembleMs, shardsParsed: l?.shardsParsed };
  });
  await new Promise((r) => setTimeout(r, 3000));
  const cluster = new TestCluster(api.kubeConfig(NS), NS);
  const change: number[] = [];
  const stages: Record<string, unknown>[] = [];
  const procs = { operator: op, 'gw-a': gws[0], 'gw-b': gws[1] };
  const cpuAll = () => ({ ...Object.fromEntries(Object.entries(procs).map(([n, c]) => [n, cpu(c)])), apiServer: selfCpu() });
  const diff = (a: Record<string, number>, b: Record<string, number>) => Object.fromEntries(Object.keys(a).map((k) => [k, Math.round(b[k] - a[k])]));
  for (const [i, name] of ['key-1', `key-${N >> 1}`, `key-${N - 1}`, 'key-2', `key-${N >> 2}`].entries()) {
    const before = manifestGeneration();
    const c0 = cpuAll();
    const t = performance.now();
    await cluster.patchSpec('ApiKey', name, { disabled: true });
    await until(`change ${i}`, () => pods.every((p) => served(p) > before), 60_000);
    change.push(Math.round(performance.now() - t));
    const c1 = cpuAll();
    await new Promise((r) => setTimeout(r, 1500));
    const c2 = cpuAll();
    const g = manifestGeneration();
    const w = lineFor('operator', 'snapshot written', g);
    stages.push({
      generation: g,
      operator: w && { compileMs: w.compileMs, serializeMs: w.serializeMs, putMs: w.putMs, shardsWritten: w.shardsWritten },
      gateways: pods.map((p) => {
        const l = lineFor(p, 'snapshot loaded from the cluster', g);
        return l && { assembleMs: l.assembleMs, shardsParsed: l.shardsParsed };
      }),
      // CPU ms per process from the API write until every gateway served the change, and for the 1.5 s after (status writes, reports).
      cpuToServedMs: diff(c0, c1),
      cpuAfterMs: diff(c1, c2),
    });
  }
  figures.oneKeyChangeToEveryGatewayMs = change;
  figures.changeStages = stages;
  figures.operator = rss(op);
  figures.gateways = gws.map(rss);
} finally {
  for (const c of children) c.kill('SIGTERM');
  await new Promise((r) => setTimeout(r, 2000));
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  await api.stop();
  await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`).catch(() => {});
  await admin.end();
  rmSync(dir, { recursive: true, force: true });
}
figures.loadAverage = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
console.log(`[k8s-scale] ${JSON.stringify(figures)}`);
