// LangChain's Anthropic client reads a stream's input tokens only from message_start. Over an openai-only model
// the gateway puts an offline estimate there (the chat upstream reports usage last); message_delta keeps the exact
// figures, and the ledger bills those.
import { ChatAnthropic } from '@langchain/anthropic';
import type { AIMessageChunk } from '@langchain/core/messages';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { estimateChatPromptTokens, preloadTokenizers } from '../../gateway/convert/prompt-estimate.ts';
import type { TestGateway } from '../support/gateway.ts';
import { startTestGateway } from '../support/gateway.ts';

// PGlite and the encodings load slowly on a busy machine.
vi.setConfig({ hookTimeout: 180_000, testTimeout: 60_000 });

let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway();
  await preloadTokenizers();
});
afterAll(async () => t?.close());

describe('@langchain/anthropic streaming over an openai-only model', () => {
  it('sees the prompt estimate as input tokens, not 0; the ledger bills the upstream\'s exact figures', async () => {
    const model = new ChatAnthropic({ model: 'openai/reasoner', apiKey: t.keys.acme, anthropicApiUrl: `${t.url}/api`, maxTokens: 64, maxRetries: 0, streaming: true });
    let final: AIMessageChunk | undefined;
    for await (const chunk of await model.stream([['system', 'You are terse.'], ['human', 'Tell me about lighthouses on rocky coasts, briefly.']])) final = final ? final.concat(chunk) : chunk;
    expect(final).toBeDefined();
    const upstream = t.upstream.requests.at(-1)!;
    expect(upstream.path).toBe('/v1/chat/completions');
    const expected = estimateChatPromptTokens(upstream.json as Record<string, unknown>, 'o-reasoner-1');
    expect(expected).toBeGreaterThan(10);
    expect(final!.usage_metadata?.input_tokens).toBe(expected);
    expect(final!.usage_metadata?.output_tokens).toBeGreaterThan(0);

    await t.gw.ledger.flush();
    const rows = await t.gw.store.query<{ input: string; estimated: boolean }>("SELECT input::text, estimated FROM usage_events WHERE endpoint = '/api/v1/messages' AND stream ORDER BY occurred_at DESC LIMIT 1");
    // What is billed comes from the upstream's usage chunk (the fake's own tokenizer), not from the estimate.
    expect(rows.rows[0].estimated).toBe(false);
    expect(Number(rows.rows[0].input)).toBeGreaterThan(0);
  });
});
