import type { FastifyReply } from 'fastify';
import { describe, expect, it } from 'vitest';
import { generateApiKey } from '../auth/api-key.ts';
import { GatewayError } from '../errors.ts';
import type { LedgerRow } from '../ledger/row.ts';
import { compileSnapshot } from '../snapshot/runtime.ts';
import { snapshotSchema } from '../snapshot/schema.ts';
import type { SnapshotInput } from '../snapshot/schema.ts';
import { Governor } from './governor.ts';
import type { GovernedCall } from './governor.ts';
import { MemoryBackend } from './memory-backend.ts';
import { costToUnits, pointsToUnits, split, join, toUnits, unitsToPoints } from './spend-units.ts';
import { fromInt, mul, parseDecimal, shift } from '../billing/decimal.ts';

const K = generateApiKey();

function world(extra: { key?: Record<string, unknown>; org?: Record<string, unknown> }) {
  const input: SnapshotInput = {
    providers: [{ id: 'p', baseUrl: 'http://127.0.0.1:9/v1', timeouts: { totalMs: 1000 } }],
    pricingGroups: [{ id: 'g', mode: 'flat_tokens', prices: { input: '1', output: '2' } }],
    models: [
      { id: 'm/a', alias: 'a', pricingGroup: 'g', protocols: { openai: [{ provider: 'p', model: 'a' }] } },
      { id: 'm/b', pricingGroup: 'g', protocols: { openai: [{ provider: 'p', model: 'b' }] } },
    ],
    organizations: [{ id: 'o', models: ['*'], ...extra.org }],
    apiKeys: [{ id: 'k', hash: K.hash, prefix: K.prefix, organization: 'o', project: 'web', ...extra.key }],
  };
  const s = compileSnapshot(snapshotSchema.parse(input));
  return { key: s.keysByHash.get(K.hash)!, s };
}

function fakeReply() {
  const headers: Record<string, string> = {};
  const reply = {
    header(n: string, v: string) {
      headers[n] = v;
      return reply;
    },
  };
  return { headers, reply: reply as unknown as FastifyReply };
}

function call(w: ReturnType<typeof world>, model = 'm/a', requestBytes = 400): GovernedCall {
  const m = w.s.byName.get(model)!;
  return { requestId: 'r', key: w.key, model: m, family: 'chat', billing: 'text', requestBytes, targets: m.protocols.openai! };
}

function row(input: number, output: number, costPoints: string): LedgerRow {
  return { input, output, cacheRead: 0, cacheWrite: 0, costPoints } as LedgerRow;
}

async function tryAdmit(g: Governor, c: GovernedCall) {
  const { headers, reply } = fakeReply();
  try {
    const t = await g.admit(c, reply);
    return { ok: true as const, t, headers };
  } catch (err) {
    if (!(err instanceof GatewayError)) throw err;
    return { ok: false as const, err, headers };
  }
}

describe('spend units', () => {
  it('holds 15 decimals exactly and rounds only beyond them, upwards', () => {
    expect(unitsToPoints(pointsToUnits('0.000000000000001'))).toBe('0.000000000000001');
    expect(unitsToPoints(pointsToUnits('12345678.5'))).toBe('12345678.5');
    expect(pointsToUnits('0.0000000000000001')).toBe(1n);
    const u = -pointsToUnits('3.25');
    expect(join(...split(u))).toBe(u);
    // Below one point either way split and join take a short path: the same texts and values as the long one.
    const one = 10n ** 15n;
    for (const v of [0n, 1n, -1n, 2130000000n, -2130000000n, one - 1n, 1n - one, one, -one, one + 1n, -one - 1n]) {
      expect(split(v)).toEqual([(v / one).toString(), (v % one).toString()]);
      expect(join(...split(v))).toBe(v);
      expect(join(Number((v / one).toString()), (v % one).toString())).toBe(v);
    }
  });

  it('reads a ledger cost the same way on its short path as the general parse', () => {
    for (const text of ['0.0000213', '12.5', '3', '0.000000000000001', '0.0000000000000001', '0.1234567890123456789', '1e-7', '2.50', '007.10', '99999999.9999999', '123456789012.123456', '9007199254740993.000000000000001', '1.00000000000001', '0.00000000000009', '9.99999999999999']) {
      expect(costToUnits(text)).toBe(pointsToUnits(text));
    }
    expect(() => costToUnits('1.2.3')).toThrow();
    expect(() => costToUnits('-1.5')).toThrow();
    expect(() => costToUnits('5.')).toThrow();
    expect(() => costToUnits('.5')).toThrow();
  });
});

describe('governor (in-process)', () => {
  it('reserves the exact input price of the estimate, rounded up, whatever the discount', async () => {
    const budget = { budget: { month: '1000' } };
    for (const [price, discount] of [['0.15', undefined], ['3', '0.875'], ['0.0000001', '0.333'], ['0.000001', '0.0000001'], ['123456789', '1']] as const) {
      for (const bytes of [1, 400, 4001, 40_000_000_000]) {
        const w = world({ org: { ...budget, ...(discount ? { discount } : {}) } });
        w.s.byName.get('m/a')!.pricing.tiers[0].input = parseDecimal(price);
        const t = (await new Governor({ backend: new MemoryBackend() }).admit(call(w, 'm/a', bytes), fakeReply().reply))!;
        // tokens × price per million × discount, rounded up to femtopoints.
        const exact = shift(mul(mul(fromInt(Math.ceil(bytes / 4)), parseDecimal(price)), parseDecimal(discount ?? '1')), 6);
        expect(t.reserve).toBe(toUnits(exact));
      }
    }
    // Keys of one price with different discounts, one after the other.
    const w = world({ org: budget });
    const g = new Governor({ backend: new MemoryBackend() });
    for (const discount of [undefined, '0.5', undefined, '0.25', '0.25']) {
      (w.key.organization as { discount: unknown }).discount = discount === undefined ? undefined : parseDecimal(discount);
      const t = (await g.admit(call(w), fakeReply().reply))!;
      expect(t.reserve).toBe((pointsToUnits('0.0001') * BigInt(Number(discount ?? '1') * 100)) / 100n);
    }
  });

  it('costs nothing for a key without limits', () => {
    const w = world({});
    expect(w.key.governance).toBeUndefined();
    const g = new Governor({ backend: new MemoryBackend() });
    expect(g.admit(call(w), fakeReply().reply)).toBeUndefined();
  });

  it('admits exactly rpm requests at once, then refuses with retry-after and headers', async () => {
    const w = world({ key: { limits: { rpm: 5 } } });
    let now = 1_000_000;
    const g = new Governor({ backend: new MemoryBackend(), now: () => now });
    const results = [];
    for (let i = 0; i < 15; i++) results.push(await tryAdmit(g, call(w)));
    expect(results.filter((r) => r.ok)).toHaveLength(5);
    expect(results[0].headers['x-ratelimit-limit-requests']).toBe('5');
    expect(results[0].headers['x-ratelimit-remaining-requests']).toBe('4');
    expect(results[4].headers['x-ratelimit-remaining-requests']).toBe('0');
    const refused = results[5];
    expect(refused.ok).toBe(false);
    expect(refused.ok === false && refused.err.kind).toBe('rate_limited');
    expect(refused.headers['retry-after']).toBe('12');
    now += 12_000;
    expect((await tryAdmit(g, call(w))).ok).toBe(true);
    expect((await tryAdmit(g, call(w))).ok).toBe(false);
  });

  it('tells a refused request what every rate rule has left as it stands: the refused request took nothing', async () => {
    // The key's tpm refuses (100 tokens estimated, 50 left); every rate rule, before or after it, is told as it stands.
    const w = world({ key: { limits: { rpm: 10, tpm: 150 } }, org: { limits: { rpm: 1000, tpm: 100_000 } } });
    const g = new Governor({ backend: new MemoryBackend(), now: () => 1_000_000 });
    const first = await tryAdmit(g, call(w));
    expect(first.ok && first.headers).toMatchObject({ 'x-ratelimit-remaining-requests': '9', 'x-ratelimit-remaining-tokens': '50' });
    const refused = await tryAdmit(g, call(w));
    expect(refused.ok === false && refused.err.kind).toBe('rate_limited');
    expect(refused.headers).toMatchObject({ 'x-ratelimit-limit-requests': '10', 'x-ratelimit-remaining-requests': '9', 'x-ratelimit-limit-tokens': '150', 'x-ratelimit-remaining-tokens': '50' });
  });

  it('holds concurrency exactly and frees a slot when a ticket finishes', async () => {
    const w = world({ org: { projects: [{ id: 'web', limits: { concurrency: 2 } }] } });
    const g = new Governor({ backend: new MemoryBackend() });
    const a = await tryAdmit(g, call(w));
    const b = await tryAdmit(g, call(w));
    const c = await tryAdmit(g, call(w));
    expect([a.ok, b.ok, c.ok]).toEqual([true, true, false]);
    if (a.ok) a.t!.finish();
    expect((await tryAdmit(g, call(w))).ok).toBe(true);
  });

  it('applies per-model limits on top of the others, by id or alias', async () => {
    const w = world({ org: { limits: { rpm: 100, models: [{ model: 'a', rpm: 1 }] } } });
    const g = new Governor({ backend: new MemoryBackend() });
    expect((await tryAdmit(g, call(w, 'm/a'))).ok).toBe(true);
    expect((await tryAdmit(g, call(w, 'm/a'))).ok).toBe(false);
    expect((await tryAdmit(g, call(w, 'm/b'))).ok).toBe(true);
  });

  it('settles tokens per minute with the real usage', async () => {
    const w = world({ key: { limits: { tpm: 1000 } } });
    const now = 5_000_000;
    const g = new Governor({ backend: new MemoryBackend(), now: () => now });
    const first = await tryAdmit(g, call(w, 'm/a', 40)); // 10 tokens estimated
    expect(first.ok && first.headers['x-ratelimit-remaining-tokens']).toBe('990');
    if (first.ok) {
      first.t!.charged(row(400, 500, '0.0014'));
      first.t!.finish();
    }
    const second = await tryAdmit(g, call(w, 'm/a', 40));
    expect(second.ok && second.headers['x-ratelimit-remaining-tokens']).toBe('90');
    if (second.ok) {
      second.t!.charged(row(10, 200, '0'));
      second.t!.finish();
    }
    const third = await tryAdmit(g, call(w, 'm/a', 40));
    expect(third.ok).toBe(false);
  });

  it('refuses once a budget is spent, overshooting by no more than the in-flight requests, and rolls over at UTC midnight', async () => {
    const w = world({ org: { budget: { day: '0.001', softPercent: 50 } } });
    let now = Date.UTC(2026, 10, 24, 23, 59, 0);
    const g = new Governor({ backend: new MemoryBackend(), now: () => now });
    // Each request reserves 100 input tokens (0.0001 points) and is charged 0.0004 points.
    const inFlight = [];
    for (let i = 0; i < 3; i++) inFlight.push(await tryAdmit(g, call(w)));
    expect(inFlight.every((r) => r.ok)).toBe(true);
    for (const r of inFlight) if (r.ok) {
      r.t!.charged(row(100, 150, '0.0004'));
      r.t!.finish();
    }
    const more = [];
    for (let i = 0; i < 3; i++) more.push(await tryAdmit(g, call(w)));
    expect(more[0].ok).toBe(false);
    expect(more[0].ok === false && more[0].err.kind).toBe('quota_exceeded');
    expect(more[0].headers['x-should-retry']).toBe('false');
    expect(more[0].headers['retry-after']).toBe('60');
    const view = await g.describe(w.key);
    // Spent 0.0012 of 0.001: the overshoot (0.0002) is below the three in-flight charges minus their reservations.
    expect(view.budgets[0]).toMatchObject({ scope: 'organization', period: 'day', points: '0.001', spent: '0.0012', remaining: '0' });
    now += 60_000;
    const next = await tryAdmit(g, call(w));
    expect(next.ok).toBe(true);
    expect(next.headers['x-tollgate-budget-warning']).toBeUndefined();
  });

  it('flags past the soft threshold', async () => {
    const w = world({ key: { budget: { total: '0.0003', softPercent: 50 } } });
    const g = new Governor({ backend: new MemoryBackend() });
    const a = await tryAdmit(g, call(w));
    if (a.ok) {
      a.t!.charged(row(100, 0, '0.0002'));
      a.t!.finish();
    }
    const b = await tryAdmit(g, call(w));
    expect(b.ok).toBe(true);
    expect(b.headers['x-tollgate-budget-warning']).toContain('0.00015 of 0.0003');
  });

  it('gives the reservation back for a request never billed', async () => {
    const w = world({ key: { budget: { total: '0.0001' } } });
    const g = new Governor({ backend: new MemoryBackend() });
    const a = await tryAdmit(g, call(w));
    if (a.ok) a.t!.finish();
    expect((await g.describe(w.key)).budgets[0].spent).toBe('0');
  });
});
