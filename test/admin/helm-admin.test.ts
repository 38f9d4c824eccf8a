// The chart's admin token Secret, rendered by the real helm binary: referenced by name, never inlined, and read by
// the gateway under the variable the chart sets.
import { beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { loadAdminTokens, matchAdminToken } from '../../gateway/admin/tokens.ts';
import { helm, helmBinary } from '../support/helm.ts';

interface Obj {
  kind: string;
  metadata: { name: string };
  spec: { template: { spec: { containers: { env?: { name: string; value?: string; valueFrom?: unknown }[] }[] } } };
}

async function gatewayEnv(args: string[]): Promise<Record<string, unknown>> {
  const r = await helm(['template', 'tg', 'charts/tollgate', '--namespace', 'tollgate', ...args]);
  expect(r.status, r.stderr).toBe(0);
  const d = parseAllDocuments(r.stdout).map((x) => x.toJS() as Obj).find((o) => o?.kind === 'Deployment' && o.metadata.name.endsWith('-gateway'))!;
  return Object.fromEntries(d.spec.template.spec.containers[0].env!.map((e) => [e.name, e.value ?? e.valueFrom]));
}

beforeAll(async () => {
  await helmBinary();
}, 120_000);

describe('chart: admin tokens', () => {
  it('by default sets none (the admin API answers 503 admin_disabled)', async () => {
    expect((await gatewayEnv([])).TOLLGATE_ADMIN_TOKENS).toBeUndefined();
  });

  it('reads the tokens from the named Secret, never inline, under the variable the gateway reads', async () => {
    const env = await gatewayEnv(['--set', 'admin.tokensSecret=tollgate-admin']);
    expect(env.TOLLGATE_ADMIN_TOKENS).toEqual({ secretKeyRef: { name: 'tollgate-admin', key: 'tokens' } });
    // What the kubelet would put there from the Secret: one token per line.
    const tokens = loadAdminTokens({ TOLLGATE_ADMIN_TOKENS: 'ops:read:0123456789abcdef0123\ngrafana:read:fedcba9876543210fedc\n' });
    expect(matchAdminToken(tokens, 'fedcba9876543210fedc')).toMatchObject({ name: 'grafana', role: 'read' });
  });

  it('refuses unknown admin values', async () => {
    const bad = await helm(['template', 'tg', 'charts/tollgate', '--set', 'admin.tokenSecret=typo']);
    expect(bad.status).not.toBe(0);
  });
});
