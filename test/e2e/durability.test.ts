// docs/contract.md, durability: an answer that reached the client is in the ledger exactly once, across SIGKILL and database outages.
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readJson } from '../support/http.ts';
import { generateApiKey } from '../../gateway/auth/api-key.ts';
import { openPgliteStore } from '../../gateway/store/pglite-store.ts';
import { openPgStore } from '../../gateway/store/pg-store.ts';
import type { Store } from '../../gateway/store/store.ts';
import { startChildGateway } from '../support/child-gateway.ts';
import { BACKENDS, createTestDatabase } from '../support/databases.ts';
import type { TestDatabase } from '../support/databases.ts';
import { startTestGateway, testConfig } from '../support/gateway.ts';
import type { FakeUpstream } from '../upstream/server.ts';
import { startFakeUpstream } from '../upstream/server.ts';

let upstream: FakeUpstream;
beforeAll(async () => {
  upstream = await startFakeUpstream({ record: false });
});
afterAll(async () => upstream?.close());

/** One chat call; resolves with the request id only once the whole answer (JSON, or stream through [DONE]) arrived. */
async function deliver(url: string, key: string, i: number): Promise<string> {
  const stream = i % 2 === 1;
  const res = await fetch(`${url}/api/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'gpt-4o-mini', stream, messages: [{ role: 'user', content: `request number ${i}` }] }),
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`status ${res.status}: ${text}`);
  if (stream && !text.includes('data: [DONE]')) throw new Error('stream incomplete');
  return res.headers.get('x-tollgate-request-id')!;
}

async function ledgerCounts(store: Store, ids: string[]): Promise<{ perId: Map<string, number>; rows: number; rollupRequests: number }> {
  const r = await store.query<{ request_id: string }>('SELECT request_id FROM usage_events WHERE request_id = ANY($1)', [ids]);
  const perId = new Map<string, number>();
  for (const row of r.rows) perId.set(row.request_id, (perId.get(row.request_id) ?? 0) + 1);
  const total = await store.query<{ n: string }>('SELECT count(*)::text AS n FROM usage_events');
  const rollup = await store.query<{ n: string | null }>('SELECT sum(request_count)::text AS n FROM usage_hourly');
  return { perId, rows: Number(total.rows[0].n), rollupRequests: Number(rollup.rows[0].n ?? 0) };
}

describe.each(BACKENDS)('SIGKILL right after delivery (%s)', (backend) => {
  it('every delivered request id is in the ledger exactly once after restart', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'tg-kill-'));
    const db: TestDatabase | undefined = backend === 'postgres' ? await createTestDatabase('postgres', { migrate: false }) : undefined;
    const keys = Object.fromEntries(['acme', 'globex', 'revoked', 'expired'].map((k) => [k, generateApiKey()]));
    const configPath = join(dataDir, 'tollgate.json');
    writeFileSync(configPath, JSON.stringify(testConfig(upstream.url, keys)));
    try {
      const child = await startChildGateway({ configPath, dataDir, databaseUrl: db?.databaseUrl });
      const delivered: string[] = [];
      // Sequential first, then a concurrent burst; the kill lands the instant the last answer is complete.
      for (let i = 0; i < 10; i++) delivered.push(await deliver(child.url, keys.acme.key, i));
      delivered.push(...(await Promise.all(Array.from({ length: 20 }, (_, i) => deliver(child.url, keys.acme.key, 10 + i)))));
      expect(await child.kill('SIGKILL')).toBeNull();
      expect(delivered).toHaveLength(30);
      // The kill must have caught rows that lived only in the journal, or this test would prove nothing.
      expect(journaledRows(join(dataDir, 'journal'))).toBeGreaterThan(0);

      const again = await startChildGateway({ configPath, dataDir, databaseUrl: db?.databaseUrl });
      // One more answer after the restart, then a clean stop that flushes.
      delivered.push(await deliver(again.url, keys.acme.key, 99));
      expect(await again.kill('SIGTERM')).toBe(0);

      const store = db ? openPgStore(db.databaseUrl!) : await openPgliteStore(join(dataDir, 'pglite'));
      try {
        const { perId, rows, rollupRequests } = await ledgerCounts(store, delivered);
        for (const id of delivered) expect(perId.get(id), id).toBe(1);
        expect(rows).toBe(31);
        // The hourly rollup counted each replayed row once, too.
        expect(rollupRequests).toBe(31);
      } finally {
        await store.close();
      }
    } finally {
      await db?.drop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 90_000);
});

describe.each(BACKENDS)('database unreachable under traffic (%s)', (backend) => {
  it('keeps answering, journals, and drains exactly once when the database returns', async () => {
    const db = await createTestDatabase(backend);
    const conn = await db.interruptible();
    const t = await startTestGateway({ store: conn.store, upstream, flushIntervalMs: 20 });
    try {
      await conn.down();
      const ids: string[] = [];
      for (let i = 0; i < 40; i++) ids.push(await deliver(t.url, t.keys.acme, i));
      const ready = await fetch(`${t.url}/readyz`);
      expect(ready.status).toBe(200);
      expect((await readJson(ready)).database).toBe(false);
      // The report cannot be read while the database is away: a clear 503, never a 500.
      const report = await fetch(`${t.url}/api/business/v1/customer/usage?from=2026-01-01&to=2026-01-02`, { headers: { authorization: `Bearer ${t.keys.acme}` } });
      expect(report.status).toBe(503);
      expect(report.headers.get('content-type')).toContain('application/problem+json');
      await new Promise((r) => setTimeout(r, 300));
      await conn.up();
      await t.gw.ledger.flush();
      const { perId, rows, rollupRequests } = await ledgerCounts(conn.store, ids);
      for (const id of ids) expect(perId.get(id), id).toBe(1);
      expect(rows).toBe(40);
      expect(rollupRequests).toBe(40);
    } finally {
      await t.close();
      await db.drop();
    }
  }, 60_000);

  it('past the journal bound: 503 and /readyz false; both clear once it drains', async () => {
    const db = await createTestDatabase(backend);
    const conn = await db.interruptible();
    const t = await startTestGateway({ store: conn.store, upstream, flushIntervalMs: 20, maxJournalBytes: 16 * 1024 });
    try {
      await conn.down();
      const statuses: number[] = [];
      let refused: Record<string, unknown> | undefined;
      for (let i = 0; i < 60 && !refused; i++) {
        const res = await fetch(`${t.url}/api/v1/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${t.keys.acme}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: `fill ${i}` }] }),
        });
        statuses.push(res.status);
        if (res.status !== 200) refused = await readJson(res);
      }
      expect(statuses.at(-1)).toBe(503);
      expect(refused).toMatchObject({ error: { type: 'server_error', code: 'ledger_unavailable' } });
      expect((await fetch(`${t.url}/readyz`)).status).toBe(503);
      await conn.up();
      await expect.poll(async () => (await fetch(`${t.url}/readyz`)).status, { timeout: 15_000, interval: 100 }).toBe(200);
      expect(await deliver(t.url, t.keys.acme, 1000)).toMatch(/-/);
      await t.gw.ledger.flush();
      const { rows } = await ledgerCounts(conn.store, []);
      expect(rows).toBe(statuses.filter((s) => s === 200).length + 1);
    } finally {
      await t.close();
      await db.drop();
    }
  }, 60_000);
});

function journaledRows(dir: string): number {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.jsonl') && f !== 'rejected.jsonl')
    .reduce((n, f) => n + readFileSync(join(dir, f), 'utf8').split('\n').filter(Boolean).length, 0);
}
