// SIGTERM with a stream still open: the gateway drains within TOLLGATE_DRAIN_SECONDS (what the chart derives from
// terminationGracePeriodSeconds), cutting what is still open, flushes its journal and exits 0 — not a fixed 30 s,
// and not a force exit that loses the journal flush. (A stream cut this way is not billed yet: the relay records
// nothing when its upstream read is aborted after the client left.)
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateApiKey } from '../../gateway/auth/api-key.ts';
import { openPgliteStore } from '../../gateway/store/pglite-store.ts';
import { openPgStore } from '../../gateway/store/pg-store.ts';
import { startChildGateway } from '../support/child-gateway.ts';
import { createTestDatabase } from '../support/databases.ts';
import type { TestDatabase } from '../support/databases.ts';
import { testConfig } from '../support/gateway.ts';
import type { FakeUpstream } from '../upstream/server.ts';
import { startFakeUpstream } from '../upstream/server.ts';

let upstream: FakeUpstream;
beforeAll(async () => {
  upstream = await startFakeUpstream({ record: false });
});
afterAll(async () => upstream?.close());

describe('drain budget', () => {
  it('a stream longer than the budget is cut at the budget; the process exits 0 after flushing', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'tg-drain-'));
    // The machine's Postgres when DATABASE_URL names it (start-up is quicker than the embedded store's), else PGlite.
    const db: TestDatabase | undefined = process.env.DATABASE_URL ? await createTestDatabase('postgres', { migrate: false }) : undefined;
    const keys = Object.fromEntries(['acme', 'globex', 'revoked', 'expired'].map((k) => [k, generateApiKey()]));
    const configPath = join(dataDir, 'tollgate.json');
    writeFileSync(configPath, JSON.stringify(testConfig(upstream.url, keys)));
    try {
      // 7 s budget: 1 s for requests, the rest for the journal flush.
      const child = await startChildGateway({ configPath, dataDir, databaseUrl: db?.databaseUrl, env: { TOLLGATE_DRAIN_SECONDS: '7' } });
      const res = await fetch(`${child.url}/api/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${keys.acme.key}`, 'content-type': 'application/json' },
        // Each event 2 s apart: the whole stream takes far longer than the budget.
        body: JSON.stringify({ model: 'gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'a long story' }], metadata: { fake: 'slow-stream', delay_ms: 2000 } }),
      });
      expect(res.status).toBe(200);
      const requestId = res.headers.get('x-tollgate-request-id')!;
      const reader = res.body!.getReader();
      const text: string[] = [Buffer.from((await reader.read()).value!).toString()];
      const rest = (async () => {
        try {
          for (;;) {
            const { done, value } = await reader.read();
            if (done) return 'ended';
            text.push(Buffer.from(value).toString());
          }
        } catch {
          return 'cut';
        }
      })();
      const code = await child.kill('SIGTERM');
      expect(code, child.logs.join('').slice(-3000)).toBe(0);
      expect(child.logs.join('')).toContain('drain budget spent: cutting the requests and streams still open');
      expect(await rest).toMatch(/ended|cut/);
      expect(text.join('')).not.toContain('[DONE]');
      // Billed for what was streamed before the cut: one row, estimated (no usage event came), flushed before exit:
      // the prompt estimate, and output from the text the client received (here only the role chunk, no text: 0).
      let content = 0;
      for (const line of text.join('').split('\n')) {
        if (line.startsWith('data: {')) for (const c of JSON.parse(line.slice(6)).choices ?? []) content += Buffer.byteLength(c.delta?.content ?? '');
      }
      const store = db ? openPgStore(db.databaseUrl!) : await openPgliteStore(join(dataDir, 'pglite'));
      try {
        const rows = await store.query<{ estimated: boolean; input: string; output: string; cost_points: string; stream: boolean }>(
          'SELECT estimated, input::text AS input, output::text AS output, cost_points::text, stream FROM usage_events WHERE request_id = $1',
          [requestId],
        );
        expect(rows.rows, child.logs.join('').slice(-3000)).toHaveLength(1);
        expect(rows.rows[0].estimated).toBe(true);
        expect(rows.rows[0].stream).toBe(true);
        expect(Number(rows.rows[0].input)).toBeGreaterThan(0);
        expect(Number(rows.rows[0].output)).toBe(Math.ceil(content / 4));
        expect(rows.rows[0].cost_points).not.toBe('0');
      } finally {
        await store.close();
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
      await db?.drop();
    }
  }, 120_000);
});
