// `npm run dev:cluster`: the whole Kubernetes flow on a laptop without a cluster. Starts the fake API server
// (test/k8s-fake, in strict mode: schema and CEL admission, namespaces, field managers) with tollgate's CRDs
// installed, then the operator and one gateway as child processes against it, all on loopback ports, and prints
// `KUBECONFIG=<path>` for the real kubectl. State lives in memory (the API server) and in --data-dir (the gateway's
// embedded store, logs, the kubeconfig). Ctrl-C stops everything.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { createWriteStream, mkdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { startFakeApiServer } from '../test/k8s-fake/api-server.ts';

const USAGE = `usage: npm run dev:cluster -- [--data-dir DIR] [--namespace NS] [--api-port N] [--gateway-port N]
  --data-dir      kubeconfig, gateway store and logs (default .tollgate/dev-cluster)
  --namespace     where the operator and the gateway work (default tollgate; created)
  --api-port      fake API server port on 127.0.0.1 (default: any free port)
  --gateway-port  gateway port on 127.0.0.1 (default: any free port)`;

const { values } = parseArgs({
  options: { 'data-dir': { type: 'string' }, namespace: { type: 'string' }, 'api-port': { type: 'string' }, 'gateway-port': { type: 'string' }, help: { type: 'boolean', short: 'h' } },
});
if (values.help) {
  console.log(USAGE);
  process.exit(0);
}

const root = resolve(import.meta.dirname, '..');
const dataDir = resolve(values['data-dir'] ?? join(root, '.tollgate', 'dev-cluster'));
const namespace = values.namespace ?? 'tollgate';
mkdirSync(dataDir, { recursive: true });

async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((ok, fail) => srv.once('error', fail).listen(0, '127.0.0.1', () => ok()));
  const port = (srv.address() as { port: number }).port;
  await new Promise<void>((ok) => srv.close(() => ok()));
  return port;
}

const api = await startFakeApiServer({ strict: true, port: values['api-port'] ? Number(values['api-port']) : 0 });
api.store.create('/v1/namespaces', '', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } });
const kubeconfig = api.writeKubeconfig(join(dataDir, 'kubeconfig'), namespace);
// kubectl can work as soon as the API server answers; the gateway's URL follows once it listens.
console.log(`KUBECONFIG=${kubeconfig}`);
const gatewayPort = values['gateway-port'] ? Number(values['gateway-port']) : await freePort();

const children: { name: string; proc: ChildProcess }[] = [];
function run(name: string, args: string[], env: Record<string, string>): ChildProcess {
  const log = createWriteStream(join(dataDir, `${name}.log`), { flags: 'a' });
  // The same Node as this script (npm runs the pinned Node 24), with the repository as working directory.
  const proc = spawn(process.execPath, args, { cwd: root, env: { ...process.env, KUBECONFIG: kubeconfig, TOLLGATE_ADMIN_PORT: 'off', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  proc.stdout!.pipe(log);
  proc.stderr!.pipe(log);
  proc.once('exit', (code, signal) => {
    if (!stopping) {
      console.error(`dev:cluster: ${name} exited (${signal ?? code}); see ${join(dataDir, `${name}.log`)}`);
      void stop(1);
    }
  });
  children.push({ name, proc });
  return proc;
}

let stopping = false;
async function stop(code: number): Promise<void> {
  if (stopping) return;
  stopping = true;
  await Promise.all(
    children.map(({ proc }) => {
      if (proc.exitCode !== null || proc.signalCode !== null) return undefined;
      return new Promise<void>((ok) => {
        const kill = setTimeout(() => proc.kill('SIGKILL'), 10_000);
        proc.once('exit', () => {
          clearTimeout(kill);
          ok();
        });
        proc.kill('SIGTERM');
      });
    }),
  );
  await api.stop();
  process.exit(code);
}
process.once('SIGINT', () => void stop(0));
process.once('SIGTERM', () => void stop(0));

run('operator', ['operator/main.ts', '--namespace', namespace], { POD_NAME: 'tollgate-operator-0', LOG_LEVEL: 'info' });
const gateway = run('gateway', ['bin/tollgate.js', 'start', '--kubernetes', '--namespace', namespace, '--host', '127.0.0.1', '--port', String(gatewayPort)], {
  POD_NAME: 'tollgate-gateway-0',
  TOLLGATE_DATA_DIR: join(dataDir, 'gateway'),
  LOG_LEVEL: 'info',
});

// Ready when the gateway says it listens (it then waits for the operator's first snapshot to turn ready). The
// bound is generous: a first start creates the embedded database, which takes a while on a busy machine.
await new Promise<void>((ok, fail) => {
  const timer = setTimeout(() => fail(new Error(`the gateway did not start within 180 s; see ${join(dataDir, 'gateway.log')}`)), 180_000);
  let seen = '';
  gateway.stdout!.on('data', (d: Buffer) => {
    seen = (seen + d.toString()).slice(-4096);
    if (seen.includes('tollgate listening')) {
      clearTimeout(timer);
      ok();
    }
  });
}).catch((err: unknown) => {
  console.error(`dev:cluster: ${(err as Error).message}`);
  return stop(1);
});

console.log(`TOLLGATE_URL=http://127.0.0.1:${gatewayPort}`);
console.error(`dev:cluster: fake API server ${api.url} (CRDs installed, namespace ${namespace}), operator and gateway running; logs in ${dataDir}.
Try:
  export KUBECONFIG=${kubeconfig}
  kubectl apply -f examples/k8s/secrets/ -f examples/k8s/
  kubectl get tollgate
  kubectl wait --for=condition=Ready apikey/web-frontend
Ctrl-C stops everything.`);
