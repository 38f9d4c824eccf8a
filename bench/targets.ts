// The servers under test, each a child process on loopback: the fake upstream, the bare pass-through,
// tollgate standalone (PGlite or Postgres) and Portkey's gateway, all forwarding to the same upstream.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateApiKey } from '../gateway/auth/api-key.ts';
import type { SnapshotInput } from '../gateway/snapshot/schema.ts';
import type { BackendCpu } from './databases.ts';
import type { Target } from './load.ts';
import { freePort, spawnServer } from './proc.ts';
import type { ServerProc } from './proc.ts';

/**
 * Node flags the gateway image runs with (Dockerfile NODE_OPTIONS); the bench starts tollgate, and the bare floor
 * beside it, the same way. Without a bound V8 sizes the young generation from the machine's memory: 128 MB
 * committed on a 24 GB host, more than 10,000 open streams hold.
 */
export const GATEWAY_NODE_OPTIONS = '--max-semi-space-size=8';

export interface Running {
  proc: ServerProc;
  target: Target;
  close(): Promise<void>;
}

export async function startUpstream(): Promise<Running> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const proc = await spawnServer({
    name: 'upstream',
    args: ['test/upstream/main.ts', '--port', String(port), '--host', '127.0.0.1'],
    readyUrl: `${url}/__fake/health`,
    url,
  });
  return {
    proc,
    target: {
      name: 'direct',
      origin: url,
      chatPath: '/v1/chat/completions',
      headers: { authorization: 'Bearer sk-bench-upstream' },
      pid: proc.pid,
      messagesPath: '/v1/messages',
      messagesHeaders: { 'x-api-key': 'sk-bench-upstream', 'anthropic-version': '2023-06-01' },
    },
    close: () => proc.stop(),
  };
}

/** The bare pass-through: streamed (`bare`) or buffered (`bare-buffered`); the floor is the better of the two. */
export async function startBare(upstreamUrl: string, opts: { buffered?: boolean; nodeArgs?: string[]; wrapper?: string[]; timeoutMs?: number } = {}): Promise<Running> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const name = opts.buffered ? 'bare-buffered' : 'bare';
  const args = [...(opts.nodeArgs ?? []), 'bench/bare-proxy.ts', '--port', String(port), '--upstream', upstreamUrl, ...(opts.buffered ? ['--buffered'] : [])];
  const proc = await spawnServer({ name, args, env: { NODE_OPTIONS: GATEWAY_NODE_OPTIONS }, readyUrl: `${url}/healthz`, url, wrapper: opts.wrapper, timeoutMs: opts.timeoutMs });
  return {
    proc,
    target: {
      name,
      origin: url,
      chatPath: '/v1/chat/completions',
      headers: { authorization: 'Bearer sk-bench-upstream' },
      pid: proc.pid,
      messagesPath: '/v1/messages',
      messagesHeaders: { 'x-api-key': 'sk-bench-upstream', 'anthropic-version': '2023-06-01' },
    },
    close: () => proc.stop(),
  };
}

/** A standalone config: one provider (the fake upstream), a chat model and a messages model, one key. */
export function benchConfig(upstreamUrl: string, keys: { key: string; hash: string; prefix: string; organization: string; project: string }[]): SnapshotInput {
  return {
    providers: [
      {
        id: 'bench',
        baseUrl: `${upstreamUrl}/v1`,
        apiKey: { value: 'sk-bench-provider' },
        timeouts: { connectMs: 30_000, firstByteMs: 120_000, idleMs: 120_000, totalMs: 300_000 },
      },
    ],
    pricingGroups: [{ id: 'mini', mode: 'flat_tokens', prices: { input: '0.15', output: '0.6', cacheRead: '0.075', cacheWrite: '0' } }],
    models: [
      { id: 'gpt-4o-mini', public: true, pricingGroup: 'mini', protocols: { openai: [{ provider: 'bench', model: 'gpt-4o-mini' }] } },
      { id: 'claude-bench', public: true, pricingGroup: 'mini', protocols: { anthropic: [{ provider: 'bench', model: 'claude-bench' }] } },
    ],
    organizations: [...new Set(keys.map((k) => k.organization))].map((id) => ({ id, models: ['*'] })),
    apiKeys: keys.map((k, i) => ({ id: `bench-${i}`, hash: k.hash, prefix: k.prefix, organization: k.organization, project: k.project })),
  };
}

export interface TollgateOptions {
  name: string;
  upstreamUrl: string;
  /** Postgres URL; PGlite in the data dir when absent. */
  databaseUrl?: string;
  /** The Postgres database's backend CPU, counted with the gateway's (bench/databases.ts). */
  backendCpu?: () => Promise<BackendCpu>;
  /** Reuse this data dir (a restart: not a first boot) and leave it in place on close; default a fresh temp dir. */
  dataDir?: string;
  /** Keys to create besides the default bench key (e.g. for seeded projects). */
  extraKeys?: { organization: string; project: string }[];
  nodeArgs?: string[];
  env?: Record<string, string>;
  /** Another checkout of tollgate to run instead of this one (before/after comparisons in one run). */
  root?: string;
  /** Another checkout's entry point (bench/streams.ts --also): the same scenario against older code in one run. */
  cliPath?: string;
  /** Runs node under this program (bench/instructions-per-request.ts: valgrind). */
  wrapper?: string[];
}

export interface RunningTollgate extends Running {
  dataDir: string;
  keyFor(project: string): string;
}

export async function startTollgate(opts: TollgateOptions): Promise<RunningTollgate> {
  const dataDir = opts.dataDir ?? mkdtempSync(join(tmpdir(), 'tollgate-bench-'));
  const wanted = [{ organization: 'bench', project: 'bench' }, ...(opts.extraKeys ?? [])];
  const keys = wanted.map((w) => ({ ...generateApiKey(), ...w }));
  const configPath = join(dataDir, 'tollgate.json');
  writeFileSync(configPath, JSON.stringify(benchConfig(opts.upstreamUrl, keys), null, 2));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const proc = await spawnServer({
    name: opts.name,
    args: [...(opts.nodeArgs ?? []), opts.cliPath ?? join(opts.root ?? '.', 'bin/tollgate.js'), 'start', '--config', configPath, '--port', String(port), '--host', '127.0.0.1'],
    // As a user runs it: default log level (info, access log on); a tuned row passes its own LOG_LEVEL in `env`.
    env: { TOLLGATE_DATA_DIR: dataDir, DATABASE_URL: opts.databaseUrl ?? '', NODE_OPTIONS: GATEWAY_NODE_OPTIONS, ...opts.env },
    readyUrl: `${url}/healthz`,
    url,
    wrapper: opts.wrapper,
    // Generous: a first PGlite boot on a busy shared machine takes minutes (its start time is reported, not bounded here).
    timeoutMs: opts.wrapper ? 1_200_000 : 300_000,
  });
  const bearer = keys[0].key;
  return {
    proc,
    dataDir,
    keyFor: (project) => keys.find((k) => k.project === project)!.key,
    target: {
      name: opts.name,
      origin: url,
      chatPath: '/api/v1/chat/completions',
      headers: { authorization: `Bearer ${bearer}` },
      pid: proc.pid,
      messagesPath: '/api/v1/messages',
      messagesHeaders: { 'x-api-key': bearer, 'anthropic-version': '2023-06-01' },
      backendCpu: opts.backendCpu,
    },
    async close() {
      await proc.stop();
      if (!opts.dataDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export async function startPortkey(upstreamUrl: string): Promise<Running> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const proc = await spawnServer({
    name: 'portkey',
    args: ['--import', './bench/loopback-only.ts', 'node_modules/@portkey-ai/gateway/build/start-server.js', `--port=${port}`, '--headless'],
    env: { PORTKEY_KEEP_NODE_GLOBALS: '1' },
    readyUrl: `${url}/`,
    url,
  });
  // Portkey routes by headers: provider openai at a custom host (the fake upstream), the client's key passed on.
  const route = { 'x-portkey-provider': 'openai', 'x-portkey-custom-host': `${upstreamUrl}/v1` };
  return {
    proc,
    target: {
      name: 'portkey',
      origin: url,
      chatPath: '/v1/chat/completions',
      headers: { authorization: 'Bearer sk-bench-upstream', ...route },
      pid: proc.pid,
      messagesPath: '/v1/messages',
      messagesHeaders: { 'x-api-key': 'sk-bench-upstream', 'anthropic-version': '2023-06-01', 'x-portkey-provider': 'anthropic', 'x-portkey-custom-host': `${upstreamUrl}/v1` },
    },
    close: () => proc.stop(),
  };
}
