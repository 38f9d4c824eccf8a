// Every object in examples/k8s (and the placeholder credentials in examples/k8s/secrets) applied through the fake
// API server: the operator must mark each one Ready and serve each Model, so the shipped examples never rot.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import type { FakeApiServer } from '../test/k8s-fake/api-server.ts';
import { startFakeApiServer } from '../test/k8s-fake/api-server.ts';
import { eventually, TestCluster } from '../test/k8s-fake/cluster.ts';
import type { Snapshot } from '../gateway/snapshot/schema.ts';
import { MANIFEST_SECRET } from '../gateway/snapshot/kube-format.ts';
import { Controller } from './controller.ts';
import type { Kind } from './kinds.ts';
import { KIND_NAMES } from './kinds.ts';
import { KubeClient } from './kube.ts';

const NS = 'examples';
const DIR = join(import.meta.dirname, '..', 'examples', 'k8s');

interface Doc {
  kind: string;
  metadata: { name: string };
  spec?: Record<string, unknown>;
  stringData?: Record<string, string>;
}

function docs(dir: string): Doc[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.yaml'))
    .flatMap((f) => parseAllDocuments(readFileSync(join(dir, f), 'utf8')).map((d) => d.toJS() as Doc | null))
    .filter((d): d is Doc => d !== null);
}

describe('examples/k8s through the operator', () => {
  let api: FakeApiServer;
  let cluster: TestCluster;
  let controller: Controller;
  const resources = docs(DIR);

  beforeAll(async () => {
    api = await startFakeApiServer({ bookmarkIntervalMs: 200 });
    cluster = new TestCluster(api.kubeConfig(NS), NS);
    controller = new Controller({ client: new KubeClient(api.kubeConfig(NS), NS), informer: { backoffBaseMs: 50, backoffMaxMs: 500 } });
    await controller.start();
    for (const s of docs(join(DIR, 'secrets'))) await cluster.putSecret(s.metadata.name, s.stringData ?? {});
    for (const r of resources) await cluster.apply(r.kind as Kind, r.metadata.name, r.spec ?? {});
  });
  afterAll(async () => {
    await controller?.stop();
    await api?.stop();
  });

  it('holds one object of every kind', () => {
    expect(new Set(resources.map((r) => r.kind))).toEqual(new Set(KIND_NAMES));
  });

  it('every object becomes Ready (a disabled ApiKey: Ready=False, reason Disabled, as shipped)', async () => {
    for (const r of resources) {
      const c = await eventually(async () => {
        await controller.idle();
        const got = await cluster.get(r.kind as Kind, r.metadata.name);
        const ready = got?.status?.conditions?.find((x) => x.type === 'Ready');
        return ready?.observedGeneration === got?.metadata.generation ? ready : undefined;
      }, 5000, `${r.kind}/${r.metadata.name} Ready`);
      const want = r.kind === 'ApiKey' && r.spec?.disabled === true ? { status: 'False', reason: 'Disabled' } : { status: 'True' };
      expect({ ref: `${r.kind}/${r.metadata.name}`, status: c.status, reason: c.reason, message: c.message }).toMatchObject(want);
    }
  });

  it('the snapshot serves every Model, the tiered one included', async () => {
    const base = JSON.parse((await cluster.secret(MANIFEST_SECRET))!['base.json']) as Snapshot;
    const models = resources.filter((r) => r.kind === 'Model').map((r) => r.spec!.id);
    expect(base.models.map((m) => m.id).sort()).toEqual([...models].sort());
    expect(base.pricingGroups.find((g) => g.id === 'gemini-pro')).toMatchObject({ mode: 'input_tokens_tiers', tiers: [{ upTo: 200000 }, { upTo: null }] });
  });
});
