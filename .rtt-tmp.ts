import { resolve } from 'node:path';
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { generateApiKey } from './gateway/auth/api-key.ts';
import { compileSnapshot } from './gateway/snapshot/runtime.ts';
import { snapshotSchema } from './gateway/snapshot/schema.ts';
import type { LedgerRow } from './gateway/ledger/row.ts';
const prefix = `tollgate-redisperf:${randomUUID()}:`;
const HIGH = { rpm: 1_000_000_000, tpm: 1_000_000_000, concurrency: 1_000_000 };
const BUDGET = { month: '1000000000', total: '1000000000' };
const row = { input: 20, output: 30, cacheRead: 0, cacheWrite: 0, costPoints: '0.0000213' } as LedgerRow;
const reply = { raw: { setHeader() {} } } as any;
const PER = Number(process.argv[2] ?? 9);
async function load(name: string, dir: string) {
  const { Governor } = await import(resolve(dir, 'gateway/governance/governor.ts'));
  const { RedisBackend } = await import(resolve(dir, 'gateway/governance/redis-backend.ts'));
  const k = generateApiKey();
  const s = compileSnapshot(snapshotSchema.parse({
    providers: [{ id: 'p', baseUrl: 'http://127.0.0.1:9/v1' }],
    pricingGroups: [{ id: 'g', mode: 'flat_tokens', prices: { input: '0.15', output: '0.6' } }],
    models: [{ id: 'm', pricingGroup: 'g', protocols: { openai: [{ provider: 'p', model: 'a' }] } }],
    organizations: [{ id: `o-${name}`, models: ['*'], limits: HIGH, budget: BUDGET, projects: [{ id: 'p', limits: HIGH }] }],
    apiKeys: [{ id: `k-${name}`, hash: k.hash, prefix: k.prefix, organization: `o-${name}`, project: 'p', limits: HIGH, budget: BUDGET }],
  }));
  const model = s.byName.get('m')!;
  const call = { requestId: 'r', key: s.keysByHash.get(k.hash)!, model, family: 'chat', billing: 'text', requestBytes: 300, targets: model.protocols.openai! };
  const backend = new RedisBackend({ url: 'redis://127.0.0.1:6379', prefix });
  await backend.ready();
  return { name, gov: new Governor({ backend }), call };
}
const vs = [await load('new', '.'), await load('base', '/tmp/redisperf/base')];
const res: Record<string, number[]> = { new: [], base: [] };
for (let round = 0; round < 10; round++) for (const v of round % 2 ? [...vs].reverse() : vs) {
  const times: number[] = [];
  let prev: any[] = [];
  for (let i = 0; i < 300; i++) {
    for (const t of prev) { t.charged(row); t.finish(); }
    const t0 = performance.now();
    prev = await Promise.all(Array.from({ length: PER }, () => v.gov.admit(v.call, reply)));
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  res[v.name].push(times[150]);
}
for (const k in res) { const s = res[k].sort((a, b) => a - b); console.log(k, 'median RTT ms per batch of', PER, s.map(x => x.toFixed(3)).join(' ')); }
for (const v of vs) await v.gov.close();
const r = new Redis('redis://127.0.0.1:6379'); let c = '0'; do { const [n, keys] = await r.scan(c, 'MATCH', prefix + '*', 'COUNT', 1000); c = n; if (keys.length) await r.del(...keys); } while (c !== '0'); r.disconnect();
