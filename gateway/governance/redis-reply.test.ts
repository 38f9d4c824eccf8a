import { describe, expect, it } from 'vitest';
import { ReplyCursor } from './redis-reply.ts';
import { join } from './spend-units.ts';

describe('ReplyCursor', () => {
  it('reads every field as Number would, integers or not', () => {
    const fields = ['1', '999999998', '0.00012000000000000000304', '-42', '0', '6.0000000000000002e-05', '1234567890123456789', '-0', '', '7'];
    const c = new ReplyCursor().reset(fields.join(' '));
    for (const f of fields) expect(Object.is(c.number(), Number(f))).toBe(true);
  });

  it('reads spend counters exactly, below and above one point', () => {
    const pairs: [string, string][] = [
      ['0', '21300000000'],
      ['0', '999999999999999'],
      ['3', '5'],
      ['-2', '999999999999999'],
      ['123456789012345678', '1'],
      ['0', '0'],
    ];
    const c = new ReplyCursor().reset(pairs.map((p) => p.join(' ')).join(' ') + ' 9');
    for (const [w, f] of pairs) expect(c.spend()).toBe(join(w, f));
    // The cursor is past the last pair: the next field is the one after it.
    expect(c.number()).toBe(9);
  });

  it('reads a femtopoint count past 2^53 as text (never rounded through a double)', () => {
    const c = new ReplyCursor().reset('0 9007199254740993 4');
    expect(c.spend()).toBe(9007199254740993n);
    expect(c.number()).toBe(4);
  });
});
