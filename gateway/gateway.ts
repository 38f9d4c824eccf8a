// Wires one gateway process: snapshot source, store, ledger, upstream client, HTTP server, graceful drain.
import type { FastifyInstance } from 'fastify';
import { join } from 'node:path';
import { pino } from 'pino';
import type { DestinationStream, Logger } from 'pino';
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
import { bufferedAccessLogger } from './telemetry/access-log.ts';
import { startAdminServer } from './telemetry/admin-server.ts';
import { observeUpstreams } from './resilience/metrics.ts';
import { defaultRegistry } from './resilience/registry.ts';
import { createTelemetry } from './telemetry/telemetry.ts';
import type { Telemetry, TelemetryOptions } from './telemetry/telemetry.ts';
import type { KubeSource, KubeSourceOptions } from './snapshot/kube-source.ts';

export interface GatewayOptions {
  /** Standalone config file (YAML or JSON). */
  configPath?: string;
  /** Cluster mode instead: the snapshot comes from the operator's Secrets through the Kubernetes API. */
  kubernetes?: Omit<KubeSourceOptions, 'holder' | 'log'>;
  databaseUrl?: string;
  dataDir?: string;
  /** An already-open store (tests); the gateway does not close it. */
  store?: Store;
  port?: number;
  host?: string;
  maxBodyBytes?: number;
  /** Connections the kernel queues before the gateway accepts them (capped by net.core.somaxconn). */
  listenBacklog?: number;
  maxJournalBytes?: number;
  flushIntervalMs?: number;
  logger?: boolean;
  logLevel?: string;
  /** Where log lines go (default stdout); tests read the access log from here. */
  logDestination?: DestinationStream;
  /** Admin server with /metrics (docs/observability.md); false or absent: none. The CLI reads TOLLGATE_ADMIN_PORT. */
  adminPort?: number | false;
  adminHost?: string;
  /** OTEL_* environment and, for tests, an injected span exporter. */
  telemetry?: Pick<TelemetryOptions, 'env' | 'spanExporter'>;
}

export interface RunningGateway {
  app: FastifyInstance;
  url: string;
  holder: SnapshotHolder;
  ledger: Ledger;
  store: Store;
  /** Cluster mode only. */
  kube?: KubeSource;
  telemetry: Telemetry;
  /** The admin server's base URL (GET /metrics), when it runs. */
  adminUrl?: string;
  /** Readiness off, in-flight requests finish, the journal flushes, connections close. */
  close(): Promise<void>;
}

export const DEFAULT_MAX_BODY_BYTES = 32 * 1024 * 1024;
// Node's default (511) overflows when thousands of streaming clients connect at once and the event loop is busy:
// the kernel then drops handshakes and clients see resets. 4096 is also the usual somaxconn cap.
export const DEFAULT_LISTEN_BACKLOG = 4096;

export async function startGateway(opts: GatewayOptions): Promise<RunningGateway> {
  const dataDir = resolveDataDir(opts.dataDir);
  const holder = new SnapshotHolder();
  const ownsStore = opts.store === undefined;
  const store = opts.store ?? (await openStore({ databaseUrl: opts.databaseUrl, dataDir }));
  const log: Logger = createLogger(opts);
  // Access lines go to their own buffered stdout writer unless a destination was given (tests read it synchronously).
  const accessLog = opts.logDestination || opts.logger === false ? log : bufferedAccessLogger(log.level);
  const telemetry = await createTelemetry({ ...opts.telemetry, logger: accessLog });
  const ledger = createLedger({
    store,
    logger: log,
    journalDir: join(dataDir, 'journal'),
    maxJournalBytes: opts.maxJournalBytes,
    flushIntervalMs: opts.flushIntervalMs,
    onCommit: telemetry.ledgerCommitted,
  });
  telemetry.observeLedger(ledger);
  telemetry.observeSnapshot(holder);
  observeUpstreams(telemetry.meter, defaultRegistry);
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
  const app = buildServer(ctx, { maxBodyBytes: opts.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES, logger: log, telemetry });
  let watcher: { close(): unknown };
  let kube: KubeSource | undefined;
  try {
    if (opts.kubernetes) {
      // Loaded only in cluster mode so standalone start-up never pays for the Kubernetes client.
      const { startKubeSource } = await import('./snapshot/kube-source.ts');
      watcher = kube = startKubeSource({ ...opts.kubernetes, holder, log: app.log });
    } else {
      if (!opts.configPath) throw new Error('a config file or cluster mode is required');
      watcher = watchSnapshotFile(opts.configPath, holder, app.log);
    }
  } catch (err) {
    await ledger.close();
    if (ownsStore) await store.close();
    throw err;
  }
  const url = await app.listen({ port: opts.port ?? 8080, host: opts.host ?? '0.0.0.0', backlog: opts.listenBacklog ?? DEFAULT_LISTEN_BACKLOG });
  const admin = opts.adminPort === undefined || opts.adminPort === false ? undefined : await startAdminServer({ port: opts.adminPort, host: opts.adminHost, prometheus: telemetry.prometheus, log, upstreams: () => defaultRegistry.view(holder.current?.generation) });
  let closing: Promise<void> | undefined;
  const close = (): Promise<void> =>
    (closing ??= (async () => {
      draining.value = true;
      await watcher.close();
      await app.close();
      await upstream.close();
      await ledger.close();
      if (ownsStore) await store.close();
      await admin?.close();
      await telemetry.shutdown();
    })());
  return { app, url: url.replace('0.0.0.0', '127.0.0.1'), holder, ledger, store, kube, telemetry, adminUrl: admin?.url, close };
}

/** One pino logger for the server and the ledger; keys and credentials are redacted wherever they could appear. */
function createLogger(opts: GatewayOptions): Logger {
  return pino(
    {
      level: opts.logger === false ? 'silent' : (opts.logLevel ?? process.env.LOG_LEVEL ?? 'info'),
      redact: ['req.headers.authorization', 'req.headers["x-api-key"]', 'req.headers["x-goog-api-key"]'],
    },
    opts.logDestination,
  );
}
