// tollgate command line: `start` runs the gateway; `keys create|list|revoke` manage keys in the standalone config file.
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { createKey, listKeys, revokeKey } from './snapshot/config-keys.ts';
import { adminPortFromEnv } from './telemetry/config.ts';

const USAGE = `usage:
  tollgate start [--config FILE] [--port N] [--host ADDR]
  tollgate start --kubernetes [--namespace NS]   (or TOLLGATE_MODE=kubernetes): snapshot from the operator's Secrets
  tollgate keys create --org ORG --project PROJECT [--name NAME] [--expires RFC3339] [--config FILE]
  tollgate keys list [--config FILE]
  tollgate keys revoke <KEY_ID|PREFIX> [--config FILE]

The config file defaults to $TOLLGATE_CONFIG, then examples/tollgate.yaml.
Environment: PORT, REDIS_URL (shared limit counters; TOLLGATE_REDIS_PREFIX, TOLLGATE_RATES_WHEN_REDIS_DOWN=local|refuse), DATABASE_URL (else embedded PGlite in $TOLLGATE_DATA_DIR, default ./.tollgate), LOG_LEVEL,
TOLLGATE_ADMIN_PORT (metrics, default 9464; 0 or off: none), OTEL_* (docs/observability.md).`;

function configPath(flag: string | undefined): string {
  return resolve(flag ?? process.env.TOLLGATE_CONFIG ?? 'examples/tollgate.yaml');
}

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      config: { type: 'string' },
      port: { type: 'string' },
      host: { type: 'string' },
      kubernetes: { type: 'boolean' },
      namespace: { type: 'string' },
      org: { type: 'string' },
      project: { type: 'string' },
      name: { type: 'string' },
      expires: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const [cmd, sub, arg] = positionals;
  if (values.help || !cmd) {
    console.log(USAGE);
    return values.help ? 0 : 2;
  }
  const config = configPath(values.config);
  if (cmd === 'start') {
    const cluster = values.kubernetes === true || process.env.TOLLGATE_MODE === 'kubernetes';
    if (!cluster && !existsSync(config)) throw new Error(`config file not found: ${config}`);
    // Loaded only here so key commands stay instant and need no database.
    const { startGateway } = await import('./gateway.ts');
    const gw = await startGateway({
      configPath: cluster ? undefined : config,
      kubernetes: cluster ? { namespace: values.namespace } : undefined,
      databaseUrl: process.env.DATABASE_URL || undefined,
      port: Number(values.port ?? process.env.PORT ?? 8080),
      host: values.host,
      maxBodyBytes: process.env.TOLLGATE_MAX_BODY_BYTES ? Number(process.env.TOLLGATE_MAX_BODY_BYTES) : undefined,
      listenBacklog: process.env.TOLLGATE_LISTEN_BACKLOG ? Number(process.env.TOLLGATE_LISTEN_BACKLOG) : undefined,
      maxJournalBytes: process.env.TOLLGATE_MAX_JOURNAL_BYTES ? Number(process.env.TOLLGATE_MAX_JOURNAL_BYTES) : undefined,
      adminPort: adminPortFromEnv(),
      redisUrl: process.env.REDIS_URL || undefined,
      redisPrefix: process.env.TOLLGATE_REDIS_PREFIX || undefined,
      ratesWhenRedisDown: process.env.TOLLGATE_RATES_WHEN_REDIS_DOWN === 'refuse' ? 'refuse' : undefined,
      redisTimeoutMs: process.env.TOLLGATE_REDIS_TIMEOUT_MS ? Number(process.env.TOLLGATE_REDIS_TIMEOUT_MS) : undefined,
      leaseGraceMs: process.env.TOLLGATE_LIMITS_LEASE_GRACE_MS ? Number(process.env.TOLLGATE_LIMITS_LEASE_GRACE_MS) : undefined,
    });
    gw.app.log.info({ url: gw.url, store: gw.store.kind, ...(cluster ? { namespace: gw.kube?.namespace } : { config }), adminUrl: gw.adminUrl }, 'tollgate listening');
    const stop = (signal: string) => {
      gw.app.log.info({ signal }, 'draining');
      const force = setTimeout(() => process.exit(1), 30_000);
      force.unref();
      gw.close().then(
        () => process.exit(0),
        (err: unknown) => {
          gw.app.log.error({ err: (err as Error).message }, 'shutdown failed');
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
      if (!values.org || !values.project) throw new Error('keys create needs --org and --project');
      const created = createKey(config, { organization: values.org, project: values.project, name: values.name, expiresAt: values.expires });
      console.log(created.key);
      console.error(`created key ${created.id} (${created.prefix}…) for ${values.org}/${values.project} in ${config}.\nThe key is shown once; store it now. Only its hash is kept.`);
      return 0;
    }
    if (sub === 'list') {
      const rows = listKeys(config);
      console.log(['ID', 'PREFIX', 'ORG', 'PROJECT', 'STATE', 'NAME'].join('\t'));
      for (const k of rows) console.log([k.id, k.prefix, k.organization, k.project, k.state, k.name ?? ''].join('\t'));
      return 0;
    }
    if (sub === 'revoke') {
      if (!arg) throw new Error('keys revoke needs a key id or prefix');
      const id = revokeKey(config, arg);
      console.error(`revoked key ${id}`);
      return 0;
    }
  }
  console.error(USAGE);
  return 2;
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exitCode = code;
  },
  (err: unknown) => {
    console.error(`tollgate: ${(err as Error).message}`);
    process.exitCode = 1;
  },
);
