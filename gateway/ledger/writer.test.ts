import { describe, expect, it } from 'vitest';
import { BACKENDS, countRows, useTestDatabase } from '../../test/support/databases.ts';
import { freshProject, ledgerRow } from '../../test/support/ledger-rows.ts';
import { HOUR_MS } from './hour.ts';
import type { LedgerRow } from './row.ts';
import { maintainPartitions, partitionName } from '../store/partitions.ts';
import type { Store } from '../store/store.ts';
import { writeUsageBatch } from './writer.ts';

const T0 = Date.UTC(2025, 5, 1, 10, 0);

describe.each(BACKENDS)('usage writer on %s', (backend) => {
  const db = useTestDatabase(backend);

  it('writes a one-day batch straight into its day partition, and through the parent when the day has none or the batch spans days', async () => {
    const { store } = db();
    const project = freshProject();
    const now = Date.now();
    await maintainPartitions(store, { now });
    const today = ledgerRow({ project, occurredAt: now });
    const old = ledgerRow({ project, occurredAt: Date.UTC(2001, 0, 1, 12) });
    expect(await writeUsageBatch(store, [today])).toBe(1);
    expect(await writeUsageBatch(store, [old])).toBe(1);
    // Replays: once into the partition directly, once as a two-day batch through the parent.
    expect(await writeUsageBatch(store, [today])).toBe(0);
    expect(await writeUsageBatch(store, [today, old])).toBe(0);
    const { rows } = await store.query<{ part: string; request_id: string }>('SELECT tableoid::regclass::text AS part, request_id FROM usage_events WHERE project = $1 ORDER BY occurred_at', [project]);
    expect(rows).toEqual([
      { part: 'usage_events_default', request_id: old.requestId },
      { part: partitionName(Math.floor(now / 86_400_000) * 86_400_000), request_id: today.requestId },
    ]);
    const { rows: hourly } = await store.query<{ n: string }>('SELECT sum(request_count)::text AS n FROM usage_hourly WHERE project = $1', [project]);
    expect(hourly[0].n).toBe('2');
  });

  it('stores every field of a row', async () => {
    const { store } = db();
    const row = ledgerRow({
      project: freshProject(),
      occurredAt: T0 + 1234.5,
      clientModel: 'claude-x',
      modelId: 'claude-x-id',
      provider: 'anthropic',
      upstreamModel: 'claude-x-2025',
      endpoint: '/api/anthropic/v1/messages',
      stream: true,
      input: 11,
      output: 22,
      cacheRead: 33,
      cacheWrite: 44,
      reasoning: 5,
      artifacts: 1,
      explicitCache: true,
      estimated: true,
      costPoints: '1e-7',
      originalCost: '0.00000020',
      detail: { quote: 'a"b\\c', nested: [1, null, { x: '{}' }] },
      attempts: 3,
      status: 200,
      latencyMs: 1234,
      keyPrefix: 'sk_live_Ab3dEf',
    });
    expect(await writeUsageBatch(store, [row])).toBe(1);
    const { rows } = await store.query<Record<string, unknown>>('SELECT * FROM usage_events WHERE request_id = $1', [row.requestId]);
    expect(rows[0]).toEqual({
      request_id: row.requestId,
      occurred_at: new Date(T0 + 1234),
      organization: 'org-a',
      project: row.project,
      api_key_id: 'key-1',
      client_model: 'claude-x',
      model_id: 'claude-x-id',
      provider: 'anthropic',
      upstream_model: 'claude-x-2025',
      endpoint: '/api/anthropic/v1/messages',
      stream: true,
      input: '11',
      output: '22',
      cache_read: '33',
      cache_write: '44',
      reasoning: '5',
      artifacts: '1',
      cache_explicit_read: '33',
      estimated: true,
      cost_points: '0.0000001',
      original_cost: '0.00000020',
      detail: { quote: 'a"b\\c', nested: [1, null, { x: '{}' }] },
      attempts: 3,
      status: 200,
      latency_ms: 1234,
      key_prefix: 'sk_live_Ab3dEf',
    });
  });

  it('stores NULL status, latency and key prefix for rows journaled before they existed', async () => {
    const { store } = db();
    const row = ledgerRow({ project: freshProject() });
    expect(await writeUsageBatch(store, [row])).toBe(1);
    const { rows } = await store.query('SELECT status, latency_ms, key_prefix FROM usage_events WHERE request_id = $1', [row.requestId]);
    expect(rows[0]).toEqual({ status: null, latency_ms: null, key_prefix: null });
  });

  it('counts cache reads as explicit only when the upstream caching is explicit', async () => {
    const { store } = db();
    const project = freshProject();
    await writeUsageBatch(store, [
      ledgerRow({ project, cacheRead: 7, explicitCache: true }),
      ledgerRow({ project, cacheRead: 9, explicitCache: false }),
    ]);
    const { rows } = await store.query<{ cache_read: string; cache_explicit_read: string }>(
      'SELECT cache_read, cache_explicit_read FROM usage_hourly WHERE project = $1',
      [project],
    );
    expect(rows).toEqual([{ cache_read: '16', cache_explicit_read: '7' }]);
  });

  it('writes each request exactly once: a replayed batch changes nothing', async () => {
    const { store } = db();
    const project = freshProject();
    const batch = Array.from({ length: 50 }, (_, i) => ledgerRow({ project, occurredAt: T0 + i * 120_000, input: i }));
    expect(await writeUsageBatch(store, batch)).toBe(50);
    const before = await store.query('SELECT * FROM usage_hourly WHERE project = $1 ORDER BY hour', [project]);

    expect(await writeUsageBatch(store, batch)).toBe(0);
    // Half old, half new: only the new half counts.
    const more = Array.from({ length: 10 }, () => ledgerRow({ project, occurredAt: T0 }));
    expect(await writeUsageBatch(store, [...batch.slice(0, 10), ...more])).toBe(10);
    expect(await writeUsageBatch(store, more)).toBe(0);

    expect(await countRows(store, 'usage_events', 'project = $1', [project])).toBe(60);
    const after = await store.query<{ request_count: string }>('SELECT * FROM usage_hourly WHERE project = $1 ORDER BY hour', [project]);
    expect(after.rows.map((r) => r.request_count)).toEqual(['40', '20']);
    expect(before.rows.map((r) => (r as { request_count: string }).request_count)).toEqual(['30', '20']);
  });

  it('counts a request id repeated inside one batch once', async () => {
    const { store } = db();
    const project = freshProject();
    const row = ledgerRow({ project });
    expect(await writeUsageBatch(store, [row, { ...row }, { ...row, input: 999 }])).toBe(1);
    const { rows } = await store.query<{ request_count: string; input: string }>(
      'SELECT request_count, input FROM usage_hourly WHERE project = $1',
      [project],
    );
    expect(rows).toEqual([{ request_count: '1', input: '100' }]);
  });

  it('keeps the hourly rollup equal to the sums over raw rows', async () => {
    const { store } = db();
    const project = freshProject();
    const models = ['a', 'b', '', 'c'];
    const rows: LedgerRow[] = [];
    for (let i = 0; i < 600; i++) {
      rows.push(
        ledgerRow({
          project,
          organization: 'org-r',
          apiKeyId: `${project}-k${i % 3}`,
          occurredAt: T0 + ((i * 7_919_000) % (5 * HOUR_MS)),
          clientModel: models[i % 4],
          modelId: `id-${models[i % 4] || 'fallback'}`,
          input: i,
          output: i * 2,
          cacheRead: i % 3,
          cacheWrite: i % 5,
          reasoning: i % 7,
          artifacts: i % 2,
          explicitCache: i % 2 === 0,
          costPoints: `0.${String(i).padStart(6, '0')}1`,
          originalCost: `${i}.5`,
        }),
      );
    }
    for (let i = 0; i < rows.length; i += 97) await writeUsageBatch(store, rows.slice(i, i + 97));

    const cols = 'input, output, cache_read, cache_write, cache_explicit_read, reasoning, artifacts, request_count, cost_points, original_cost';
    const rollup = await store.query(`SELECT hour, client_model AS model, organization, ${cols} FROM usage_hourly WHERE project = $1 ORDER BY 1, 2`, [project]);
    const raw = await store.query(
      `SELECT to_timestamp(floor(extract(epoch FROM occurred_at) / 3600) * 3600) AS hour,
              coalesce(nullif(client_model, ''), model_id) AS model, max(organization) AS organization,
              sum(input) AS input, sum(output) AS output, sum(cache_read) AS cache_read, sum(cache_write) AS cache_write,
              sum(cache_explicit_read) AS cache_explicit_read, sum(reasoning) AS reasoning, sum(artifacts) AS artifacts,
              count(*) AS request_count, sum(cost_points) AS cost_points, sum(original_cost) AS original_cost
       FROM usage_events WHERE project = $1 GROUP BY 1, 2 ORDER BY 1, 2`,
      [project],
    );
    expect(rollup.rows.length).toBe(5 * 4);
    expect(rollup.rows).toEqual(raw.rows);
    // The empty client model falls back to the configured model id.
    expect(rollup.rows.map((r) => (r as { model: string }).model)).toContain('id-fallback');
    // The per-key rollup, written by the same statement, holds the same sums per key.
    const byKey = await store.query(`SELECT api_key_id, hour, client_model AS model, organization, project, ${cols} FROM usage_hourly_keys WHERE project = $1 ORDER BY 1, 2, 3`, [project]);
    const rawByKey = await store.query(
      `SELECT api_key_id, to_timestamp(floor(extract(epoch FROM occurred_at) / 3600) * 3600) AS hour,
              coalesce(nullif(client_model, ''), model_id) AS model, max(organization) AS organization, max(project) AS project,
              sum(input) AS input, sum(output) AS output, sum(cache_read) AS cache_read, sum(cache_write) AS cache_write,
              sum(cache_explicit_read) AS cache_explicit_read, sum(reasoning) AS reasoning, sum(artifacts) AS artifacts,
              count(*) AS request_count, sum(cost_points) AS cost_points, sum(original_cost) AS original_cost
       FROM usage_events WHERE project = $1 GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`,
      [project],
    );
    expect(byKey.rows.length).toBeGreaterThan(20);
    expect(byKey.rows).toEqual(rawByKey.rows);
  });

  it('rolls up as the database sums: numeric display scale, exponents, max(organization), texts it cannot sum here', async () => {
    const { store } = db();
    const project = freshProject();
    const costs = ['0.10', '0.2', '1e-7', '2.5E+3', '0.000', '12345678901234567890.5', '1.50e1', '9007199254740993', ' 0.25'];
    // Summed here, summed here, then by the database (' 0.25' and a count sum past 2^53 are left to it).
    const batches = [costs.slice(0, 8), costs.slice(0, 4), costs, ['3', '4']];
    for (const [b, texts] of batches.entries()) {
      const rows = texts.map((cost, i) => ledgerRow({ project, apiKeyId: `${project}-k`, organization: i % 2 ? 'org-b' : 'org-a', occurredAt: T0 + b * HOUR_MS, costPoints: cost, originalCost: costs[(i + b) % 8], input: b === 3 ? 2 ** 52 + i : i }));
      expect(await writeUsageBatch(store, rows)).toBe(rows.length);
    }
    const sums = `sum(input) AS input, count(*) AS request_count, sum(cost_points) AS cost_points, sum(original_cost) AS original_cost`;
    const rollup = await store.query(`SELECT hour, organization, input, request_count, cost_points, original_cost FROM usage_hourly WHERE project = $1 ORDER BY 1`, [project]);
    const raw = await store.query(`SELECT date_trunc('hour', occurred_at, 'UTC') AS hour, max(organization) AS organization, ${sums} FROM usage_events WHERE project = $1 GROUP BY 1 ORDER BY 1`, [project]);
    expect(rollup.rows).toEqual(raw.rows);
    expect(rollup.rows.map((r) => (r as { cost_points: string }).cost_points)).toContain('12354686100489311398.8000001');
    // Each raw row keeps its own organization though its key's rows share the rest.
    const { rows: orgs } = await store.query('SELECT organization, count(*) AS n FROM usage_events WHERE project = $1 GROUP BY 1 ORDER BY 1', [project]);
    expect(orgs).toEqual([{ organization: 'org-a', n: '12' }, { organization: 'org-b', n: '11' }]);
    const byKey = await store.query(`SELECT hour, organization, project, input, request_count, cost_points, original_cost FROM usage_hourly_keys WHERE api_key_id = $1 ORDER BY 1`, [`${project}-k`]);
    const rawByKey = await store.query(`SELECT date_trunc('hour', occurred_at, 'UTC') AS hour, max(organization) AS organization, max(project) AS project, ${sums} FROM usage_events WHERE project = $1 GROUP BY 1 ORDER BY 1`, [project]);
    expect(byKey.rows).toEqual(rawByKey.rows);
  });

  it('sums original costs that equal the cost for some rows of a bucket and differ for others, as the database does', async () => {
    const { store } = db();
    const project = freshProject();
    const money = [['0.10', '0.10'], ['0.2', '0.2'], ['0.05', '0.1'], ['1e-7', '1e-7'], ['0.5', '1.000'], ['3', '3']];
    const rows = money.map(([costPoints, originalCost]) => ledgerRow({ project, apiKeyId: `${project}-k`, costPoints, originalCost }));
    expect(await writeUsageBatch(store, rows)).toBe(rows.length);
    const sums = 'count(*) AS request_count, sum(cost_points) AS cost_points, sum(original_cost) AS original_cost';
    const rollup = await store.query('SELECT request_count, cost_points, original_cost FROM usage_hourly WHERE project = $1', [project]);
    const raw = await store.query(`SELECT ${sums} FROM usage_events WHERE project = $1`, [project]);
    expect(rollup.rows).toEqual(raw.rows);
    expect(rollup.rows).toEqual([{ request_count: '6', cost_points: '3.8500001', original_cost: '4.4000001' }]);
    const byKey = await store.query('SELECT request_count, cost_points, original_cost FROM usage_hourly_keys WHERE api_key_id = $1', [`${project}-k`]);
    expect(byKey.rows).toEqual(raw.rows);
  });

  it('stores each row\'s own fields when rows of one batch alternate between keys, models and routes', async () => {
    const { store } = db();
    const project = freshProject();
    const other = freshProject();
    const a = { project, apiKeyId: `${project}-a`, clientModel: 'm-a', endpoint: '/api/v1/chat/completions', stream: false, keyPrefix: 'sk_live_a' };
    const b = { project: other, apiKeyId: `${other}-b`, clientModel: 'm\tb', endpoint: '/api/anthropic/v1/messages', stream: true, keyPrefix: undefined };
    const rows = [a, a, b, b, a, { ...a, stream: true }, { ...a, keyPrefix: 'sk_live_c' }].map((f) => ledgerRow(f));
    expect(await writeUsageBatch(store, rows)).toBe(rows.length);
    const { rows: stored } = await store.query<{ request_id: string }>(
      'SELECT request_id, project, api_key_id, client_model, endpoint, stream, key_prefix FROM usage_events WHERE project IN ($1, $2)',
      [project, other],
    );
    const byId = new Map(stored.map((r) => [r.request_id, r]));
    for (const r of rows) {
      expect(byId.get(r.requestId)).toEqual({
        request_id: r.requestId, project: r.project, api_key_id: r.apiKeyId, client_model: r.clientModel, endpoint: r.endpoint, stream: r.stream, key_prefix: r.keyPrefix ?? null,
      });
    }
  });

  it('stores a row without detail as NULL on the first write and on a replay alike', async () => {
    const { store } = db();
    const project = freshProject();
    const first = ledgerRow({ project, detail: undefined });
    const later = ledgerRow({ project, detail: undefined });
    expect(await writeUsageBatch(store, [first])).toBe(1);
    // `first` again makes this batch a replay: it goes through the ON CONFLICT statement.
    expect(await writeUsageBatch(store, [first, later])).toBe(1);
    const { rows } = await store.query('SELECT detail IS NULL AS none FROM usage_events WHERE project = $1', [project]);
    expect(rows).toEqual([{ none: true }, { none: true }]);
  });

  it('rolls up only the new rows of a batch that is partly a replay, whichever path each batch took', async () => {
    const { store } = db();
    const project = freshProject();
    const rows = Array.from({ length: 40 }, (_, i) => ledgerRow({ project, occurredAt: T0 + i * 1000, input: i, costPoints: `0.${i}` }));
    expect(await writeUsageBatch(store, rows.slice(0, 15))).toBe(15);
    expect(await writeUsageBatch(store, rows.slice(10, 30))).toBe(15);
    expect(await writeUsageBatch(store, rows)).toBe(10);
    const { rows: hourly } = await store.query('SELECT input, request_count, cost_points FROM usage_hourly WHERE project = $1', [project]);
    const { rows: raw } = await store.query('SELECT sum(input) AS input, count(*) AS request_count, sum(cost_points) AS cost_points FROM usage_events WHERE project = $1', [project]);
    expect(hourly).toEqual(raw);
    expect(hourly).toMatchObject([{ input: '780', request_count: '40' }]);
  });

  it('stores what jsonb cannot hold (NUL, a lone surrogate) as U+FFFD instead of losing the row', async () => {
    const { store } = db();
    const project = freshProject();
    const odd = ledgerRow({ project, clientModel: 'm\uD800', detail: { 'k\u0000': ['x\u0000y', 'z\uDC00', 1] } });
    const plain = ledgerRow({ project, detail: { note: 'a\\u0000 is just text here' } });
    expect(await writeUsageBatch(store, [odd, plain])).toBe(2);
    const { rows } = await store.query<{ request_id: string; client_model: string; detail: unknown }>(
      'SELECT request_id, client_model, detail FROM usage_events WHERE project = $1',
      [project],
    );
    const byId = Object.fromEntries(rows.map((r) => [r.request_id, r]));
    expect(byId[odd.requestId]).toMatchObject({ client_model: 'm\uFFFD', detail: { 'k\uFFFD': ['x\uFFFDy', 'z\uFFFD', 1] } });
    expect(byId[plain.requestId].detail).toEqual({ note: 'a\\u0000 is just text here' });
  });

  it('keeps tabs, line breaks, backslashes and \\N in text and detail as they were', async () => {
    const { store } = db();
    const project = freshProject();
    const odd = 'a\tb\nc\rd\\e \\N \\t';
    const row = ledgerRow({ project, clientModel: odd, keyPrefix: '\\N', detail: { [odd]: [odd, '\\N'] } });
    expect(await writeUsageBatch(store, [row])).toBe(1);
    const { rows } = await store.query<{ client_model: string; key_prefix: string | null; detail: unknown }>(
      'SELECT client_model, key_prefix, detail FROM usage_events WHERE request_id = $1',
      [row.requestId],
    );
    expect(rows).toEqual([{ client_model: odd, key_prefix: '\\N', detail: { [odd]: [odd, '\\N'] } }]);
  });

  it('stores the same values whichever way a batch travels: fresh (binary COPY, or COPY text) or the statement', async () => {
    const { store } = db();
    const project = freshProject();
    const big = `${'1'.repeat(40)}.${'9'.repeat(30)}`;
    const variants: Partial<LedgerRow>[] = [
      { costPoints: '0', originalCost: '0.00' },
      { costPoints: '0.5', originalCost: '0.50' },
      { costPoints: '0.000000000001', originalCost: '123456789.1234500' },
      { costPoints: '10000', originalCost: '99990000.00010000' },
      { costPoints: big, originalCost: '007.10' },
      { input: 2 ** 40, output: 12_345_678_901, cacheRead: 7, explicitCache: true, reasoning: 1, artifacts: 2, cacheWrite: 3 },
      { occurredAt: T0 + 0.9, stream: true, estimated: true },
      { occurredAt: -1.5 },
      { occurredAt: -62_135_596_800_000 + 0.7 },
      { detail: null, attempts: 32767, status: 503, latencyMs: 2147483647, keyPrefix: 'sk_é' },
      { detail: { s: 'é😀\\ "q"', n: [1.5, -0, 1e21, null, true], o: {} }, status: -32768, latencyMs: 0 },
      { clientModel: 'tab\tnl\nbs\\ é😀', upstreamModel: '', organization: 'org-x', attempts: undefined },
    ];
    // Money binary COPY does not take but the writer sums (that batch goes fresh as COPY text), and money the writer
    // cannot sum (the statement).
    const textFresh: Partial<LedgerRow>[] = [{ costPoints: '1e-7', originalCost: '1e-7' }, { costPoints: '25E-2', originalCost: '1e+2' }];
    const textOnly: Partial<LedgerRow>[] = [{ costPoints: '1e-7', originalCost: '.5' }, { costPoints: '1.', originalCost: '+2' }, { costPoints: '-0.5', originalCost: '-0.00' }];
    const rows = (prefix: string, vs: Partial<LedgerRow>[], from = 0) =>
      vs.map((v, i) => ledgerRow({ project, requestId: `${prefix}-${String(from + i).padStart(2, '0')}`, occurredAt: T0 + from + i, ...v }));
    const formats: string[] = [];
    const spy: Store = {
      ...store,
      copyQuery: store.copyQuery && (<T>(script: string, data: string | Uint8Array) => (formats.push(typeof data), store.copyQuery!<T>(script, data))),
      copyIn: store.copyIn && ((script: string, data: string | Uint8Array) => (formats.push(typeof data), store.copyIn!(script, data))),
    };
    expect(await writeUsageBatch(spy, rows(`${project}-fresh`, variants))).toBe(variants.length);
    expect(await writeUsageBatch(spy, rows(`${project}-fresh`, textFresh, variants.length))).toBe(textFresh.length);
    expect(await writeUsageBatch(spy, rows(`${project}-fresh`, textOnly, variants.length + textFresh.length))).toBe(textOnly.length);
    // Fresh: binary COPY data, then COPY text; the statement stages COPY text on PGlite, a jsonb parameter on Postgres.
    expect(formats).toEqual(store.kind === 'pglite' ? ['object', 'string', 'string'] : ['object', 'string']);
    // In a transaction every batch takes the statement.
    const all = [...variants, ...textFresh, ...textOnly];
    expect(await store.transaction((q) => writeUsageBatch(q, rows(`${project}-stmt`, all)))).toBe(all.length);
    const read = async (prefix: string) => {
      const { rows: out } = await store.query<{ r: string }>(
        `SELECT substr(request_id, length($1) + 1) || ' ' || (e.*)::text AS r FROM usage_events e
         WHERE request_id LIKE $1 || '%' ORDER BY request_id`,
        [prefix],
      );
      return out.map((o) => o.r.replace(prefix, ''));
    };
    const a = await read(`${project}-fresh`);
    expect(a).toHaveLength(all.length);
    expect(a).toEqual(await read(`${project}-stmt`));
  });

  it('skips a replay inside a transaction too, which it must not abort', async () => {
    const { store } = db();
    const project = freshProject();
    const row = ledgerRow({ project, occurredAt: T0 });
    const written = await store.transaction(async (q) => [await writeUsageBatch(q, [row]), await writeUsageBatch(q, [row, { ...row, requestId: `${row.requestId}-2` }])]);
    expect(written).toEqual([1, 1]);
    expect(await writeUsageBatch(store, [row])).toBe(0);
    const { rows } = await store.query<{ n: string }>('SELECT sum(request_count)::text AS n FROM usage_hourly WHERE project = $1', [project]);
    expect(rows[0].n).toBe('2');
  });

  it('buckets by UTC hour whatever the session time zone', async () => {
    const { store } = db();
    const project = freshProject();
    await store.transaction(async (q) => {
      await q.query("SET LOCAL TIME ZONE 'Asia/Kolkata'"); // +05:30: a local hour is not a UTC hour
      await writeUsageBatch(q, [ledgerRow({ project, occurredAt: Date.UTC(2025, 0, 1, 10, 45) })]);
    });
    const { rows } = await store.query<{ hour: Date }>('SELECT hour FROM usage_hourly WHERE project = $1', [project]);
    expect(rows[0].hour.toISOString()).toBe('2025-01-01T10:00:00.000Z');
  });

  it('stores instants past 2^53 µs from 1970 to the millisecond on every path, and buckets them in their own hour', async () => {
    const { store } = db();
    const project = freshProject();
    // 9999-12-31T23:59:59.999Z and 2300-06-01T12:34:56.789Z: microseconds past 2^53, where float arithmetic rounds.
    const instants = [Date.UTC(9999, 11, 31, 23, 59, 59, 999), Date.UTC(2300, 5, 1, 12, 34, 56, 789)];
    const rows = (tag: string) => instants.map((occurredAt, i) => ledgerRow({ project, requestId: `${project}-${tag}-${i}`, occurredAt }));
    expect(await writeUsageBatch(store, rows('fresh'))).toBe(2);
    expect(await store.transaction((q) => writeUsageBatch(q, rows('stmt')))).toBe(2);
    const { rows: stored } = await store.query<{ id: string; at: string }>(
      `SELECT request_id AS id, to_char(occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US') AS at
       FROM usage_events WHERE project = $1 ORDER BY request_id`,
      [project],
    );
    const want = ['9999-12-31T23:59:59.999000', '2300-06-01T12:34:56.789000'];
    expect(stored).toEqual([
      { id: `${project}-fresh-0`, at: want[0] }, { id: `${project}-fresh-1`, at: want[1] },
      { id: `${project}-stmt-0`, at: want[0] }, { id: `${project}-stmt-1`, at: want[1] },
    ]);
    const { rows: hours } = await store.query<{ hour: string; n: string }>(
      `SELECT to_char(hour AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US') AS hour, request_count::text AS n
       FROM usage_hourly WHERE project = $1 ORDER BY hour DESC`,
      [project],
    );
    expect(hours).toEqual([{ hour: '9999-12-31T23:00:00.000000', n: '2' }, { hour: '2300-06-01T12:00:00.000000', n: '2' }]);
  });

  it('sums money exactly: 20,000 rows of 0.0000001 make 0.002', async () => {
    const { store } = db();
    const project = freshProject();
    const rows = Array.from({ length: 20_000 }, () => ledgerRow({ project, costPoints: '0.0000001', originalCost: '0.00000015' }));
    for (let i = 0; i < rows.length; i += 2000) await writeUsageBatch(store, rows.slice(i, i + 2000));
    const { rows: sums } = await store.query<{ c: string; o: string }>(
      'SELECT sum(cost_points)::text AS c, sum(original_cost)::text AS o FROM usage_hourly WHERE project = $1',
      [project],
    );
    expect(sums[0]).toEqual({ c: '0.0020000', o: '0.00300000' });
  });

  it('measures insert throughput', async () => {
    const { store } = db();
    const project = freshProject();
    const total = 40_000;
    const batch = 2000;
    const rows = Array.from({ length: total }, (_, i) =>
      ledgerRow({ project, occurredAt: T0 + i * 1000, clientModel: `m${i % 8}`, costPoints: '0.0000125' }),
    );
    const started = performance.now();
    for (let i = 0; i < total; i += batch) await writeUsageBatch(store, rows.slice(i, i + batch));
    const seconds = (performance.now() - started) / 1000;
    console.log(`[ledger writer] ${backend}: ${total} rows in batches of ${batch}: ${Math.round(total / seconds)} rows/s`);
    expect(await countRows(store, 'usage_events', 'project = $1', [project])).toBe(total);
  });
});
