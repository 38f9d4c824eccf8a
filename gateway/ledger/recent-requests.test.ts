// Recent requests filtered by key: the per-key rollup bounds the index walk; paging must still return every row of the
// key exactly once, newest first, whatever the page size and the hours the rows fall in, with and without filters.
import { describe, expect, it } from 'vitest';
import { BACKENDS, useTestDatabase } from '../../test/support/databases.ts';
import { freshProject, ledgerRow } from '../../test/support/ledger-rows.ts';
import { recentRequests } from './admin-queries.ts';
import type { RecentRequestsQuery } from './admin-queries.ts';
import { HOUR_MS } from './hour.ts';
import type { LedgerRow } from './row.ts';
import { writeUsageBatch } from './writer.ts';

describe.each(BACKENDS)('recent requests by key on %s', (backend) => {
  const db = useTestDatabase(backend);

  it('pages every row of a key once, newest first, across sparse and dense hours', async () => {
    const { store } = db();
    const key = freshProject('key');
    const busy = freshProject('key');
    const t0 = Date.UTC(2025, 8, 1, 6);
    const rows: LedgerRow[] = [];
    // The key: 1 row in hour 0, 9 in hour 1, none for a day, 23 in the last hour (some in the same millisecond);
    // another key floods every hour in between.
    const at = [t0 + 5, ...Array.from({ length: 9 }, (_, i) => t0 + HOUR_MS + i * 60_000), ...Array.from({ length: 23 }, (_, i) => t0 + 30 * HOUR_MS + Math.floor(i / 2) * 1000)];
    at.forEach((ms, i) => rows.push(ledgerRow({ apiKeyId: key, occurredAt: ms, clientModel: i % 2 ? 'm-odd' : 'm-even', status: i % 5 ? 200 : 500 })));
    for (let h = 0; h <= 31; h++) for (let i = 0; i < 20; i++) rows.push(ledgerRow({ apiKeyId: busy, occurredAt: t0 + h * HOUR_MS + i * 90_000 }));
    expect(await writeUsageBatch(store, rows)).toBe(rows.length);

    const pageAll = async (q: Omit<RecentRequestsQuery, 'limit' | 'after'>, limit: number) => {
      const out: string[] = [];
      let after: RecentRequestsQuery['after'];
      for (;;) {
        const page = await recentRequests(store, { ...q, limit, after });
        out.push(...page.rows.map((r) => r.request_id));
        if (!page.more) return out;
        const last = page.rows.at(-1)!;
        after = { occurredAtMs: Date.parse(last.occurred_at), requestId: last.request_id };
      }
    };
    const expected = async (where: string, params: unknown[]) =>
      (await store.query<{ request_id: string }>(`SELECT request_id FROM usage_events WHERE ${where} ORDER BY occurred_at DESC, request_id DESC`, params)).rows.map((r) => r.request_id);
    const mine = await expected('api_key_id = $1', [key]);
    expect(mine).toHaveLength(33);
    for (const limit of [1, 2, 5, 9, 10, 24, 100]) expect(await pageAll({ key }, limit)).toEqual(mine);
    expect(await pageAll({ key, model: 'm-odd' }, 4)).toEqual(await expected("api_key_id = $1 AND client_model = 'm-odd'", [key]));
    expect(await pageAll({ key, status: 500 }, 3)).toEqual(await expected('api_key_id = $1 AND status = 500', [key]));
    expect(await pageAll({ key: busy }, 97)).toEqual(await expected('api_key_id = $1', [busy]));
    expect(await pageAll({ key: 'no-such-key' }, 10)).toEqual([]);
  });
});
