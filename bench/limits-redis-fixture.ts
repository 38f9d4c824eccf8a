// What the two Redis-backend benches (limits-redis-backend.ts, limits-redis-instructions.ts) govern: one call of the
// 13-rule key of bench/limits.ts (key, project and organization × rpm/tpm/concurrency, month and total budgets on key
// and organization), every limit far above the load, and the row and reply each request settles with.
import type { FastifyReply } from 'fastify';
import { generateApiKey } from '../gateway/auth/api-key.ts';
import type { GovernedCall } from '../gateway/governance/governor.ts';
import type { LedgerRow } from '../gateway/ledger/row.ts';
import { compileSnapshot } from '../gateway/snapshot/runtime.ts';
import { snapshotSchema } from '../gateway/snapshot/schema.ts';

const HIGH = { rpm: 1_000_000_000, tpm: 1_000_000_000, concurrency: 1_000_000 };
const BUDGET = { month: '1000000000', total: '1000000000' };

/** A governed chat call of the 13-rule key; `name` keeps two versions' counters apart in one Redis prefix. */
export function thirteenRuleCall(name = ''): GovernedCall {
  const k = generateApiKey();
  const org = `o${name ? `-${name}` : ''}`;
  const s = compileSnapshot(
    snapshotSchema.parse({
      providers: [{ id: 'p', baseUrl: 'http://127.0.0.1:9/v1' }],
      pricingGroups: [{ id: 'g', mode: 'flat_tokens', prices: { input: '0.15', output: '0.6' } }],
      models: [{ id: 'm', pricingGroup: 'g', protocols: { openai: [{ provider: 'p', model: 'a' }] } }],
      organizations: [{ id: org, models: ['*'], limits: HIGH, budget: BUDGET, projects: [{ id: 'p', limits: HIGH }] }],
      apiKeys: [{ id: `k${name ? `-${name}` : ''}`, hash: k.hash, prefix: k.prefix, organization: org, project: 'p', limits: HIGH, budget: BUDGET }],
    }),
  );
  const model = s.byName.get('m')!;
  return { requestId: 'r', key: s.keysByHash.get(k.hash)!, model, family: 'chat', billing: 'text', requestBytes: 300, targets: model.protocols.openai! };
}

/** The usage every request settles with. */
export const SETTLED_ROW = { input: 20, output: 30, cacheRead: 0, cacheWrite: 0, costPoints: '0.0000213' } as LedgerRow;

/** The governor sets its rate-limit headers on the fastify reply: a stand-in that takes them. */
export const HEADER_SINK = { header() {}, raw: { setHeader() {} } } as unknown as FastifyReply;
