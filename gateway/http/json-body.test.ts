import { describe, expect, it } from 'vitest';
import { GatewayError } from '../errors.ts';
import { parseJsonObject, topLevelKeyCount } from './json-body.ts';

const parse = (s: string) => parseJsonObject(Buffer.from(s));

describe('JSON request bodies', () => {
  it('keeps the raw bytes and the parsed object', () => {
    const b = parse('{"model":"m","messages":[]}');
    expect(b.value.model).toBe('m');
    expect(b.raw.toString()).toBe('{"model":"m","messages":[]}');
  });

  it.each(['{', '[]', '"x"', 'null', ''])('refuses %j with a 400', (s) => {
    expect(() => parse(s)).toThrow(GatewayError);
    try {
      parse(s);
    } catch (err) {
      expect((err as GatewayError).status).toBe(400);
    }
  });

  it('refuses a body that names model twice at the top level', () => {
    expect(() => parse('{"model":"cheap","messages":[],"model" : "expensive"}')).toThrow(/more than once/);
  });

  it('allows model keys nested deeper and "model" inside strings', () => {
    expect(parse('{"model":"a","metadata":{"model":"b"},"messages":[{"role":"user","content":"\\"model\\": 1"}]}').value.model).toBe('a');
    expect(parse('{"model":"a","tools":[{"model":"x"},{"model":"y"}]}').value.model).toBe('a');
  });

  it('counts keys across escapes and unicode', () => {
    expect(topLevelKeyCount('{"a\\"b":1,"model":2,"x":{"model":3},"mod\\u0065l":4}', 'model')).toBe(2);
  });
});
