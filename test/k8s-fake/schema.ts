// Admission for custom resources the way the API server does it, in its order: unknown fields (an error under
// fieldValidation=Strict, otherwise pruned and reported as warnings), defaults, the structural OpenAPI schema,
// then the CEL x-kubernetes-validations (evaluated by @bufbuild/cel through the same rule compiler the CRD tests
// use). Messages follow the server's field-error shape: `<path>: <Invalid value|Required value|...>: <detail>`.
import { isCelError, type CelInput } from '@bufbuild/cel';
import { compileRule, toCel } from '../support/crd-validator.ts';

export interface SchemaNode {
  type?: string;
  description?: string;
  properties?: Record<string, SchemaNode>;
  additionalProperties?: SchemaNode | boolean;
  items?: SchemaNode;
  required?: string[];
  enum?: unknown[];
  pattern?: string;
  format?: string;
  default?: unknown;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: boolean;
  exclusiveMaximum?: boolean;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  minProperties?: number;
  maxProperties?: number;
  nullable?: boolean;
  'x-kubernetes-validations'?: { rule: string; message?: string; fieldPath?: string; reason?: string }[];
  'x-kubernetes-preserve-unknown-fields'?: boolean;
  'x-kubernetes-int-or-string'?: boolean;
  'x-kubernetes-embedded-resource'?: boolean;
  'x-kubernetes-list-type'?: string;
  'x-kubernetes-list-map-keys'?: string[];
  [key: string]: unknown;
}

/** One field error, as the server lists it in Status.details.causes. */
export interface FieldCause {
  reason: string;
  field: string;
  message: string;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);
const join = (path: string, key: string) => (path ? `${path}.${key}` : key);

/** Removes fields the schema does not declare; returns their paths (metadata is the server's, never pruned). */
export function prune(value: unknown, schema: SchemaNode, path = ''): string[] {
  const dropped: string[] = [];
  walkPrune(value, schema, path, dropped);
  return dropped;
}

function walkPrune(value: unknown, schema: SchemaNode, path: string, dropped: string[]): void {
  if (schema['x-kubernetes-embedded-resource']) return;
  if (Array.isArray(value)) {
    if (schema.items) value.forEach((v, i) => walkPrune(v, schema.items!, `${path}[${i}]`, dropped));
    return;
  }
  if (!isObj(value)) return;
  const preserve = schema['x-kubernetes-preserve-unknown-fields'] === true;
  for (const key of Object.keys(value)) {
    if (path === '' && (key === 'apiVersion' || key === 'kind' || key === 'metadata')) continue;
    const child = schema.properties?.[key] ?? (isObj(schema.additionalProperties) ? schema.additionalProperties : undefined);
    if (child) walkPrune(value[key], child, join(path, key), dropped);
    else if (!preserve && schema.additionalProperties !== true) {
      dropped.push(join(path, key));
      delete value[key];
    }
  }
}

/** Fills absent fields that declare a default, after pruning, as the server does on every write and read. */
export function applyDefaults(value: unknown, schema: SchemaNode): void {
  if (Array.isArray(value)) {
    if (schema.items) for (const v of value) applyDefaults(v, schema.items);
    return;
  }
  if (!isObj(value)) return;
  for (const [key, child] of Object.entries(schema.properties ?? {})) {
    if (value[key] === undefined && child.default !== undefined) value[key] = structuredClone(child.default);
    if (value[key] !== undefined) applyDefaults(value[key], child);
  }
  if (isObj(schema.additionalProperties)) for (const [key, v] of Object.entries(value)) if (!schema.properties?.[key]) applyDefaults(v, schema.additionalProperties);
}

const typeName = (v: unknown): string => (v === null ? 'null' : Array.isArray(v) ? 'array' : Number.isInteger(v) ? 'integer' : typeof v === 'number' ? 'number' : typeof v === 'object' ? 'object' : typeof v);
const shown = (v: unknown): string => (typeof v === 'string' ? JSON.stringify(v) : isObj(v) || Array.isArray(v) ? `"${typeName(v)}"` : String(v));

const DATE_TIME = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;
const FORMATS: Record<string, (s: string) => boolean> = {
  'date-time': (s) => DATE_TIME.test(s) && !Number.isNaN(Date.parse(s.replace(' ', 'T'))),
  date: (s) => /^\d{4}-\d{2}-\d{2}$/.test(s) && !Number.isNaN(Date.parse(s)),
  uri: (s) => {
    try {
      return new URL(s).protocol.length > 1;
    } catch {
      return false;
    }
  },
  uuid: (s) => /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(s),
  byte: (s) => /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(s),
};

/** The structural schema's checks, with the server's messages. */
export function validateSchema(value: unknown, schema: SchemaNode, path: string, causes: FieldCause[]): void {
  const invalid = (detail: string) => causes.push({ reason: 'FieldValueInvalid', field: path, message: `Invalid value: ${shown(value)}: ${detail}` });
  if (value === null) {
    if (!schema.nullable) invalid(`${path} in body must be of type ${schema.type ?? 'object'}: "null"`);
    return;
  }
  const t = typeName(value);
  if (schema['x-kubernetes-int-or-string']) {
    if (t !== 'integer' && t !== 'string') invalid(`${path} in body must be of type int-or-string: "${t}"`);
  } else if (schema.type && !(schema.type === t || (schema.type === 'number' && t === 'integer'))) {
    causes.push({ reason: 'FieldValueTypeInvalid', field: path, message: `Invalid value: "${t}": ${path} in body must be of type ${schema.type}: "${t}"` });
    return;
  }
  if (schema.enum && !schema.enum.some((e) => JSON.stringify(e) === JSON.stringify(value))) {
    causes.push({ reason: 'FieldValueNotSupported', field: path, message: `Unsupported value: ${JSON.stringify(value)}: supported values: ${schema.enum.map((e) => JSON.stringify(e)).join(', ')}` });
  }
  if (typeof value === 'string') {
    const len = [...value].length;
    if (schema.maxLength !== undefined && len > schema.maxLength) causes.push({ reason: 'FieldValueTooLong', field: path, message: `Too long: may not be more than ${schema.maxLength} bytes` });
    if (schema.minLength !== undefined && len < schema.minLength) invalid(`${path} in body should be at least ${schema.minLength} chars long`);
    if (schema.pattern !== undefined && !new RegExp(schema.pattern, 'u').test(value)) invalid(`${path} in body should match '${schema.pattern}'`);
    const fmt = schema.format ? FORMATS[schema.format] : undefined;
    if (fmt && !fmt(value)) invalid(`${path} in body must be of type ${schema.format}: ${JSON.stringify(value)}`);
  }
  if (typeof value === 'number') {
    if (schema.maximum !== undefined && (schema.exclusiveMaximum ? value >= schema.maximum : value > schema.maximum)) invalid(`${path} in body should be less than ${schema.exclusiveMaximum ? '' : 'or equal to '}${schema.maximum}`);
    if (schema.minimum !== undefined && (schema.exclusiveMinimum ? value <= schema.minimum : value < schema.minimum)) invalid(`${path} in body should be greater than ${schema.exclusiveMinimum ? '' : 'or equal to '}${schema.minimum}`);
  }
  if (Array.isArray(value)) {
    if (schema.maxItems !== undefined && value.length > schema.maxItems) causes.push({ reason: 'FieldValueTooMany', field: path, message: `Too many: ${value.length}: must have at most ${schema.maxItems} items` });
    if (schema.minItems !== undefined && value.length < schema.minItems) invalid(`${path} in body should have at least ${schema.minItems} items`);
    const listType = schema['x-kubernetes-list-type'];
    if (listType === 'set' || listType === 'map') {
      const keys = listType === 'set' ? value.map((v) => JSON.stringify(v)) : value.map((v) => JSON.stringify((schema['x-kubernetes-list-map-keys'] ?? []).map((k) => (isObj(v) ? v[k] : undefined))));
      keys.forEach((k, i) => {
        if (keys.indexOf(k) !== i) causes.push({ reason: 'FieldValueDuplicate', field: `${path}[${i}]`, message: `Duplicate value: ${listType === 'set' ? JSON.stringify(value[i]) : k}` });
      });
    }
    if (schema.items) value.forEach((v, i) => validateSchema(v, schema.items!, `${path}[${i}]`, causes));
  }
  if (isObj(value)) {
    for (const r of schema.required ?? []) if (value[r] === undefined) causes.push({ reason: 'FieldValueRequired', field: join(path, r), message: 'Required value' });
    const n = Object.keys(value).length;
    if (schema.maxProperties !== undefined && n > schema.maxProperties) causes.push({ reason: 'FieldValueTooMany', field: path, message: `Too many: ${n}: must have at most ${schema.maxProperties} items` });
    if (schema.minProperties !== undefined && n < schema.minProperties) invalid(`${path} in body should have at least ${schema.minProperties} properties`);
    for (const [k, v] of Object.entries(value)) {
      if (path === '' && (k === 'metadata' || k === 'apiVersion' || k === 'kind')) continue;
      const child = schema.properties?.[k] ?? (isObj(schema.additionalProperties) ? schema.additionalProperties : undefined);
      if (child && v !== undefined) validateSchema(v, child, join(path, k), causes);
    }
  }
}


/** Every x-kubernetes-validations rule under schema; transition rules (oldSelf) only where an old value correlates. */
export function validateCel(value: unknown, old: unknown, schema: SchemaNode, path: string, causes: FieldCause[]): void {
  if (value === undefined || value === null) return;
  for (const r of schema['x-kubernetes-validations'] ?? []) {
    const transition = /\boldSelf\b/.test(r.rule);
    if (transition && (old === undefined || old === null)) continue;
    const bindings: Record<string, CelInput> = { self: toCel(value, schema) };
    if (transition) bindings.oldSelf = toCel(old, schema);
    let result: unknown;
    try {
      result = compileRule(r.rule)(bindings);
    } catch (err) {
      result = err;
    }
    const field = path + (r.fieldPath ?? '');
    const type = schema.type ?? 'object';
    if (isCelError(result) || result instanceof Error) causes.push({ reason: 'FieldValueInvalid', field, message: `Invalid value: "${type}": rule evaluation error: ${(result as Error).message}` });
    else if (result !== true) causes.push({ reason: r.reason ?? 'FieldValueInvalid', field, message: `Invalid value: "${type}": ${r.message ?? `failed rule: ${r.rule}`}` });
  }
  if (isObj(value)) {
    const oldObj = isObj(old) ? old : undefined;
    for (const [k, v] of Object.entries(value)) {
      if (path === '' && (k === 'metadata' || k === 'apiVersion' || k === 'kind')) continue;
      const child = schema.properties?.[k] ?? (isObj(schema.additionalProperties) ? schema.additionalProperties : undefined);
      if (child) validateCel(v, oldObj?.[k], child, schema.properties?.[k] ? join(path, k) : `${path}[${k}]`, causes);
    }
  } else if (Array.isArray(value) && schema.items) {
    // Old list items correlate only for map lists (by their keys), as on the server.
    const keys = schema['x-kubernetes-list-type'] === 'map' ? (schema['x-kubernetes-list-map-keys'] ?? []) : undefined;
    const keyOf = (v: unknown) => JSON.stringify(keys!.map((k) => (isObj(v) ? v[k] : undefined)));
    const olds = keys && Array.isArray(old) ? new Map(old.map((o) => [keyOf(o), o])) : undefined;
    value.forEach((v, i) => validateCel(v, olds?.get(keyOf(v)), schema.items!, `${path}[${i}]`, causes));
  }
}
