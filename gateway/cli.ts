// tollgate command line: `start` runs the gateway; `keys create|list|revoke` manage keys in the standalone config file.
import { copyFileSync, existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { expiryFlag, intFlag, UsageError } from './cli-flags.ts';
import { missingCredentialsBlock } from './cli-notices.ts';
import type { GatewayOptions } from './gateway.ts';
import { createKey, listKeys, revokeKey } from './snapshot/config-keys.ts';
import { adminPortFromEnv } from './telemetry/config.ts';
import { loadAdminTokens } from './admin/tokens.ts';

const USAGE = `usage:
  tollgate start [--config FILE] [--port N] [--host ADDR] [--admin-host ADDR]
  tollgate start --kubernetes [--namespace NS]   (or TOLLGATE_MODE=kubernetes): snapshot from the operator's Secrets
  tollgate keys create --org ORG --project PROJECT [--name NAME] [--expires RFC3339] [--config FILE]
  tollgate keys list [--config FILE]
  tollgate keys revoke <KEY_ID|PREFIX> [--config FILE]

The config file is --config, else $TOLLGATE_CONFIG, else ./tollgate.yaml (copied from examples/tollgate.yaml the
first time, so key edits never touch the tracked example).
Both servers listen on 127.0.0.1 unless told: --host / TOLLGATE_HOST (API, port --port / PORT, default 8080) and
--admin-host / TOLLGATE_ADMIN_HOST (metrics, admin API and console, port TOLLGATE_ADMIN_PORT, default 9464; 0 or off:
none). Admin API tokens: TOLLGATE_ADMIN_TOKENS=name:read|write:token,… or TOLLGATE_ADMIN_TOKENS_FILE (docs/admin-api.md).
Environment: DATABASE_URL (else embedded PGlite in $TOLLGATE_DATA_DIR, default ./.tollgate), LOG_LEVEL,
LOG_FORMAT=json (JSON logs on a terminal too), TOLLGATE_BODY_TIMEOUT_MS (30000), TOLLGATE_UPLOAD_TIMEOUT_MS (300000),
TOLLGATE_MAX_CONNECTIONS (16384), REDIS_URL (shared limit counters; TOLLGATE_REDIS_PREFIX,
TOLLGATE_RATES_WHEN_REDIS_DOWN=local|refuse, docs/limits.md), OTEL_* (docs/observability.md).`;

const EXAMPLE_CONFIG = fileURLToPath(new URL('../examples/tollgate.yaml', import.meta.url));
const USER_CONFIG = 'tollgate.yaml';

/** --config, $TOLLGATE_CONFIG, else ./tollgate.yaml, made from the example the first time. */
function configPath(flag: string | undefined): string {
  const given = flag ?? process.env.TOLLGATE_CONFIG;
  if (given) return resolve(given);
  const user = resolve(USER_CONFIG);
  if (!existsSync(user)) {
    copyFileSync(EXAMPLE_CONFIG, user);
    console.error(`tollgate: created ${user} from examples/tollgate.yaml (your config; keys are added here).`);
  }
  return user;
}

async function main(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        config: { type: 'string' },
        port: { type: 'string' },
        host: { type: 'string' },
        'admin-host': { type: 'string' },
        kubernetes: { type: 'boolean' },
        namespace: { type: 'string' },
        org: { type: 'string' },
        project: { type: 'string' },
        name: { type: 'string' },
        expires: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const { values, positionals } = parsed;
  const [cmd, sub, arg] = positionals;
  if (values.help || !cmd) {
    console.log(USAGE);
    return values.help ? 0 : 2;
  }
  if (cmd === 'start') {
    const cluster = values.kubernetes === true || process.env.TOLLGATE_MODE === 'kubernetes';
    const config = cluster ? undefined : configPath(values.config);
    if (config && !existsSync(config)) throw new UsageError(`config file not found: ${config}`);
    const port = intFlag('--port', values.port ?? process.env.PORT, 0, 65535) ?? 8080;
    // Every flag is read before anything opens, so a bad value exits at once with nothing left running.
    const options: GatewayOptions = {
      configPath: config,
      kubernetes: cluster ? { namespace: values.namespace } : undefined,
      port,
      host: values.host ?? (process.env.TOLLGATE_HOST || undefined),
      adminHost: values['admin-host'] ?? (process.env.TOLLGATE_ADMIN_HOST || undefined),
      maxBodyBytes: intFlag('TOLLGATE_MAX_BODY_BYTES', process.env.TOLLGATE_MAX_BODY_BYTES, 1, 2 ** 31),
      bodyTimeouts: {
        jsonMs: intFlag('TOLLGATE_BODY_TIMEOUT_MS', process.env.TOLLGATE_BODY_TIMEOUT_MS, 1, 2 ** 31),
        uploadMs: intFlag('TOLLGATE_UPLOAD_TIMEOUT_MS', process.env.TOLLGATE_UPLOAD_TIMEOUT_MS, 1, 2 ** 31),
      },
      maxConnections: intFlag('TOLLGATE_MAX_CONNECTIONS', process.env.TOLLGATE_MAX_CONNECTIONS, 1, 2 ** 31),
      listenBacklog: intFlag('TOLLGATE_LISTEN_BACKLOG', process.env.TOLLGATE_LISTEN_BACKLOG, 1, 2 ** 31),
      maxJournalBytes: intFlag('TOLLGATE_MAX_JOURNAL_BYTES', process.env.TOLLGATE_MAX_JOURNAL_BYTES, 1, 2 ** 53),
      adminPort: adminPortFromEnv(),
      adminTokens: loadAdminTokens(process.env),
      pretty: process.stdout.isTTY === true && process.env.LOG_FORMAT !== 'json',
      redisUrl: process.env.REDIS_URL || undefined,
      redisPrefix: process.env.TOLLGATE_REDIS_PREFIX || undefined,
      ratesWhenRedisDown: process.env.TOLLGATE_RATES_WHEN_REDIS_DOWN === 'refuse' ? 'refuse' : undefined,
      redisTimeoutMs: intFlag('TOLLGATE_REDIS_TIMEOUT_MS', process.env.TOLLGATE_REDIS_TIMEOUT_MS, 1, 2 ** 31),
      redisPodTtlMs: intFlag('TOLLGATE_REDIS_POD_TTL_MS', process.env.TOLLGATE_REDIS_POD_TTL_MS, 300, 2 ** 31),
    };
    // Loaded only here so key commands stay instant and need no database. The store starts opening first (the
    // embedded one boots in a process of its own, the longest step of a start) while the gateway's modules load.
    const { DEFAULT_HOST, ListenError, probeListen } = await import('./http/listen.ts');
    let gw;
    try {
      // A busy port is reported before the store opens (a PGlite first boot takes seconds).
      if (port) await probeListen(options.host ?? DEFAULT_HOST, port);
      const { openStore } = await import('./store/open.ts');
      const opening = openStore({ databaseUrl: process.env.DATABASE_URL || undefined });
      opening.catch(() => {}); // reported by startGateway, which awaits it
      const { startGateway } = await import('./gateway.ts');
      gw = await startGateway({ ...options, opening });
    } catch (err) {
      if (err instanceof ListenError) {
        console.error(`tollgate: ${err.message}`);
        return 1;
      }
      throw err;
    }
    const running = gw;
    running.app.log.info({ url: running.url, listening: running.listening.api, admin: running.listening.admin ?? 'off', store: running.store.kind, ...(cluster ? { namespace: running.kube?.namespace } : { config }) }, `tollgate listening on ${running.listening.api}`);
    const notice = running.holder.current ? missingCredentialsBlock(running.holder.current.providers.values()) : undefined;
    if (notice) console.error(notice);
    const stop = (signal: string) => {
      running.app.log.info({ signal }, 'draining');
      // The drain budget: what the pod's termination grace period leaves (the chart sets it), else 30 s.
      const budget = Number(process.env.TOLLGATE_DRAIN_SECONDS) > 0 ? Number(process.env.TOLLGATE_DRAIN_SECONDS) * 1000 : 30_000;
      const force = setTimeout(() => {
        running.app.log.error({ budgetMs: budget }, 'drain budget spent; exiting with requests still open');
        process.exit(1);
      }, budget);
      force.unref();
      // Requests get the budget less what the journal flush may take (the ledger's close timeout, 5 s) and a margin.
      running.close(Math.max(500, budget - 6000)).then(
        () => process.exit(0),
        (err: unknown) => {
          running.app.log.error({ err: (err as Error).message }, 'shutdown failed');
          process.exit(1);
        },
      );
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
    return -1;
  }
  if (cmd === 'keys') {
    if (sub === 'create') {
      if (!values.org || !values.project) throw new UsageError('keys create needs --org and --project');
      const expiresAt = expiryFlag(values.expires);
      const config = configPath(values.config);
      const created = createKey(config, { organization: values.org, project: values.project, name: values.name, expiresAt });
      console.log(created.key);
      console.error(`created key ${created.id} (${created.prefix}…) for ${values.org}/${values.project} in ${config}.\nThe key is shown once; store it now. Only its hash is kept.`);
      return 0;
    }
    if (sub === 'list') {
      const rows = listKeys(configPath(values.config));
      console.log(['ID', 'PREFIX', 'ORG', 'PROJECT', 'STATE', 'NAME'].join('\t'));
      for (const k of rows) console.log([k.id, k.prefix, k.organization, k.project, k.state, k.name ?? ''].join('\t'));
      return 0;
    }
    if (sub === 'revoke') {
      if (!arg) throw new UsageError('keys revoke needs a key id or prefix');
      const id = revokeKey(configPath(values.config), arg);
      console.error(`revoked key ${id}`);
      return 0;
    }
  }
  throw new UsageError(`unknown command: ${positionals.join(' ')}`);
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exitCode = code;
  },
  (err: unknown) => {
    if (err instanceof UsageError) {
      console.error(`tollgate: ${err.message}\n\n${USAGE}`);
      process.exitCode = 2;
      return;
    }
    console.error(`tollgate: ${(err as Error).message}`);
    process.exitCode = 1;
  },
);
