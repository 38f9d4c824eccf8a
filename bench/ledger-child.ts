// The ledger measurement in a process of its own, as the gateway runs its ledger: the bench process has by then
// held thousands of client sockets and histograms, and its heap must not weigh on the rows/s measured here.
//   node bench/ledger-child.ts --rows N --journal-dir DIR (--database-url URL | --data-dir DIR)
// Prints one LedgerThroughput as JSON on stdout.
import { parseArgs } from 'node:util';
import { openStore } from '../gateway/store/open.ts';
import { ledgerThroughput } from './ledger-throughput.ts';

const { values } = parseArgs({ options: { rows: { type: 'string' }, 'journal-dir': { type: 'string' }, 'database-url': { type: 'string' }, 'data-dir': { type: 'string' } } });
const databaseUrl = values['database-url'];
const store = await openStore(databaseUrl ? { databaseUrl } : { dataDir: values['data-dir'] });
try {
  const result = await ledgerThroughput(store, { backend: databaseUrl ? 'postgres' : 'pglite', rows: Number(values.rows), journalDir: values['journal-dir']! });
  process.stdout.write(JSON.stringify(result) + '\n');
} finally {
  await store.close();
}
