// npm run demo: a local example upstream beside the gateway, a fresh key, and curl commands that work offline.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { stringify } from 'yaml';
import { ListenError, startGateway } from '../gateway/gateway.ts';
import { createKey } from '../gateway/snapshot/config-keys.ts';
import { startFakeUpstream, TINY_PNG } from '../test/upstream/server.ts';

const port = Number(process.env.PORT ?? 8080);
const dataDir = resolve(process.env.TOLLGATE_DATA_DIR ?? '.tollgate/demo');
mkdirSync(dataDir, { recursive: true });

const upstream = await startFakeUpstream({ record: false });
const configPath = join(dataDir, 'tollgate.yaml');
const provider = (id: string, path: string) => ({ id, baseUrl: `${upstream.url}${path}`, apiKey: { value: 'demo-upstream-credential' } });
writeFileSync(
  configPath,
  '# Written by `npm run demo`: every provider is the local example upstream.\n' +
    stringify({
      providers: [provider('example-openai', '/v1'), provider('example-anthropic', '/v1'), provider('example-gemini', '/v1beta'), provider('example-ark', '/api/v3')],
      pricingGroups: [
        { id: 'mini', mode: 'flat_tokens', prices: { input: '0.15', output: '0.6', cacheRead: '0.075', cacheWrite: '0' } },
        { id: 'image-tokens', mode: 'flat_tokens', prices: { input: '5', output: '40' } },
        { id: 'long-context', mode: 'input_tokens_tiers', tiers: [{ upTo: 200000, input: '1.25', output: '10', cacheRead: '0.31' }, { upTo: null, input: '2.5', output: '15', cacheRead: '0.625' }] },
      ],
      models: [
        { id: 'openai/gpt-4o-mini', alias: 'gpt-4o-mini', public: true, pricingGroup: 'mini', created: 1721172741, protocols: { openai: [{ provider: 'example-openai', model: 'gpt-4o-mini' }], responses: [{ provider: 'example-openai', model: 'gpt-4o-mini' }] } },
        { id: 'anthropic/claude-sonnet-4.5', alias: 'claude-sonnet-4-5', public: true, pricingGroup: 'mini', protocols: { anthropic: [{ provider: 'example-anthropic', model: 'claude-sonnet-4-5' }] } },
        { id: 'google/gemini-2.5-pro', alias: 'gemini-2.5-pro', public: true, pricingGroup: 'long-context', protocols: { gemini: [{ provider: 'example-gemini', model: 'gemini-2.5-pro' }] } },
        // Every model the README's curl examples use is here, so each of them works against the demo.
        { id: 'openai/gpt-image-1', alias: 'gpt-image-1', public: true, pricingGroup: 'image-tokens', protocols: { images: [{ provider: 'example-openai', model: 'gpt-image-1' }] } },
        { id: 'ark/seedream-4', alias: 'seedream-4', public: true, pricingGroup: 'image-tokens', protocols: { images: [{ provider: 'example-ark', model: 'doubao-seedream-4-0-250828' }] }, capabilities: { imageSizes: ['1K', '2K', '2048x2048'] } },
        { id: 'openai/text-embedding-3-small', alias: 'text-embedding-3-small', public: true, pricingGroup: 'mini', protocols: { embeddings: [{ provider: 'example-openai', model: 'text-embedding-3-small' }] } },
      ],
      organizations: [{ id: 'demo', models: ['*'] }],
      apiKeys: [],
    }),
);
// The images the README's edit example uploads.
for (const name of ['cat.png', 'hat.png', 'mask.png']) writeFileSync(join(dataDir, name), TINY_PNG);
const { key } = createKey(configPath, { organization: 'demo', project: 'playground', name: 'demo key' });
let gw;
try {
  gw = await startGateway({ configPath, dataDir, port, host: '127.0.0.1', logLevel: process.env.LOG_LEVEL ?? 'warn' });
} catch (err) {
  await upstream.close();
  if (!(err instanceof ListenError)) throw err;
  console.error(`tollgate demo: ${err.message}`);
  process.exit(1);
}
const base = gw.url;
const today = new Date().toISOString().slice(0, 10);
const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);

console.log(`
tollgate demo: gateway ${base} (store: ${gw.store.kind}), example upstream ${upstream.url}
config: ${configPath}

Your key (shown once):
  export TOLLGATE_KEY=${key}

Chat completion:
  curl -s ${base}/api/v1/chat/completions -H "Authorization: Bearer $TOLLGATE_KEY" -H 'content-type: application/json' \\
    -d '{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Hello, tollgate"}]}' -D - 

Streamed:
  curl -sN ${base}/api/v1/chat/completions -H "Authorization: Bearer $TOLLGATE_KEY" -H 'content-type: application/json' \\
    -d '{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"Stream to me"}]}'

Usage of your project:
  curl -s "${base}/api/business/v1/customer/usage?from=${today}&to=${tomorrow}" -H "Authorization: Bearer $TOLLGATE_KEY"

Every curl in the README works against this demo (models: gpt-4o-mini, claude-sonnet-4-5, gemini-2.5-pro, gpt-image-1,
seedream-4, text-embedding-3-small; the edit example's images are in ${dataDir}).

Ctrl-C stops both.`);

const stop = async () => {
  await gw.close();
  await upstream.close();
  process.exit(0);
};
process.once('SIGINT', () => void stop());
process.once('SIGTERM', () => void stop());
