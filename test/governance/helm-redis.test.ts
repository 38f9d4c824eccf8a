// The chart's Redis options, rendered by the real helm binary: an existing Redis by Secret reference, or the
// optional in-chart Valkey; neither by default.
import { Deployment } from 'kubernetes-models/apps/v1';
import { Service } from 'kubernetes-models/v1';
import { beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { helm, helmBinary } from '../support/helm.ts';

interface Obj {
  kind: string;
  metadata: { name: string };
  spec: { template: { spec: { containers: { name: string; env?: { name: string; value?: string; valueFrom?: { secretKeyRef?: { name: string; key: string } } }[] }[] } } };
}

async function render(args: string[]): Promise<Obj[]> {
  const r = await helm(['template', 'tg', 'charts/tollgate', '--namespace', 'tollgate', ...args]);
  expect(r.status, r.stderr).toBe(0);
  return parseAllDocuments(r.stdout).map((d) => d.toJS() as Obj).filter((o) => o !== null);
}

const gatewayEnv = (objs: Obj[]) => {
  const d = objs.find((o) => o.kind === 'Deployment' && o.metadata.name.endsWith('-gateway'))!;
  return Object.fromEntries(d.spec.template.spec.containers[0].env!.map((e) => [e.name, e.value ?? e.valueFrom]));
};

beforeAll(async () => {
  await helmBinary();
}, 120_000);

describe('chart: redis for shared limits', () => {
  it('by default: no Redis, no Valkey', async () => {
    const objs = await render([]);
    expect(gatewayEnv(objs).REDIS_URL).toBeUndefined();
    expect(objs.some((o) => o.metadata.name.endsWith('-valkey'))).toBe(false);
  });

  it('an existing Redis: the URL by Secret reference, never inline', async () => {
    const objs = await render(['--set', 'redis.existingSecret=tollgate-redis', '--set', 'redis.ratesWhenDown=refuse']);
    const env = gatewayEnv(objs);
    expect(env.REDIS_URL).toEqual({ secretKeyRef: { name: 'tollgate-redis', key: 'REDIS_URL' } });
    expect(env.TOLLGATE_RATES_WHEN_REDIS_DOWN).toBe('refuse');
    expect(env.TOLLGATE_REDIS_PREFIX).toBe('tollgate:');
    expect(objs.some((o) => o.metadata.name.endsWith('-valkey'))).toBe(false);
  });

  it('the in-chart Valkey: a Deployment and Service the gateways point at', async () => {
    const objs = await render(['--set', 'redis.valkey.enabled=true']);
    expect(gatewayEnv(objs).REDIS_URL).toBe('redis://tg-tollgate-valkey:6379');
    const dep = objs.find((o) => o.kind === 'Deployment' && o.metadata.name === 'tg-tollgate-valkey');
    const svc = objs.find((o) => o.kind === 'Service' && o.metadata.name === 'tg-tollgate-valkey');
    expect(() => new Deployment(dep as never).validate()).not.toThrow();
    expect(() => new Service(svc as never).validate()).not.toThrow();
  });

  it('lint --strict passes and a bad value is refused by the schema', async () => {
    expect((await helm(['lint', '--strict', 'charts/tollgate', '--set', 'redis.valkey.enabled=true'])).status).toBe(0);
    const bad = await helm(['template', 'tg', 'charts/tollgate', '--set', 'redis.ratesWhenDown=maybe']);
    expect(bad.status).not.toBe(0);
    expect(bad.stderr).toContain('ratesWhenDown');
  });
});
