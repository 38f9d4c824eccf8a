// Wires one gateway process: snapshot source, store, ledger, upstream client, HTTP server, graceful drain.
import type { FastifyInstance } from 'fastify';
import { join } from 'node:path';
import { pino } from 'pino';
import type { Logger } from 'pino';
import { GatewayError } from './errors.ts';
import { createLedger } from './ledger/ledger.ts';
import type { Ledger } from './ledger/ledger.ts';
import type { LedgerRow } from './ledger/row.ts';
import type { GatewayContext } from './routes/context.ts';
import { buildServer } from './server.ts';
import { watchSnapshotFile } from './snapshot/file-source.ts';
import { SnapshotHolder } from './snapshot/holder.ts';
import { openStore, resolveDataDir } from './store/store.ts';
import type { Store } from './store/store.ts';
import { UpstreamClient } from './upstream/client.ts';

export interface GatewayOptions {
  /** Standalone config file (YAML or JSON). */
  configPath: string;
  databaseUrl?: string;
  dataDir?: string;
  /** An already-open store (tests); the gateway does not close it. */
  store?: Store;
  port?: number;
  host?: string;
  maxBodyBytes?: number;
  maxJournalBytes?: number;
  flushIntervalMs?: number;
  logger?: boolean;
  logLevel?: string;
}

export interface RunningGateway {
  app: FastifyInstance;
  url: string;
  holder: SnapshotHolder;
  ledger: Ledger;
  store: Store;
  /** Readiness off, in-flight requests finish, the journal flushes, connections close. */
  close(): Promise<void>;
}

export const DEFAULT_MAX_BODY_BYTES = 32 * 1024 * 1024;

export async function startGateway(opts: GatewayOptions): Promise<RunningGateway> {
  const dataDir = resolveDataDir(opts.dataDir);
  const holder = new SnapshotHolder();
  const ownsStore = opts.store === undefined;
  const store = opts.store ?? (await openStore({ databaseUrl: opts.databaseUrl, dataDir }));
  const log: Logger = createLogger(opts);
  const ledger = createLedger({
    store,
    logger: log,
    journalDir: join(dataDir, 'journal'),
    maxJournalBytes: opts.maxJournalBytes,
    flushIntervalMs: opts.flushIntervalMs,
  });
  const upstream = new UpstreamClient();
  const draining = { value: false };
  const ctx: GatewayContext = {
    holder,
    draining,
    relay: {
      upstream,
      ledger: {
        record(row: LedgerRow) {
          try {
            ledger.record(row);
          } catch (err) {
            throw new GatewayError('ledger_unavailable', `Usage could not be recorded (${(err as Error).message}); the answer is withheld.`);
          }
        },
      },
    },
    ledger,
    databaseReachable: async () => {
      try {
        await store.query('SELECT 1');
        return true;
      } catch {
        return false;
      }
    },
  };
  const app = buildServer(ctx, { maxBodyBytes: opts.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES, logger: log });
  let watcher: { close(): void };
  try {
    watcher = watchSnapshotFile(opts.configPath, holder, app.log);
  } catch (err) {
    await ledger.close();
    if (ownsStore) await store.close();
    throw err;
  }
  const url = await app.listen({ port: opts.port ?? 8080, host: opts.host ?? '0.0.0.0' });
  let closing: Promise<void> | undefined;
  const close = (): Promise<void> =>
    (closing ??= (async () => {
      draining.value = true;
      watcher.close();
      await app.close();
      await upstream.close();
      await ledger.close();
      if (ownsStore) await store.close();
    })());
  return { app, url: url.replace('0.0.0.0', '127.0.0.1'), holder, ledger, store, close };
}

/** One pino logger for the server and the ledger; keys and credentials are redacted wherever they could appear. */
function createLogger(opts: GatewayOptions): Logger {
  return pino({
    level: opts.logger === false ? 'silent' : (opts.logLevel ?? process.env.LOG_LEVEL ?? 'info'),
    redact: ['req.headers.authorization', 'req.headers["x-api-key"]', 'req.headers["x-goog-api-key"]'],
  });
}
