import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { spliceString, topLevelValue, topLevelValueFromEnd } from './json-scan.ts';

const b = (s: string) => Buffer.from(s);
const text = (buf: Buffer, span: { start: number; end: number } | undefined) => (span ? buf.toString('utf8', span.start, span.end) : undefined);
const fromEnd = (s: string, key = 'usage') => text(b(s), topLevelValueFromEnd(b(s), key));
const fromStart = (s: string, key = 'model') => text(b(s), topLevelValue(b(s), key));

/** JSON text of `v` with random whitespace between tokens (outside strings). */
function spaced(v: unknown, ws: string[]): string {
  let n = 0;
  const w = () => ws[n++ % ws.length];
  const out = (x: unknown): string => {
    if (Array.isArray(x)) return `[${w()}${x.map((e) => out(e)).join(`${w()},${w()}`)}${w()}]`;
    if (x !== null && typeof x === 'object') {
      return `{${w()}${Object.entries(x).map(([k, e]) => `${JSON.stringify(k)}${w()}:${w()}${out(e)}`).join(`${w()},${w()}`)}${w()}}`;
    }
    return JSON.stringify(x);
  };
  return out(v);
}

const wsArb = fc.array(fc.constantFrom('', ' ', '\n', '\t', '\r\n  '), { minLength: 1, maxLength: 5 });
// Strings full of the bytes the walk has to get right: quotes, backslashes, braces, the key names themselves, non-ASCII.
const nasty = fc.string({ unit: fc.constantFrom('"', '\\', '{', '}', '[', ']', ',', ':', 'usage', 'model', '"usage":', '\\"', 'é', '𝄞', '\u2028', 'a', ' ') });
const valueArb = fc.letrec((tie) => ({
  v: fc.oneof({ depthSize: 'small' }, nasty, fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.boolean(), fc.constant(null), fc.array(tie('v'), { maxLength: 3 }), fc.dictionary(nasty, tie('v'), { maxKeys: 3 })),
})).v;

describe('topLevelValueFromEnd (usage from the tail of an upstream answer)', () => {
  it('finds usage at the end or before a few trailing members', () => {
    expect(fromEnd('{"id":"x","usage":{"prompt_tokens":3}}')).toBe('{"prompt_tokens":3}');
    expect(fromEnd('{"id":"x","usage":{"a":[1,{"b":"}"}]},"service_tier":"default","system_fingerprint":"fp_1"}\n')).toBe('{"a":[1,{"b":"}"}]}');
    expect(fromEnd(' { "usage" :\n null , "n" : -1.5e3 , "t" : true } \n')).toBe('null');
  });

  it('is not fooled by "usage" inside strings or nested objects', () => {
    expect(fromEnd('{"choices":[{"message":{"content":"{\\"usage\\": {\\"prompt_tokens\\": 999}}"}}]}')).toBeUndefined();
    expect(fromEnd('{"choices":[{"usage":{"prompt_tokens":999}}]}')).toBeUndefined();
    expect(fromEnd('{"usage":{"prompt_tokens":1},"note":"\\",\\"usage\\":{\\"prompt_tokens\\":2}"}')).toBe('{"prompt_tokens":1}');
    // A string ending in an escaped backslash: its closing quote is real.
    expect(fromEnd('{"usage":{"p":1},"s":"ends with \\\\"}')).toBe('{"p":1}');
    expect(fromEnd('{"usage":"a\\\\\\"b"}')).toBe('"a\\\\\\"b"');
  });

  it('reads an escaped spelling of the key, and takes the last of duplicates as JSON.parse does', () => {
    expect(fromEnd('{"us\\u0061ge":{"p":1}}')).toBe('{"p":1}');
    expect(fromEnd('{"usage":{"p":1},"usage":{"p":2}}')).toBe('{"p":2}');
  });

  it('gives up on what is not a well-formed object tail', () => {
    for (const s of ['', '[]', '{"usage":1', 'null', '{"usage" 1}', '{"usage":1,}', '{,"usage":1}x']) expect(fromEnd(s)).toBeUndefined();
    // Further back than the member bound: the caller parses the whole body instead.
    const many = '{"usage":1,' + Array.from({ length: 20 }, (_, i) => `"k${i}":${i}`).join(',') + '}';
    expect(fromEnd(many)).toBeUndefined();
  });

  it('agrees with JSON.parse on random objects', () => {
    fc.assert(
      fc.property(fc.dictionary(nasty, valueArb, { maxKeys: 5 }), valueArb, fc.nat(4), wsArb, (rest, usage, at, ws) => {
        const entries = Object.entries(rest).filter(([k]) => k !== 'usage');
        entries.splice(Math.min(at, entries.length), 0, ['usage', usage]);
        const s = spaced(Object.fromEntries(entries), ws);
        const got = fromEnd(s);
        expect(got).toBeDefined();
        expect(JSON.parse(got!)).toEqual((JSON.parse(s) as { usage: unknown }).usage);
      }),
      { numRuns: 500 },
    );
  });

  it('never reports a usage the top level does not have', () => {
    fc.assert(
      fc.property(fc.dictionary(nasty, valueArb, { maxKeys: 6 }), wsArb, (o, ws) => {
        const s = spaced(o, ws);
        const got = fromEnd(s);
        const parsed = JSON.parse(s) as Record<string, unknown>;
        if (Object.hasOwn(parsed, 'usage')) {
          if (got !== undefined) expect(JSON.parse(got)).toEqual(parsed.usage);
        } else expect(got).toBeUndefined();
      }),
      { numRuns: 500 },
    );
  });
});

describe('topLevelValue and spliceString (model rewrite in the request bytes)', () => {
  it('finds the top-level model wherever it is', () => {
    expect(fromStart('{"model":"gpt-4o","messages":[]}')).toBe('"gpt-4o"');
    expect(fromStart('{"messages":[{"role":"user","content":"\\"model\\":\\"evil\\""}],\n  "model" : "m\\u00e9"\n}\n')).toBe('"m\\u00e9"');
    expect(fromStart('{"metadata":{"model":"nested"},"model":"top"}')).toBe('"top"');
    expect(fromStart('{"mod\\u0065l":"escaped"}')).toBe('"escaped"');
  });

  it('refuses when model is missing, twice in any spelling, or the body is not one object', () => {
    for (const s of [
      '{}',
      '{"messages":[{"model":"x"}]}',
      '{"model":"a","mod\\u0065l":"b"}',
      '{"model":"a","model":"b"}',
      '{"model":"a"} {"model":"b"}',
      '{"model":"a",}',
      '["model"]',
      '{"model":"a"',
    ]) {
      expect(fromStart(s)).toBeUndefined();
    }
  });

  it('changes only the model value, byte for byte', () => {
    const raw = b('{ "messages":[{"role":"user","content":"héllo \\"model\\": 𝄞"}], "model":"client-name" ,"n":1}');
    const span = topLevelValue(raw, 'model')!;
    const out = spliceString(raw, span, 'up/str"eam\u00e9');
    expect(out.toString()).toBe('{ "messages":[{"role":"user","content":"héllo \\"model\\": 𝄞"}], "model":"up/str\\"eamé" ,"n":1}');
  });

  it('agrees with parse, set model, on random bodies', () => {
    fc.assert(
      fc.property(fc.dictionary(nasty, valueArb, { maxKeys: 5 }), nasty, nasty, fc.nat(5), wsArb, (rest, model, upstream, at, ws) => {
        const entries = Object.entries(rest).filter(([k]) => k !== 'model');
        entries.splice(Math.min(at, entries.length), 0, ['model', model]);
        const raw = b(spaced(Object.fromEntries(entries), ws));
        const span = topLevelValue(raw, 'model');
        expect(span).toBeDefined();
        const out = spliceString(raw, span!, upstream);
        const want = JSON.parse(raw.toString()) as Record<string, unknown>;
        want.model = upstream;
        expect(JSON.parse(out.toString())).toEqual(want);
        expect(out.subarray(0, span!.start).equals(raw.subarray(0, span!.start))).toBe(true);
        expect(out.subarray(out.length - (raw.length - span!.end)).equals(raw.subarray(span!.end))).toBe(true);
      }),
      { numRuns: 500 },
    );
  });
});
