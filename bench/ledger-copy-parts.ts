// What the Postgres backend spends a ledger row on, part by part, COPY text against binary: the same batches the
// writer would send, COPYed by one backend into variants of the day partition (no index, the key only, both indexes,
// both indexes and the partition's rows first), into the partition itself, and as the whole fresh-batch script
// (with the rollups), each format alternately first. Backend CPU from /proc, per row, per batch.
//   node bench/ledger-copy-parts.ts --text-from DIR [--batches 20] [--fill 50] [--one-bucket]
// --fill: batches written into the partition first (and copied into the filled variant).
// --text-from: a tree whose writer sends COPY text to Postgres (before binary COPY there); this tree's sends binary.
// The script's COPY is captured from each writer by a store whose copyIn keeps it instead of sending it.
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import type { LedgerRow } from '../gateway/ledger/row.ts';
import { writeUsageBatch } from '../gateway/ledger/writer.ts';
import { openStore } from '../gateway/store/open.ts';
import { openPgStore } from '../gateway/store/pg-store.ts';
import type { Store } from '../gateway/store/store.ts';
import { createBenchDatabase, DEFAULT_POSTGRES_URL } from './databases.ts';
import { benchRow } from './ledger-throughput.ts';
import { cpuSecondsFine } from './proc.ts';
import { median } from './stats.ts';

const { values } = parseArgs({
  options: {
    'text-from': { type: 'string' },
    batches: { type: 'string', default: '20' },
    fill: { type: 'string', default: '50' },
    'one-bucket': { type: 'boolean', default: false },
  },
});
if (!values['text-from']) throw new Error('--text-from DIR is required');
const textWriter = ((await import(join(resolve(values['text-from']), 'gateway/ledger/writer.ts'))) as { writeUsageBatch: typeof writeUsageBatch }).writeUsageBatch;

interface Sent {
  script: string;
  data: string | Uint8Array;
}
const CAPTURED = 'captured';

/** What `write` would send for `rows` as a fresh batch. */
async function capture(store: Store, write: typeof writeUsageBatch, rows: LedgerRow[]): Promise<Sent> {
  let sent: Sent | undefined;
  const keep: Store = {
    ...store,
    async copyIn(script, data) {
      sent = { script, data };
      throw Object.assign(new Error(CAPTURED), { code: CAPTURED });
    },
  };
  await write(keep, rows).catch((err: { code?: string }) => {
    if (err.code !== CAPTURED) throw err;
  });
  if (sent === undefined) throw new Error('the writer sent no COPY');
  return sent;
}

const db = await createBenchDatabase(DEFAULT_POSTGRES_URL, 'copyparts');
await (await openStore({ databaseUrl: db.url })).close(); // migrated
// One connection: every COPY runs on the backend measured.
const store = openPgStore(db.url, { max: 1 });
try {
  const { rows: [{ pid }] } = await store.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
  const now = Date.now();
  let serial = 0;
  const batch = (suffix: string) =>
    Array.from({ length: 2000 }, (_, i) => {
      const row = benchRow(`p${serial}${suffix}-${now}`, i, now - ((i * 37) % 600_000));
      return values['one-bucket'] ? { ...row, organization: 'org-1', project: 'proj-1', apiKeyId: 'key-1', clientModel: 'gpt-4o', modelId: 'gpt-4o', upstreamModel: 'gpt-4o' } : row;
    });
  // The partition the writer COPYs into, filled first.
  const partition = /^COPY (\S+)/.exec((await capture(store, writeUsageBatch, batch('probe'))).script)![1];
  for (let k = 0; k < Number(values.fill); k++, serial++) await writeUsageBatch(store, batch('fill'));
  const tables = ['bare', 'key', 'indexes', 'filled'];
  for (const t of tables) {
    for (const f of ['text', 'binary']) {
      const name = `parts_${t}_${f}`;
      await store.exec(`CREATE TABLE ${name} (LIKE ${partition} INCLUDING DEFAULTS${t === 'indexes' || t === 'filled' ? ' INCLUDING INDEXES' : ''})`);
      if (t === 'key') await store.exec(`ALTER TABLE ${name} ADD PRIMARY KEY (occurred_at, request_id)`);
      if (t === 'filled') await store.exec(`INSERT INTO ${name} SELECT * FROM ${partition}; ANALYZE ${name}`);
    }
  }
  const cpu = new Map<string, number[]>();
  const batches = Number(values.batches);
  for (let k = 0; k < batches; k++, serial++) {
    const jobs: [string, string, string | Uint8Array][] = [];
    // Each target its own request ids: the partition takes four copies of the batch.
    for (const [format, write] of [['text', textWriter], ['binary', writeUsageBatch]] as const) {
      const sent = await capture(store, write, batch(format[0]));
      if ((typeof sent.data === 'string') !== (format === 'text')) throw new Error(`--text-from's writer did not send COPY text`);
      const copy = sent.script.slice(0, sent.script.indexOf(';') + 1);
      for (const t of tables) jobs.push([`${t} ${format}`, copy.replace(partition, `parts_${t}_${format}`), sent.data]);
      const own = await capture(store, write, batch(format[0] + 'p'));
      jobs.push([`partition ${format}`, own.script.slice(0, own.script.indexOf(';') + 1), own.data], [`script ${format}`, sent.script, sent.data]);
    }
    for (const [name, script, data] of k % 2 === 0 ? jobs : [...jobs].reverse()) {
      const c0 = cpuSecondsFine(pid);
      await store.copyIn!(script, data);
      const list = cpu.get(name) ?? [];
      list.push(((cpuSecondsFine(pid) - c0) * 1e6) / 2000);
      cpu.set(name, list);
    }
  }
  console.log(`${batches} batches of 2,000 ${values['one-bucket'] ? 'one-bucket' : 'spread'} rows; backend CPU µs a row, median (quartiles), and binary/text per batch`);
  const quartile = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.floor(q * (xs.length - 1))];
  const table = [...tables, 'partition', 'script'].map((t) => {
    const [text, binary] = [cpu.get(`${t} text`)!, cpu.get(`${t} binary`)!];
    const show = (xs: number[]) => `${median(xs).toFixed(2)} (${quartile(xs, 0.25).toFixed(2)}–${quartile(xs, 0.75).toFixed(2)})`;
    return { target: t, text: show(text), binary: show(binary), ratio: median(binary.map((b, i) => b / text[i])).toFixed(3) };
  });
  console.table(table);
} finally {
  await store.close();
  await db.drop();
}
