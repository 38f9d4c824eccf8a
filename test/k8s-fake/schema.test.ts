// Admission pieces on a small schema: pruning, defaults, the server's field-error messages and CEL with oldSelf.
import { describe, expect, it } from 'vitest';
import type { FieldCause, SchemaNode } from './schema.ts';
import { applyDefaults, prune, validateCel, validateSchema } from './schema.ts';

const schema: SchemaNode = {
  type: 'object',
  properties: {
    spec: {
      type: 'object',
      required: ['size'],
      properties: {
        size: { type: 'integer', minimum: 1, maximum: 10 },
        mode: { type: 'string', enum: ['a', 'b'], default: 'a' },
        name: { type: 'string', maxLength: 5, pattern: '^[a-z]+$' },
        when: { type: 'string', format: 'date-time' },
        tags: { type: 'array', maxItems: 2, items: { type: 'string' }, 'x-kubernetes-list-type': 'set' },
        limits: { type: 'object', properties: { burst: { type: 'integer', default: 5 } }, default: {} },
        free: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
        port: { 'x-kubernetes-int-or-string': true },
      },
      'x-kubernetes-validations': [{ rule: 'self.size >= oldSelf.size', message: 'size may only grow' }],
    },
  },
};

function check(obj: unknown, old?: unknown): string[] {
  const causes: FieldCause[] = [];
  validateSchema(obj, schema, '', causes);
  if (causes.length === 0) validateCel(obj, old, schema, '', causes);
  return causes.map((c) => `${c.field}: ${c.message}`);
}

describe('admission on a structural schema', () => {
  it('prunes undeclared fields except under x-kubernetes-preserve-unknown-fields, never metadata', () => {
    const obj = { apiVersion: 'x/v1', kind: 'X', metadata: { name: 'n', labels: { a: 'b' } }, spec: { size: 1, extra: 1, free: { anything: [1] }, limits: { burst: 1, nope: true } }, other: {} };
    expect(prune(obj, schema).sort()).toEqual(['other', 'spec.extra', 'spec.limits.nope']);
    expect(obj).toEqual({ apiVersion: 'x/v1', kind: 'X', metadata: { name: 'n', labels: { a: 'b' } }, spec: { size: 1, free: { anything: [1] }, limits: { burst: 1 } } });
  });

  it('applies defaults, including inside a defaulted object', () => {
    const obj = { spec: { size: 1 } };
    applyDefaults(obj, schema);
    expect(obj).toEqual({ spec: { size: 1, mode: 'a', limits: { burst: 5 } } });
  });

  it('answers with the server field errors', () => {
    expect(check({ spec: {} })).toEqual(['spec.size: Required value']);
    expect(check({ spec: { size: 11, mode: 'c', name: 'toolong', when: 'soon', tags: ['x', 'x', 'y'], port: true } })).toEqual([
      'spec.size: Invalid value: 11: spec.size in body should be less than or equal to 10',
      'spec.mode: Unsupported value: "c": supported values: "a", "b"',
      'spec.name: Too long: may not be more than 5 bytes',
      'spec.when: Invalid value: "soon": spec.when in body must be of type date-time: "soon"',
      'spec.tags: Too many: 3: must have at most 2 items',
      'spec.tags[1]: Duplicate value: "x"',
      'spec.port: Invalid value: true: spec.port in body must be of type int-or-string: "boolean"',
    ]);
    expect(check({ spec: { size: '3' } })).toEqual(['spec.size: Invalid value: "string": spec.size in body must be of type integer: "string"']);
    expect(check({ spec: { size: 2, name: 'A1' } })).toEqual([`spec.name: Invalid value: "A1": spec.name in body should match '^[a-z]+$'`]);
  });

  it('evaluates transition rules only against an old object', () => {
    expect(check({ spec: { size: 2 } })).toEqual([]);
    expect(check({ spec: { size: 2 } }, { spec: { size: 3 } })).toEqual(['spec: Invalid value: "object": size may only grow']);
    expect(check({ spec: { size: 4, port: 'http' } }, { spec: { size: 3 } })).toEqual([]);
  });
});
