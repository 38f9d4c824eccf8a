// Starts a real gateway (in this process) against the fake upstream, with fresh keys and a fresh database.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateApiKey } from '../../gateway/auth/api-key.ts';
import type { GatewayOptions, RunningGateway } from '../../gateway/gateway.ts';
import { startGateway } from '../../gateway/gateway.ts';
import type { SnapshotInput } from '../../gateway/snapshot/schema.ts';
import type { FakeUpstream } from '../upstream/server.ts';
import type { Store } from '../../gateway/store/store.ts';
import type { Backend } from './databases.ts';
import { createTestDatabase } from './databases.ts';
import { startFakeUpstream } from '../upstream/server.ts';

export const PROVIDER_SECRET = 'sk-provider-secret-never-shown';

export interface TestKeys {
  /** org acme (every model, discount 0.9), project web */
  acme: string;
  /** org globex (openai/* only), project research */
  globex: string;
  revoked: string;
  expired: string;
}

export interface TestGateway {
  gw: RunningGateway;
  url: string;
  upstream: FakeUpstream;
  keys: TestKeys;
  configPath: string;
  dataDir: string;
  close(): Promise<void>;
}

/** The standard test world: an OpenAI-protocol model family, a tiered model, two organizations. */
export function testConfig(upstreamUrl: string, keys: Record<string, ReturnType<typeof generateApiKey>>): SnapshotInput {
  const key = (id: string, org: string, project: string, extra: Record<string, unknown> = {}) => ({ id, hash: keys[id].hash, prefix: keys[id].prefix, organization: org, project, ...extra });
  // One attempt and no ejection in this shared world: a failure a test scripts (or a dead provider it calls) is
  // what that test sees, whatever ran before it. test/e2e/resilience.test.ts covers retries and ejection.
  const routing = { maxAttempts: 1, ejectAfter: 1_000_000, ejectFailurePercent: 0 };
  return {
    providers: [
      { id: 'fake-openai', baseUrl: `${upstreamUrl}/v1`, apiKey: { value: PROVIDER_SECRET }, timeouts: { connectMs: 2000, firstByteMs: 3000, idleMs: 3000, totalMs: 10000 }, routing },
      { id: 'fake-slow', baseUrl: `${upstreamUrl}/v1`, apiKey: { value: PROVIDER_SECRET }, timeouts: { firstByteMs: 300, idleMs: 300, totalMs: 5000 }, routing },
      { id: 'dead', baseUrl: 'http://127.0.0.1:9/v1', apiKey: { value: PROVIDER_SECRET }, timeouts: { connectMs: 500 }, routing },
      { id: 'fake-gemini', baseUrl: `${upstreamUrl}/v1beta`, apiKey: { value: PROVIDER_SECRET }, timeouts: { connectMs: 2000, firstByteMs: 3000, idleMs: 3000, totalMs: 10000 }, routing },
      { id: 'fake-ark', baseUrl: `${upstreamUrl}/api/v3`, apiKey: { value: PROVIDER_SECRET }, timeouts: { connectMs: 2000, firstByteMs: 3000, idleMs: 3000, totalMs: 10000 }, routing },
    ],
    pricingGroups: [
      { id: 'mini', mode: 'flat_tokens', prices: { input: '0.15', output: '0.6', cacheRead: '0.075', cacheWrite: '0' } },
      { id: 'tiered', mode: 'input_tokens_tiers', discount: '0.5', tiers: [{ upTo: 20, input: '1', output: '2', cacheRead: '0.5' }, { upTo: null, input: '3', output: '4', cacheRead: '1' }] },
      { id: 'image-out', mode: 'flat_tokens', prices: { input: '0.3', output: '30' } },
      { id: 'image-tokens', mode: 'flat_tokens', prices: { input: '5', output: '40' } },
    ],
    models: [
      { id: 'openai/gpt-4o-mini', alias: 'gpt-4o-mini', public: true, pricingGroup: 'mini', created: 1721172741, protocols: { openai: [{ provider: 'fake-openai', model: 'gpt-4o-mini-2024-07-18' }] }, capabilities: { drop: ['logit_bias'] } },
      { id: 'openai/tiered', pricingGroup: 'tiered', protocols: { openai: [{ provider: 'fake-openai', model: 'tiered-up' }] } },
      { id: 'anthropic/claude', public: true, pricingGroup: 'mini', protocols: { anthropic: [{ provider: 'fake-openai', model: 'claude-x' }] } },
      { id: 'secret/internal', pricingGroup: 'mini', protocols: { openai: [{ provider: 'fake-openai', model: 'internal' }] } },
      { id: 'openai/slow', public: true, pricingGroup: 'mini', protocols: { openai: [{ provider: 'fake-slow', model: 'gpt-4o-mini-2024-07-18' }] } },
      { id: 'openai/unreachable', public: true, pricingGroup: 'mini', protocols: { openai: [{ provider: 'dead', model: 'x' }] } },
      { id: 'openai/failover', public: true, pricingGroup: 'mini', protocols: { openai: [{ provider: 'dead', model: 'x', weight: 1000 }, { provider: 'fake-openai', model: 'gpt-4o-mini-2024-07-18', weight: 1 }] }, routing: { maxAttempts: 2, backoffBaseMs: 1 } },
      // messages clients on openai-only models (converted through chat): one that may reason, one that drops what it cannot take.
      { id: 'openai/reasoner', pricingGroup: 'mini', protocols: { openai: [{ provider: 'fake-openai', model: 'o-reasoner-1' }] } },
      { id: 'openai/legacy', pricingGroup: 'mini', protocols: { openai: [{ provider: 'fake-openai', model: 'legacy-1' }] }, capabilities: { drop: ['reasoning_effort', 'max_completion_tokens', 'top_p'] } },
      { id: 'anthropic/unreachable', pricingGroup: 'mini', protocols: { anthropic: [{ provider: 'dead', model: 'x' }] } },
      { id: 'openai/gpt-5-nano', alias: 'gpt-5-nano', pricingGroup: 'mini', protocols: { responses: [{ provider: 'fake-openai', model: 'gpt-5-nano-2025-08-07' }] } },
      { id: 'google/gemini-2.5-flash-image', alias: 'gemini-2.5-flash-image', pricingGroup: 'image-out', protocols: { gemini: [{ provider: 'fake-gemini', model: 'gemini-2.5-flash-image' }] } },
      { id: 'google/gemini-unreachable', pricingGroup: 'image-out', protocols: { gemini: [{ provider: 'dead', model: 'x' }] } },
      { id: 'openai/gpt-image-1', alias: 'gpt-image-1', public: true, pricingGroup: 'image-tokens', protocols: { images: [{ provider: 'fake-openai', model: 'gpt-image-1' }] } },
      { id: 'openai/image-unreachable', pricingGroup: 'image-tokens', protocols: { images: [{ provider: 'dead', model: 'x' }] } },
      { id: 'ark/seedream-4', alias: 'seedream-4', pricingGroup: 'image-tokens', protocols: { images: [{ provider: 'fake-ark', model: 'doubao-seedream-4-0-250828' }] }, capabilities: { imageSizes: ['1K', '2K', '2048x2048'] } },
      // the unified chat entry (v0, paas/v4): a gemini-only text model, and one that has openai beside anthropic (openai wins).
      { id: 'google/gemini-2.5-flash', alias: 'gemini-2.5-flash', public: true, pricingGroup: 'mini', protocols: { gemini: [{ provider: 'fake-gemini', model: 'gemini-2.5-flash' }] } },
      // embeddings: one model declaring the embeddings protocol (chat models with openai serve them too).
      { id: 'openai/text-embedding-3-small', alias: 'text-embedding-3-small', public: true, pricingGroup: 'mini', protocols: { embeddings: [{ provider: 'fake-openai', model: 'text-embedding-3-small' }] } },
      { id: 'mixed/claude-or-gpt', pricingGroup: 'mini', protocols: { anthropic: [{ provider: 'fake-openai', model: 'claude-x' }], openai: [{ provider: 'fake-openai', model: 'gpt-4o-mini-2024-07-18' }] } },
    ],
    organizations: [
      { id: 'acme', models: ['*'], discount: '0.9' },
      { id: 'globex', models: ['openai/*'] },
    ],
    apiKeys: [
      key('acme', 'acme', 'web'),
      key('globex', 'globex', 'research'),
      key('revoked', 'acme', 'web', { disabled: true }),
      key('expired', 'acme', 'web', { expiresAt: '2020-01-01T00:00:00Z' }),
    ],
  };
}

/** The database a test gateway uses: a fresh Postgres database when DATABASE_URL is set, else PGlite in its data dir. */
export const DEFAULT_BACKEND: Backend = process.env.DATABASE_URL ? 'postgres' : 'pglite';

export async function startTestGateway(
  opts: { backend?: Backend; upstream?: FakeUpstream; maxJournalBytes?: number; flushIntervalMs?: number; maxBodyBytes?: number; store?: Store; gateway?: Partial<GatewayOptions>; config?: (c: SnapshotInput) => SnapshotInput } = {},
): Promise<TestGateway> {
  const db = !opts.store && (opts.backend ?? DEFAULT_BACKEND) === 'postgres' ? await createTestDatabase('postgres', { migrate: false }) : undefined;
  const upstream = opts.upstream ?? (await startFakeUpstream());
  const generated = Object.fromEntries(['acme', 'globex', 'revoked', 'expired'].map((k) => [k, generateApiKey()]));
  const dataDir = mkdtempSync(join(tmpdir(), 'tg-gw-'));
  const configPath = join(dataDir, 'tollgate.json');
  const config = testConfig(upstream.url, generated);
  writeFileSync(configPath, JSON.stringify(opts.config ? opts.config(config) : config, null, 2));
  const gw = await startGateway({
    configPath,
    dataDir,
    databaseUrl: db?.databaseUrl,
    store: opts.store,
    port: 0,
    host: '127.0.0.1',
    logger: false,
    maxJournalBytes: opts.maxJournalBytes,
    maxBodyBytes: opts.maxBodyBytes,
    flushIntervalMs: opts.flushIntervalMs ?? 50,
    ...opts.gateway,
  });
  const keys = Object.fromEntries(Object.entries(generated).map(([k, v]) => [k, v.key])) as unknown as TestKeys;
  return {
    gw,
    url: gw.url,
    upstream,
    keys,
    configPath,
    dataDir,
    async close() {
      await gw.close();
      if (!opts.upstream) await upstream.close();
      await db?.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
