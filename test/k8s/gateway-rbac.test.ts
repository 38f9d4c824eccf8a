// The gateway's Role, as the real helm renders it, against every Kubernetes API call a gateway makes: the calls are
// recorded by an HTTP proxy in front of the fake API server while a gateway loads a snapshot the operator wrote,
// reports on its Lease and shuts down. Every call must be allowed; the ApiKey Secrets and the operator's leader
// Lease must be out of reach.
import { request as httpRequest, createServer } from 'node:http';
import type { Server } from 'node:http';
import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { SnapshotHolder } from '../../gateway/snapshot/holder.ts';
import { startKubeSource } from '../../gateway/snapshot/kube-source.ts';
import { quietLogger } from '../../kube/informer.ts';
import type { RunningOperator } from '../../operator/operator.ts';
import { startOperator } from '../../operator/operator.ts';
import type { FakeApiServer } from '../k8s-fake/api-server.ts';
import { startFakeApiServer } from '../k8s-fake/api-server.ts';
import { eventually, TestCluster } from '../k8s-fake/cluster.ts';
import { helm, helmBinary } from '../support/helm.ts';

interface Rule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
  resourceNames?: string[];
}
interface Call {
  verb: string;
  group: string;
  resource: string;
  namespace: string;
  name: string | undefined;
}

const PATH = /^\/(?:api\/v1|apis\/([^/]+)\/[^/]+)\/namespaces\/([^/]+)\/([^/]+)(?:\/([^/]+))?$/;

function callOf(method: string, url: string): Call {
  const u = new URL(url, 'http://x');
  const m = u.pathname.match(PATH);
  if (!m) throw new Error(`not a namespaced resource call: ${method} ${u.pathname}`);
  const [, group = '', namespace, resource, name] = m;
  const watch = u.searchParams.get('watch') === 'true' || u.searchParams.get('watch') === '1';
  const verb = { GET: watch ? 'watch' : name ? 'get' : 'list', POST: 'create', PUT: 'update', PATCH: 'patch', DELETE: 'delete' }[method] ?? method;
  return { verb, group, resource, namespace, name };
}

function allowed(role: { namespace: string; rules: Rule[] }, c: Call): boolean {
  return role.namespace === c.namespace && role.rules.some((r) => r.apiGroups.includes(c.group) && r.resources.includes(c.resource) && r.verbs.includes(c.verb) && (!r.resourceNames || (c.name !== undefined && r.resourceNames.includes(c.name))));
}

describe("the gateway's Role covers exactly what a gateway does", () => {
  let api: FakeApiServer;
  let proxy: Server;
  let operator: RunningOperator;
  const calls: Call[] = [];
  let role: { namespace: string; rules: Rule[] };
  let env: Record<string, string>;

  beforeAll(async () => {
    await helmBinary();
    const r = await helm(['template', 'tg', 'charts/tollgate', '--namespace', 'tollgate']);
    expect(r.status, r.stderr).toBe(0);
    const objects = parseAllDocuments(r.stdout).map((d) => d.toJS() as { kind: string; metadata: { name: string; namespace: string }; rules?: Rule[]; spec?: { template: { spec: { containers: { env: { name: string; value?: string }[] }[] } } } } | null);
    const gwRole = objects.find((o) => o?.kind === 'Role' && o.metadata.name.endsWith('-gateway'))!;
    role = { namespace: gwRole.metadata.namespace, rules: gwRole.rules! };
    const gw = objects.find((o) => o?.kind === 'Deployment' && o.metadata.name.endsWith('-gateway'))!;
    env = Object.fromEntries(gw.spec!.template.spec.containers[0].env.filter((e) => e.value !== undefined).map((e) => [e.name, e.value!]));

    api = await startFakeApiServer({ bookmarkIntervalMs: 200 });
    // The gateway's own path to the API server: an HTTP proxy that records each call, watches streamed through.
    proxy = createServer((req, res) => {
      calls.push(callOf(req.method ?? 'GET', req.url ?? '/'));
      const target = new URL(api.url);
      const up = httpRequest({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers }, (ur) => {
        res.writeHead(ur.statusCode ?? 502, ur.headers);
        ur.pipe(res);
      });
      up.on('error', () => res.destroy());
      res.on('close', () => up.destroy());
      req.pipe(up);
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', () => resolve()));
  }, 120_000);
  afterAll(async () => {
    await operator?.stop();
    proxy?.closeAllConnections();
    proxy?.close();
    await api?.stop();
  });

  it('every call is allowed; ApiKey Secrets and the operator Lease are not', async () => {
    const watchNs = env.TOLLGATE_NAMESPACE;
    const snapshotNs = env.TOLLGATE_SNAPSHOT_NAMESPACE;
    expect(snapshotNs).not.toBe(watchNs);
    operator = startOperator({ kubeConfig: api.kubeConfig(watchNs), namespace: watchNs, snapshotNamespace: snapshotNs, identity: 'op', election: { leaseDurationMs: 2000, renewDeadlineMs: 1500, retryPeriodMs: 200 }, informer: { backoffBaseMs: 50, backoffMaxMs: 300 } });
    const cluster = new TestCluster(api.kubeConfig(watchNs), watchNs);
    await cluster.apply('Organization', 'acme', { models: ['*'] });
    await cluster.apply('ApiKey', 'web', { organization: 'acme', project: 'web' });
    await eventually(async () => (await cluster.get('ApiKey', 'web'))?.status?.secretName, 5000, 'key issued');

    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'gw', server: `http://127.0.0.1:${(proxy.address() as { port: number }).port}`, skipTLSVerify: true }],
      users: [{ name: 'gw' }],
      contexts: [{ name: 'gw', cluster: 'gw', user: 'gw', namespace: 'tollgate' }],
      currentContext: 'gw',
    });
    const holder = new SnapshotHolder();
    const saved = { ...process.env };
    Object.assign(process.env, env);
    let source;
    try {
      source = startKubeSource({ holder, log: quietLogger, kubeConfig: kc, podName: 'gw-0', reportEveryMs: 100 });
    } finally {
      for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
      Object.assign(process.env, saved);
    }
    expect(source.namespace).toBe(snapshotNs);
    await source.loaded;
    expect([...holder.current!.keysByHash.values()].map((k) => k.id)).toEqual(['web']);
    // The operator counts this pod: the report Lease is in the namespace it reads.
    await eventually(async () => (await cluster.condition('ApiKey', 'web', 'Applied'))?.message?.startsWith('1/1 pods'), 5000, 'Applied counts the gateway');
    await new Promise((r) => setTimeout(r, 300));
    await source.close();

    const kinds = new Set(calls.map((c) => `${c.verb} ${c.group || 'core'}/${c.resource}`));
    expect([...kinds].sort()).toEqual(expect.arrayContaining(['create coordination.k8s.io/leases', 'delete coordination.k8s.io/leases', 'list core/secrets', 'update coordination.k8s.io/leases', 'watch core/secrets']));
    expect(calls.filter((c) => !allowed(role, c))).toEqual([]);

    // Out of reach: the key Secrets and the leader Lease in the watched namespace.
    expect(allowed(role, { verb: 'get', group: '', resource: 'secrets', namespace: watchNs, name: 'web-key' })).toBe(false);
    expect(allowed(role, { verb: 'list', group: '', resource: 'secrets', namespace: watchNs, name: undefined })).toBe(false);
    expect(allowed(role, { verb: 'update', group: 'coordination.k8s.io', resource: 'leases', namespace: watchNs, name: 'tollgate-operator' })).toBe(false);
    // Nor anything the gateway does not do.
    for (const verb of ['patch', 'deletecollection', 'escalate', 'bind']) expect(role.rules.some((r) => r.verbs.includes(verb))).toBe(false);
  });
});
