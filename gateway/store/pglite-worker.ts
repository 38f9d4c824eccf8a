// The worker thread that owns the embedded PGlite (see pglite-store.ts): PGlite runs each statement synchronously in
// WebAssembly, so here it blocks this thread, not the one serving requests.
import { parentPort, workerData } from 'node:worker_threads';
import { PGlite, types } from '@electric-sql/pglite';
import type { PgliteReply, PgliteRequest } from './pglite-protocol.ts';
import { errorFields } from './pglite-protocol.ts';

const port = parentPort!;
const { dataDir } = workerData as { dataDir: string | undefined };

try {
  // PGlite turns int8 into number/BigInt; keep it a string as pg does, so callers see one shape.
  const db = await PGlite.create({ dataDir, parsers: { [types.INT8]: (v: string) => v } });
  port.on('message', (m: PgliteRequest) => void serve(db, m));
  port.postMessage({ id: 0, ok: true } satisfies PgliteReply);
} catch (err) {
  port.postMessage({ id: 0, ok: false, error: errorFields(err) } satisfies PgliteReply);
}

async function serve(db: PGlite, m: PgliteRequest): Promise<void> {
  let reply: PgliteReply;
  try {
    if (m.op === 'query') reply = { id: m.id, ok: true, rows: (await db.query(m.sql, m.params)).rows };
    else if (m.op === 'exec') {
      await db.exec(m.sql);
      reply = { id: m.id, ok: true };
    } else {
      if (!db.closed) await db.close();
      reply = { id: m.id, ok: true };
    }
  } catch (err) {
    reply = { id: m.id, ok: false, error: errorFields(err) };
  }
  port.postMessage(reply);
  if (m.op === 'close') port.close();
}
