// Rows per second the ledger sustains into a store: end to end (record() into the journal, background
// writer into the database, flush) and the database statement alone (writeUsageBatch in 2,000-row batches).
import { randomBytes } from 'node:crypto';
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { createLedger } from '../gateway/ledger/ledger.ts';
import type { LedgerRow } from '../gateway/ledger/row.ts';
import { writeUsageBatch } from '../gateway/ledger/writer.ts';
import type { Store } from '../gateway/store/store.ts';

export interface LedgerThroughput {
  backend: string;
  rows: number;
  /** record() → journal → writer → committed, rows/s. */
  endToEnd: number;
  /** Time record() alone took per row on the request path, µs. */
  recordMicros: number;
  /** writeUsageBatch alone, rows/s. */
  statement: number;
  /** Rows found in the database afterwards (must equal 2 × rows). */
  stored: number;
  /** When the scenario ran several times (bench/run.ts): each run's end-to-end rows/s, in order; this is the median run. */
  runs?: number[];
  /** The machine's busy share (all cores) just before the first run, after the quiet wait. */
  busyBefore?: number;
}

const MODELS = ['gpt-4o-mini', 'gpt-4o', 'claude-sonnet-4-5', 'gemini-2.5-flash'];

/** A realistic row: ids, tokens, exact decimal cost, provider usage detail. */
export function benchRow(prefix: string, i: number, at: number): LedgerRow {
  const input = 200 + (i % 1800);
  const output = 20 + (i % 700);
  const cacheRead = i % 3 === 0 ? 128 : 0;
  const micros = input * 150_000 + output * 600_000 + cacheRead * 75_000; // prices × 1e6
  const cost = `0.${String(micros).padStart(12, '0')}`;
  return {
    requestId: `${prefix}-${i}`,
    occurredAt: at,
    organization: `org-${i % 10}`,
    project: `proj-${i % 50}`,
    apiKeyId: `key-${i % 50}`,
    clientModel: MODELS[i % MODELS.length],
    modelId: MODELS[i % MODELS.length],
    provider: 'bench',
    upstreamModel: MODELS[i % MODELS.length],
    endpoint: '/api/v1/chat/completions',
    stream: i % 2 === 0,
    input,
    output,
    cacheRead,
    cacheWrite: 0,
    reasoning: 0,
    artifacts: 0,
    explicitCache: false,
    estimated: false,
    costPoints: cost,
    originalCost: cost,
    detail: { prompt_tokens: input + cacheRead, completion_tokens: output, prompt_tokens_details: { cached_tokens: cacheRead } },
  };
}

const quiet = { info() {}, warn() {}, error() {} };

export async function ledgerThroughput(store: Store, opts: { backend: string; rows: number; journalDir: string }): Promise<LedgerThroughput> {
  const run = randomBytes(3).toString('hex');
  const now = Date.now();

  // End to end, as the gateway runs it: the request path only appends; the writer drains in the background.
  const ledger = createLedger({ store, journalDir: opts.journalDir, logger: quiet });
  const t0 = performance.now();
  let recordMs = 0;
  for (let i = 0; i < opts.rows; i++) {
    const r0 = performance.now();
    ledger.record(benchRow(`e2e-${run}`, i, now - (i % 3_600_000)));
    recordMs += performance.now() - r0;
    // Give the background writer the event loop now and then, as request handling would.
    if (i % 500 === 499) await yieldToLoop();
  }
  await ledger.flush();
  const endToEnd = opts.rows / ((performance.now() - t0) / 1000);
  await ledger.close();

  // The statement alone.
  const batch = 2000;
  let statementMs = 0;
  for (let i = 0; i < opts.rows; i += batch) {
    const rows: LedgerRow[] = [];
    for (let j = i; j < Math.min(opts.rows, i + batch); j++) rows.push(benchRow(`stmt-${run}`, j, now - (j % 3_600_000)));
    const s0 = performance.now();
    await writeUsageBatch(store, rows);
    statementMs += performance.now() - s0;
  }
  const statement = opts.rows / (statementMs / 1000);

  const { rows } = await store.query<{ n: string }>(`SELECT count(*) AS n FROM usage_events WHERE request_id LIKE $1 OR request_id LIKE $2`, [`e2e-${run}-%`, `stmt-${run}-%`]);
  return { backend: opts.backend, rows: opts.rows, endToEnd, recordMicros: (recordMs * 1000) / opts.rows, statement, stored: Number(rows[0].n) };
}
