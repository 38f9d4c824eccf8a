// `npm run dev:cluster` as a newcomer uses it: the script starts the fake API server, the operator and a gateway,
// prints KUBECONFIG=…; the real kubectl applies the CRDs and the examples, waits for an ApiKey to be Ready, reads
// its key from the Secret, and the gateway accepts that key until kubectl deletes the ApiKey. Ctrl-C stops all.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../k8s-fake/cluster.ts';
import { kubectl } from '../support/kubectl.ts';

describe('npm run dev:cluster with the real kubectl', () => {
  let dir: string;
  let proc: ChildProcess;
  let kubeconfig = '';
  let gatewayUrl = '';
  let output = '';
  const ok = async (...args: string[]): Promise<string> => {
    const r = await kubectl(kubeconfig, args, { home: dir, timeoutMs: 120_000 });
    expect(r.status, `kubectl ${args.join(' ')}\n${r.stderr}`).toBe(0);
    return r.stdout;
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tg-dev-cluster-'));
    proc = spawn(process.execPath, ['scripts/dev-cluster.ts', '--data-dir', join(dir, 'data')], { stdio: ['ignore', 'pipe', 'pipe'] });
    proc.stdout!.on('data', (d: Buffer) => (output += d.toString()));
    proc.stderr!.on('data', (d: Buffer) => (output += d.toString()));
    await eventually(() => /^KUBECONFIG=/m.test(output) || proc.exitCode !== null, 60_000, 'dev:cluster printing KUBECONFIG');
    kubeconfig = output.match(/^KUBECONFIG=(.*)$/m)?.[1] ?? '';
    expect(kubeconfig, output).toBe(join(dir, 'data', 'kubeconfig'));
  }, 90_000);

  afterAll(async () => {
    if (proc && proc.exitCode === null && proc.signalCode === null) {
      proc.kill('SIGKILL');
      await once(proc, 'exit');
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it('serves an ApiKey applied with kubectl until kubectl deletes it', async () => {
    expect(await ok('apply', '-f', 'crds/')).toContain('customresourcedefinition.apiextensions.k8s.io/models.tollgate.dev configured');
    await ok('apply', '-f', 'examples/k8s/secrets/', '-f', 'examples/k8s/');
    // web-frontend belongs to acme, whose models are served whatever the PricingGroups' state.
    expect(await ok('wait', '--for=condition=Ready', 'apikey/web-frontend', '--timeout=90s')).toContain('apikey.tollgate.dev/web-frontend condition met');
    expect(await ok('get', 'models', 'gpt-4o')).toMatch(/^gpt-4o\s+openai\/gpt-4o\s+openai,responses\s+gpt-4o\s+True\s/m);
    const secretName = await ok('get', 'apikey', 'web-frontend', '-o', 'jsonpath={.status.secretName}');
    const key = Buffer.from(await ok('get', 'secret', secretName, '-o', 'jsonpath={.data.key}'), 'base64').toString('utf8');
    expect(key).toMatch(/^sk_live_/);
    await eventually(() => /^TOLLGATE_URL=/m.test(output) || proc.exitCode !== null, 180_000, 'dev:cluster printing TOLLGATE_URL');
    gatewayUrl = output.match(/^TOLLGATE_URL=(.*)$/m)?.[1] ?? '';
    expect(gatewayUrl, output).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const models = (key: string) => fetch(`${gatewayUrl}/api/v1/models`, { headers: { authorization: `Bearer ${key}` } });
    const listed = await eventually(async () => {
      const r = await models(key);
      return r.status === 200 && ((await r.json()) as { data: { id: string }[] });
    }, 60_000, 'the gateway accepting the key');
    expect(listed.data.map((m) => m.id)).toContain('openai/gpt-4o');
    expect(await ok('delete', 'apikey', 'web-frontend', '--timeout=60s')).toContain('apikey.tollgate.dev "web-frontend" deleted');
    await eventually(async () => (await models(key)).status === 401, 30_000, 'the gateway refusing the deleted key');
  }, 300_000);

  it('stops the API server, the operator and the gateway on Ctrl-C', async () => {
    const exited = once(proc, 'exit');
    proc.kill('SIGINT');
    const [code] = (await Promise.race([exited, new Promise((_, fail) => setTimeout(() => fail(new Error(`dev:cluster did not stop:\n${output}`)), 60_000))])) as [number | null];
    expect(code).toBe(0);
    await expect(fetch(`${gatewayUrl}/healthz`)).rejects.toThrow();
    const apiUrl = (await import('node:fs')).readFileSync(kubeconfig, 'utf8').match(/"server": "([^"]+)"/)![1];
    await expect(fetch(`${apiUrl}/version`)).rejects.toThrow();
  }, 90_000);
});
