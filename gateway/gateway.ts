// Wires one gateway process: snapshot source, store, ledger, upstream client, HTTP server, graceful drain.
import type { FastifyInstance } from 'fastify';
import { join } from 'node:path';
import { pino } from 'pino';
import type { DestinationStream, Logger } from 'pino';
import { createGovernor } from './governance/create.ts';
import type { RatesWhenDown } from './governance/redis-backend.ts';
import { createLedger } from './ledger/ledger.ts';
import type { Ledger } from './ledger/ledger.ts';
import { ledgerSink } from './ledger/sink.ts';
import type { GatewayContext } from './routes/context.ts';
import type { BodyTimeouts } from './http/framework-errors.ts';
import { buildServer } from './server.ts';
import { DEFAULT_HOST, listenError, probeListen } from './http/listen.ts';
import { watchSnapshotFile } from './snapshot/file-source.ts';
import { SnapshotHolder } from './snapshot/holder.ts';
import { openStore, resolveDataDir } from './store/open.ts';
import type { Store } from './store/store.ts';
import { UpstreamClient } from './upstream/client.ts';
import { InFlight } from './relay/in-flight.ts';
import { bufferedAccessLogger } from './telemetry/access-log.ts';
import { startAdminServer } from './admin/server.ts';
import { openApiJson } from './openapi/document.ts';
import type { AdminServer } from './admin/server.ts';
import type { AdminToken } from './admin/tokens.ts';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { observeUpstreams } from './resilience/metrics.ts';
import { defaultRegistry } from './resilience/registry.ts';
import type { HealthRegistry } from './resilience/health.ts';
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
  /** A store being opened by the caller (the CLI starts it early); the gateway owns it and closes it. */
  opening?: Promise<Store>;
  port?: number;
  /** Listen address; loopback unless told (the container and chart pass 0.0.0.0). */
  host?: string;
  maxBodyBytes?: number;
  /** Request body deadlines (default 30 s JSON, 5 min uploads). */
  bodyTimeouts?: Partial<BodyTimeouts>;
  /** Concurrent client connections this process accepts; more are refused at accept. */
  maxConnections?: number;
  /** Connections the kernel queues before the gateway accepts them (capped by net.core.somaxconn). */
  listenBacklog?: number;
  maxJournalBytes?: number;
  flushIntervalMs?: number;
  logger?: boolean;
  logLevel?: string;
  /** Where log lines go (default stdout); tests read the access log from here. */
  logDestination?: DestinationStream;
  /** Human-readable log lines (the CLI sets it when stdout is a terminal); JSON lines otherwise. */
  pretty?: boolean;
  /** Admin server with /metrics (docs/observability.md); false or absent: none. The CLI reads TOLLGATE_ADMIN_PORT. */
  adminPort?: number | false;
  adminHost?: string;
  /** Admin API tokens (docs/admin-api.md); the CLI reads TOLLGATE_ADMIN_TOKENS(_FILE). None: /admin/v1 answers 503. */
  adminTokens?: readonly AdminToken[];
  /** The built console served on the admin port (default: console/dist beside the gateway, when it exists). */
  adminConsoleDir?: string;
  /** Shared rate-limit and budget counters (docs/limits.md); absent: in-process counters. The CLI reads REDIS_URL. */
  redisUrl?: string;
  /** Prefix of every Redis key (default "tollgate:"). */
  redisPrefix?: string;
  /** Longest wait for a Redis answer before a request is served from the local view (default 250 ms); TOLLGATE_REDIS_TIMEOUT_MS. */
  redisTimeoutMs?: number;
  /** Rates and concurrency while Redis is unreachable: a local per-pod limiter (default) or refuse. */
  ratesWhenRedisDown?: RatesWhenDown;
  /** How long a silent pod stays counted in Redis (default 15 s): its concurrency slots come back after it; TOLLGATE_REDIS_POD_TTL_MS. */
  redisPodTtlMs?: number;
  /** OTEL_* environment and, for tests, an injected span exporter. */
  telemetry?: Pick<TelemetryOptions, 'env' | 'spanExporter'>;
  /** Upstream target health (default: the process-wide registry); tests running several pods in one process give each its own. */
  health?: HealthRegistry;
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
  /** The admin server itself (its route list), when it runs. */
  admin?: AdminServer;
  /** The addresses actually bound, as `host:port`. */
  listening: { api: string; admin?: string };
  /**
   * Readiness off, in-flight requests finish, the journal flushes, connections close. With `drainMs`, requests
   * and streams still open after that long are cut (each still billed for what it relayed) so the journal flush
   * fits in the pod's termination grace period.
   */
  close(drainMs?: number): Promise<void>;
}

export { DEFAULT_HOST, ListenError } from './http/listen.ts';
/** Where the build puts the console (console/dist at the repository root). */
export const DEFAULT_CONSOLE_DIR = fileURLToPath(new URL('../console/dist/', import.meta.url));

export const DEFAULT_MAX_BODY_BYTES = 32 * 1024 * 1024;
// Node's default (511) overflows when thousands of streaming clients connect at once and the event loop is busy:
// the kernel then drops handshakes and clients see resets. 4096 is also the usual somaxconn cap.
export const DEFAULT_LISTEN_BACKLOG = 4096;
// Above the 10,000 concurrent streams the benchmarks hold, below the default open-file limits of most hosts.
export const DEFAULT_MAX_CONNECTIONS = 16_384;

export async function startGateway(opts: GatewayOptions): Promise<RunningGateway> {
  // A busy port is found before the store (unless the caller is already opening it), journal and watcher open (slow
  // on a loaded machine); the real listen below still reports a port taken in between.
  if (opts.port) {
    try {
      await probeListen(opts.host ?? DEFAULT_HOST, opts.port);
    } catch (err) {
      await opts.opening?.then((s) => s.close()).catch(() => {});
      throw err;
    }
  }
  const dataDir = resolveDataDir(opts.dataDir);
  const holder = new SnapshotHolder();
  const ownsStore = opts.store === undefined;
  const store = opts.store ?? (await (opts.opening ?? openStore({ databaseUrl: opts.databaseUrl, dataDir })));
  // Loaded only for a terminal: a container's JSON logs never pay for the formatter.
  const pretty = opts.pretty && !opts.logDestination ? (await import('pino-pretty')).default({ colorize: true, sync: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' }) : undefined;
  const log: Logger = createLogger({ ...opts, logDestination: opts.logDestination ?? pretty });
  // Access lines go to their own buffered stdout writer unless a destination was given (tests read it synchronously).
  const accessLog = opts.logDestination || pretty || opts.logger === false ? log : bufferedAccessLogger(log.level);
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
  const health = opts.health ?? defaultRegistry;
  observeUpstreams(telemetry.meter, health);
  const upstream = new UpstreamClient();
  const inflight = new InFlight();
  const governor = await createGovernor({ redisUrl: opts.redisUrl, redisPrefix: opts.redisPrefix, ratesWhenDown: opts.ratesWhenRedisDown, redisTimeoutMs: opts.redisTimeoutMs, redisPodTtlMs: opts.redisPodTtlMs, log, store, holder, meter: telemetry.meter });
  const draining = { value: false };
  const ctx: GatewayContext = {
    holder,
    draining,
    relay: {
      upstream,
      health,
      credentials: function* () {
        for (const p of holder.current?.providers.values() ?? []) yield p.credential;
      },
      governor,
      ledger: ledgerSink(ledger),
      inflight,
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
  const app = buildServer(ctx, { maxBodyBytes: opts.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES, logger: log, telemetry, bodyTimeouts: opts.bodyTimeouts });
  app.server.maxConnections = opts.maxConnections ?? DEFAULT_MAX_CONNECTIONS;
  let watcher: { close(): unknown };
  let reload: (() => void) | undefined;
  let kube: KubeSource | undefined;
  try {
    if (opts.kubernetes) {
      // Loaded only in cluster mode so standalone start-up never pays for the Kubernetes client.
      const { startKubeSource } = await import('./snapshot/kube-source.ts');
      watcher = kube = startKubeSource({ ejected: () => health.ejected(), ...opts.kubernetes, holder, log: app.log, spendReport: () => governor.spendReport });
    } else {
      if (!opts.configPath) throw new Error('a config file or cluster mode is required');
      const file = watchSnapshotFile(opts.configPath, holder, app.log);
      watcher = file;
      reload = file.reload;
    }
  } catch (err) {
    await governor.close();
    await ledger.close();
    if (ownsStore) await store.close();
    await telemetry.shutdown();
    throw err;
  }
  const port = opts.port ?? 8080;
  const host = opts.host ?? DEFAULT_HOST;
  try {
    await app.listen({ port, host, backlog: opts.listenBacklog ?? DEFAULT_LISTEN_BACKLOG });
  } catch (err) {
    // Everything opened above closes, so the process can exit instead of hanging on a watcher or the journal.
    await watcher.close();
    await app.close().catch(() => undefined);
    await ledger.close();
    if (ownsStore) await store.close();
    await telemetry.shutdown();
    throw listenError(err, host, port);
  }
  const upstreams = () => health.view(holder.current?.generation);
  const admin =
    opts.adminPort === undefined || opts.adminPort === false
      ? undefined
      : await startAdminServer({
          port: opts.adminPort,
          host: opts.adminHost,
          prometheus: telemetry.prometheus,
          log,
          upstreams,
          admin: { tokens: opts.adminTokens ?? [], holder, ledger, mode: opts.kubernetes ? 'kubernetes' : 'standalone', configPath: opts.kubernetes ? undefined : opts.configPath, reload, upstreams, governor },
          consoleDir: opts.adminConsoleDir ?? (existsSync(DEFAULT_CONSOLE_DIR) ? DEFAULT_CONSOLE_DIR : undefined),
          openapi: openApiJson,
        });
  let closing: Promise<void> | undefined;
  const close = (drainMs?: number): Promise<void> =>
    (closing ??= (async () => {
      draining.value = true;
      await watcher.close();
      const closed = app.close();
      let late = false;
      if (drainMs !== undefined && !(await within(closed, drainMs))) {
        late = true;
        log.warn({ drainMs }, 'drain budget spent: cutting the requests and streams still open');
        app.server.closeAllConnections();
        await within(closed, 1000);
      } else await closed;
      if (late) {
        // Past the budget every relay still open (its client cut above, or gone before and reading on to bill) has
        // its upstream read aborted and records what it relayed, estimated; the journal flush below then holds it.
        inflight.cut();
        if (!(await inflight.settled(1000))) log.error({ open: inflight.size }, 'relays still open after the cut: their rows may be missing');
        if (!(await within(upstream.close(), 500))) await upstream.destroy().catch(() => {});
      } else await upstream.close();
      await governor.close();
      await ledger.close();
      if (ownsStore) await store.close();
      await admin?.close();
      await telemetry.shutdown();
    })());
  const bound = app.server.address() as { address: string; family: string; port: number };
  const api = `${bound.family === 'IPv6' ? `[${bound.address}]` : bound.address}:${bound.port}`;
  // A wildcard bind is reachable on loopback too; clients on this machine get a URL that works.
  const local = bound.address === '0.0.0.0' || bound.address === '::' ? `127.0.0.1:${bound.port}` : api;
  return { app, url: `http://${local}`, holder, ledger, store, kube, telemetry, adminUrl: admin?.url, admin, listening: { api, admin: admin?.bound }, close };
}

/** Resolves true once `p` settles within `ms`, false when the time runs out first. */
async function within(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const done = await Promise.race([p.then(() => true, () => true), new Promise<boolean>((r) => (timer = setTimeout(() => r(false), ms)))]);
  clearTimeout(timer);
  return done;
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
