// The operator's memory at scale, by part: the fake API server (this process) holds N ApiKeys (default 50,000)
// with their key Secrets, seeded settled; bench/operator-memory-child.ts runs the operator's controller in its own
// process, waits for the first snapshot, then drops each part (caches, compiler, writer, status bookkeeping) and
// prints how much live heap each held, with the peak heap and the RSS. ADR 0023 quotes it.
//   node bench/operator-memory.ts [N]     (MEMFLAGS="--max-old-space-size=320" bounds the child's heap)
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { displayPrefix } from '../gateway/auth/api-key.ts';
import { API_KEY_LABEL, API_VERSION, FINALIZER } from '../operator/kinds.ts';
import { startFakeApiServer } from '../test/k8s-fake/api-server.ts';
const N = Number(process.argv[2] ?? 50000);
const NS = 'scale';
const APIKEYS = 'tollgate.dev/v1alpha1/apikeys';
const B62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
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
const dir = mkdtempSync(join(tmpdir(), 'tg-k8s-mem-'));
writeFileSync(join(dir, 'kubeconfig'), api.kubeConfig(NS).exportConfig());
const c = spawn(process.execPath, ['--expose-gc', ...(process.env.MEMFLAGS ? process.env.MEMFLAGS.split(' ') : []), 'bench/operator-memory-child.ts'], { env: { ...process.env, KUBECONFIG: join(dir, 'kubeconfig') }, stdio: 'inherit' });
await new Promise((r) => c.on('exit', r));
await api.stop();
rmSync(dir, { recursive: true, force: true });
