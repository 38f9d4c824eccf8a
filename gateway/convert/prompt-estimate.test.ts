// The encodings load on the first estimate that needs one, in the background: that estimate is characters / 4,
// later ones are the encoding's count; the other family's encoding is not loaded by it.
import { describe, expect, it, vi } from 'vitest';
import { estimateChatPromptTokens, preloadTokenizers } from './prompt-estimate.ts';

vi.setConfig({ testTimeout: 120_000 });

// 89 characters: 23 by characters / 4, 20 tokens in both o200k and cl100k.
const chat = { messages: [{ role: 'user', content: 'The quick brown fox jumps over the lazy dog. The quick brown fox jumps over the lazy dog.' }] };

describe('prompt estimate', () => {
  it('answers at once with characters / 4, then counts with the model family\'s encoding once it has loaded', async () => {
    const first = estimateChatPromptTokens(chat, 'gpt-4o-mini');
    // 3 to prime the answer, 3 for the message, ceil(4 / 4) for the role, ceil(89 / 4) for the text.
    expect(first).toBe(3 + 3 + 1 + 23);
    await vi.waitFor(() => expect(estimateChatPromptTokens(chat, 'gpt-4o-mini')).not.toBe(first), { timeout: 60_000, interval: 50 });
    expect(estimateChatPromptTokens(chat, 'gpt-4o-mini')).toBe(3 + 3 + 1 + 20);
    // cl100k was not loaded by that: still characters / 4 until its own first use has loaded it.
    expect(estimateChatPromptTokens(chat, 'gpt-4-turbo')).toBe(first);
    await preloadTokenizers();
    expect(estimateChatPromptTokens(chat, 'gpt-4-turbo')).toBe(3 + 3 + 1 + 20);
  });
});
