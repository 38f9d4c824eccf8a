// The chart's values reach the processes: render ci/dev-values.yaml with the real helm, take the environment the
// Deployments give their containers, and start the gateway's snapshot source and the operator with exactly that
// environment against the fake API server. What they do must follow the values (watchNamespace ≠ release
// namespace, leader election off, the staleness bound and refusal).
import { CoordinationV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { SnapshotHolder } from '../../gateway/snapshot/holder.ts';
import type { KubeSource } from '../../gateway/snapshot/kube-source.ts';
import { startKubeSource } from '../../gateway/snapshot/kube-source.ts';
import { quietLogger } from '../../kube/informer.ts';
import type { RunningOperator } from '../../operator/operator.ts';
import { startOperator } from '../../operator/operator.ts';
import type { FakeApiServer } from '../k8s-fake/api-server.ts';
import { startFakeApiServer } from '../k8s-fake/api-server.ts';
import { eventually, TestCluster } from '../k8s-fake/cluster.ts';
import { helm, helmBinary } from '../support/helm.ts';

type Env = Record<string, string>;

async function renderedEnv(args: string[]): Promise<{ gateway: Env; operator: Env }> {
  const r = await helm(['template', 'tg', 'charts/tollgate', '--namespace', 'tollgate', ...args]);
  expect(r.status, r.stderr).toBe(0);
  const out: Record<string, Env> = {};
  for (const d of parseAllDocuments(r.stdout).map((x) => x.toJS() as { kind: string; metadata: { labels?: Record<string, string> }; spec: { template: { spec: { containers: { env: { name: string; value?: string }[] }[] } } } } | null)) {
    if (d?.kind !== 'Deployment') continue;
    const component = d.metadata.labels?.['app.kubernetes.io/component'] ?? '';
    // Plain values only: fieldRefs (POD_NAME, POD_NAMESPACE) and Secrets are the kubelet's to fill in.
    out[component] = Object.fromEntries(d.spec.template.spec.containers[0].env.filter((e) => e.value !== undefined).map((e) => [e.name, e.value!]));
  }
  return { gateway: out.gateway, operator: out.operator };
}

function withEnv<T>(env: Env, fn: () => T): T {
  const saved = { ...process.env };
  Object.assign(process.env, env, { POD_NAMESPACE: 'tollgate' });
  try {
    return fn();
  } finally {
    for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
    Object.assign(process.env, saved);
  }
}

describe('ci/dev-values.yaml: the processes do what the values say', () => {
  let api: FakeApiServer;
  let env: { gateway: Env; operator: Env };
  let operator: RunningOperator;
  let source: KubeSource;
  const holder = new SnapshotHolder();

  beforeAll(async () => {
    await helmBinary();
    env = await renderedEnv(['-f', 'charts/tollgate/ci/dev-values.yaml', '--set', 'gateway.staleAfterSeconds=2,gateway.refuseWhenStale=true']);
    api = await startFakeApiServer({ bookmarkIntervalMs: 200 });
  }, 120_000);
  afterAll(async () => {
    await source?.close();
    await operator?.stop();
    await api?.stop();
  });

  it('the operator watches operator.watchNamespace and, with leader election off, leads without a Lease', async () => {
    expect(env.operator.TOLLGATE_LEADER_ELECTION).toBe('false');
    const namespace = env.operator.TOLLGATE_NAMESPACE;
    expect(namespace).toBe('tollgate-resources');
    operator = startOperator({ kubeConfig: api.kubeConfig(namespace), namespace, snapshotNamespace: env.operator.TOLLGATE_SNAPSHOT_NAMESPACE, leaderElection: env.operator.TOLLGATE_LEADER_ELECTION !== 'false', identity: 'op', informer: { backoffBaseMs: 50, backoffMaxMs: 300 } });
    const cluster = new TestCluster(api.kubeConfig(namespace), namespace);
    await cluster.apply('Organization', 'acme', { models: ['*'] });
    await eventually(async () => (await cluster.condition('Organization', 'acme', 'Ready'))?.status === 'True', 5000, 'Organization Ready');
    expect(operator.controller()).toBeDefined();
    const leases = await api.kubeConfig(namespace).makeApiClient(CoordinationV1Api).listNamespacedLease({ namespace });
    expect(leases.items.map((l) => l.metadata?.name)).not.toContain('tollgate-operator');
  });

  it('the gateway reads the snapshot from the snapshot namespace the operator writes to (not its own), bounded by the rendered staleness values', async () => {
    expect(env.gateway.TOLLGATE_NAMESPACE).toBe('tollgate-resources');
    expect(env.gateway.TOLLGATE_SNAPSHOT_NAMESPACE).toBe(env.operator.TOLLGATE_SNAPSHOT_NAMESPACE);
    source = withEnv(env.gateway, () => startKubeSource({ holder, log: quietLogger, kubeConfig: api.kubeConfig('default'), podName: 'gw-0', informer: { backoffBaseMs: 50, backoffMaxMs: 300 } }));
    expect(source.namespace).toBe('tollgate-resources-snapshot');
    await source.loaded;
    expect(holder.current!.organizations.has('acme')).toBe(true);
    expect(holder.refuseWhenStale).toBe(true);
    await api.stop();
    await eventually(() => holder.stale, 6000, 'stale after the rendered bound');
    await api.start();
    await eventually(() => holder.stale === undefined, 5000, 'fresh again');
  });
});
