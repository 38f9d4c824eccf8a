// Canonical requests whose exact response bytes are kept under test/fixtures/<protocol>/.
// Each fixture is rendered by a fresh fake with a fixed clock, so ids and timestamps are stable.
// Regenerate with: node test/upstream/record-fixtures.ts
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { startFakeUpstream } from './server.ts';

export const FIXTURE_DIR = fileURLToPath(new URL('../fixtures/', import.meta.url));
export const FIXTURE_CLOCK = (): number => 1750000000;

export interface FixtureDef {
  /** `<protocol>/<name>`; files are `<name>.request.json` and `<name>.<ext>` */
  name: string;
  ext: 'json' | 'sse' | 'txt';
  path: string;
  body: unknown;
  /** Send the same request this many times first (to show e.g. a cache read). */
  warmups?: number;
}

const WEATHER_TOOL_OPENAI = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Current weather for a city',
    parameters: { type: 'object', properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['c', 'f'] } }, required: ['city'] },
  },
};
const WEATHER_TOOL_ANTHROPIC = {
  name: 'get_weather',
  description: 'Current weather for a city',
  input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

export const FIXTURES: FixtureDef[] = [
  // ---- OpenAI chat
  {
    name: 'openai-chat/text',
    ext: 'json',
    path: '/v1/chat/completions',
    body: { model: 'gpt-4o-mini', messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'What is the capital of France?' }] },
  },
  {
    name: 'openai-chat/text-stream-include-usage',
    ext: 'sse',
    path: '/v1/chat/completions',
    body: {
      model: 'gpt-4o-mini',
      stream: true,
      stream_options: { include_usage: true },
      prompt_cache_key: 'user-42',
      messages: [{ role: 'user', content: 'Say hello to the whole world, héllo 世界!' }],
    },
  },
  {
    name: 'openai-chat/text-stream-no-include-usage',
    ext: 'sse',
    path: '/v1/chat/completions',
    body: { model: 'gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'Hi' }] },
  },
  {
    name: 'openai-chat/tool-call-stream',
    ext: 'sse',
    path: '/v1/chat/completions',
    body: {
      model: 'gpt-4o-mini',
      stream: true,
      stream_options: { include_usage: true },
      tools: [WEATHER_TOOL_OPENAI],
      messages: [{ role: 'user', content: 'What is the weather in Paris?' }],
    },
  },
  {
    name: 'openai-chat/tool-call',
    ext: 'json',
    path: '/v1/chat/completions',
    body: { model: 'gpt-4o-mini', tools: [WEATHER_TOOL_OPENAI], messages: [{ role: 'user', content: 'What is the weather in Paris?' }] },
  },
  {
    name: 'openai-chat/image-input',
    ext: 'json',
    path: '/v1/chat/completions',
    body: {
      model: 'gpt-4o-mini',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Describe this picture' },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
          ],
        },
      ],
    },
  },
  {
    name: 'openai-chat/cut-stream',
    ext: 'sse',
    path: '/v1/chat/completions',
    body: {
      model: 'gpt-4o-mini',
      stream: true,
      stream_options: { include_usage: true },
      metadata: { fake: 'cut-stream' },
      messages: [{ role: 'user', content: 'This stream will be cut short' }],
    },
  },
  {
    name: 'openai-chat/error-400',
    ext: 'json',
    path: '/v1/chat/completions',
    body: { model: 'gpt-5-nano', max_tokens: 10, metadata: { fake: 'error-400' }, messages: [{ role: 'user', content: 'x' }] },
  },
  {
    name: 'openai-chat/error-429',
    ext: 'json',
    path: '/v1/chat/completions',
    body: { model: 'gpt-4o-mini', metadata: { fake: 'error-429' }, messages: [{ role: 'user', content: 'x' }] },
  },
  // ---- Anthropic
  {
    name: 'anthropic/text',
    ext: 'json',
    path: '/v1/messages',
    body: { model: 'claude-sonnet-4-5', max_tokens: 1024, messages: [{ role: 'user', content: 'What is the capital of France?' }] },
  },
  {
    name: 'anthropic/text-stream',
    ext: 'sse',
    path: '/v1/messages',
    body: { model: 'claude-sonnet-4-5', max_tokens: 1024, stream: true, messages: [{ role: 'user', content: 'Hello there!' }] },
  },
  {
    name: 'anthropic/thinking-tool-use-stream',
    ext: 'sse',
    path: '/v1/messages',
    body: {
      model: 'claude-sonnet-4-5',
      max_tokens: 4096,
      stream: true,
      thinking: { type: 'enabled', budget_tokens: 2048 },
      tools: [WEATHER_TOOL_ANTHROPIC],
      messages: [{ role: 'user', content: 'What is the weather in Paris?' }],
    },
  },
  {
    name: 'anthropic/cache-read',
    ext: 'json',
    path: '/v1/messages',
    warmups: 1,
    body: {
      model: 'claude-sonnet-4-5',
      max_tokens: 1024,
      system: [{ type: 'text', text: 'You are a meticulous assistant. '.repeat(20), cache_control: { type: 'ephemeral' } }],
      messages: [{ role: 'user', content: 'Summarise the rules.' }],
    },
  },
  {
    name: 'anthropic/error-529',
    ext: 'json',
    path: '/v1/messages',
    body: { model: 'claude-sonnet-4-5', max_tokens: 16, metadata: { fake: 'error-529' }, messages: [{ role: 'user', content: 'x' }] },
  },
  // ---- Gemini
  {
    name: 'gemini/text',
    ext: 'json',
    path: '/v1beta/models/gemini-2.5-flash:generateContent',
    body: { contents: [{ role: 'user', parts: [{ text: 'What is the capital of France?' }] }] },
  },
  {
    name: 'gemini/text-stream-thinking',
    ext: 'sse',
    path: '/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse',
    body: {
      contents: [{ role: 'user', parts: [{ text: 'Why is the sky blue?' }] }],
      generationConfig: { thinkingConfig: { thinkingBudget: 1024, includeThoughts: true } },
    },
  },
  {
    name: 'gemini/image',
    ext: 'json',
    path: '/v1beta/models/gemini-2.5-flash-image:generateContent',
    body: { contents: [{ role: 'user', parts: [{ text: 'Draw a cat' }] }], generationConfig: { responseModalities: ['TEXT', 'IMAGE'] } },
  },
  {
    name: 'gemini/error-429',
    ext: 'json',
    path: '/v1beta/models/gemini-2.5-flash:generateContent',
    body: { contents: [{ role: 'user', parts: [{ text: '[fake:error-429]' }] }] },
  },
  // ---- Responses
  {
    name: 'responses/text',
    ext: 'json',
    path: '/v1/responses',
    body: { model: 'gpt-4.1', instructions: 'Be brief.', input: 'What is the capital of France?' },
  },
  {
    name: 'responses/text-stream',
    ext: 'sse',
    path: '/v1/responses',
    body: { model: 'gpt-4.1', input: 'Tell me a short joke', stream: true },
  },
  {
    name: 'responses/function-call-stream',
    ext: 'sse',
    path: '/v1/responses',
    body: {
      model: 'gpt-4.1',
      stream: true,
      input: [{ role: 'user', content: 'What is the weather in Paris?' }],
      tools: [{ type: 'function', name: 'get_weather', parameters: WEATHER_TOOL_OPENAI.function.parameters }],
    },
  },
  // ---- Images
  {
    name: 'images/generation',
    ext: 'json',
    path: '/v1/images/generations',
    body: { model: 'gpt-image-1', prompt: 'A cute baby sea otter', size: '1024x1024', quality: 'low', n: 2 },
  },
  {
    name: 'images/generation-stream',
    ext: 'sse',
    path: '/v1/images/generations',
    body: { model: 'gpt-image-1', prompt: 'A cute baby sea otter', stream: true, partial_images: 2, quality: 'medium' },
  },
  {
    name: 'ark/images-generation',
    ext: 'json',
    path: '/api/v3/images/generations',
    body: { model: 'doubao-seedream-4-0-250828', prompt: 'A lighthouse at dusk', size: '2K', response_format: 'b64_json' },
  },
  {
    name: 'ark/images-group-stream',
    ext: 'sse',
    path: '/api/v3/images/generations',
    body: {
      model: 'doubao-seedream-4-0-250828',
      prompt: 'Three seasons of one garden',
      size: '2048x2048',
      sequential_image_generation: 'auto',
      sequential_image_generation_options: { max_images: 3 },
      response_format: 'b64_json',
      stream: true,
    },
  },
];

/** Render a fixture's response bytes with a fresh fake (fixed clock); returns status + body bytes. */
export async function renderFixture(def: FixtureDef): Promise<{ status: number; bytes: Buffer }> {
  const fake = await startFakeUpstream({ now: FIXTURE_CLOCK });
  try {
    const send = async (): Promise<{ status: number; bytes: Buffer }> => {
      const r = await fetch(fake.url + def.path, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer sk-provider' },
        body: JSON.stringify(def.body),
      });
      let bytes: Buffer;
      try {
        bytes = Buffer.from(await r.arrayBuffer());
      } catch {
        // cut streams end with a network error; collect what arrived through the reader instead
        bytes = Buffer.alloc(0);
      }
      return { status: r.status, bytes };
    };
    for (let i = 0; i < (def.warmups ?? 0); i++) await send();
    if (def.body && typeof def.body === 'object' && JSON.stringify(def.body).includes('cut-stream')) {
      return await readCut(fake.url + def.path, def.body);
    }
    return await send();
  } finally {
    await fake.close();
  }
}

async function readCut(url: string, body: unknown): Promise<{ status: number; bytes: Buffer }> {
  const r = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const parts: Buffer[] = [];
  const reader = r.body!.getReader();
  try {
    while (true) {
      const { done, value } = await reader.read();
      if (done) break;
      parts.push(Buffer.from(value));
    }
  } catch {
    // expected: the connection is destroyed mid-stream
  }
  return { status: r.status, bytes: Buffer.concat(parts) };
}

export function fixtureFile(def: FixtureDef): string {
  return FIXTURE_DIR + def.name + '.' + def.ext;
}

export function fixtureRequestFile(def: FixtureDef): string {
  return FIXTURE_DIR + def.name + '.request.json';
}

export async function readFixture(def: FixtureDef): Promise<Buffer> {
  return readFile(fixtureFile(def));
}
