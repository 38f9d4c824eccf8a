// The compact counter must count exactly as js-tiktoken encodes (the reference), over text that exercises the split
// pattern and multi-byte merges.
import { Tiktoken } from 'js-tiktoken/lite';
import { describe, expect, it, vi } from 'vitest';
import { loadBpeCounter } from './bpe-count.ts';

vi.setConfig({ testTimeout: 120_000 });

const REFERENCE = { o200k_base: () => import('js-tiktoken/ranks/o200k_base'), cl100k_base: () => import('js-tiktoken/ranks/cl100k_base') };

const SAMPLES = [
  '',
  'Hello, world!',
  'Tell me about lighthouses on rocky coasts, briefly.',
  '   leading and trailing spaces   \n\n\tTabs\r\nand CRLF',
  "It's what they've said; we'll see — I'd've thought so. DON'T SHOUT",
  'Numbers 1234567890 3.14159 -42 1e10 0x1F',
  'Ünïcödé: naïve café, Straße, ¿qué?, 東京タワー, 한국어, русский текст, العربية, हिन्दी, 🚀🔥👩‍👩‍👧',
  '{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}',
  'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa',
  'supercalifragilisticexpialidocious antidisestablishmentarianism pneumonoultramicroscopicsilicovolcanoconiosis',
  'function f(x) {\n  return x.map((y) => y * 2).filter(Boolean);\n}\n',
];

describe.each(['o200k_base', 'cl100k_base'] as const)('%s', (name) => {
  it('counts as js-tiktoken encodes', async () => {
    const [counter, ranks] = await Promise.all([loadBpeCounter(name), REFERENCE[name]()]);
    const reference = new Tiktoken(ranks.default);
    for (const text of SAMPLES) expect(counter.count(text), text).toBe(reference.encode(text).length);
    // Special-token strings are ordinary text to the counter (js-tiktoken would throw on them).
    expect(counter.count('<|endoftext|>')).toBe(reference.encode('<|endoftext|>', [], []).length);
  });
});
