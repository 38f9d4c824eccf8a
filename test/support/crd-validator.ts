// Validates tollgate custom resources the way the API server would at `kubectl apply`:
// - the CRD's OpenAPI v3 schema with ajv, unknown fields rejected as kubectl's default `--validate=strict` does;
// - every `x-kubernetes-validations` CEL rule, evaluated by a real CEL interpreter (@bufbuild/cel) with `self`
//   (and `oldSelf` for transition rules on update) bound as the API server binds them: integers as int,
//   null-valued fields absent.
// Not modelled: the API server's CEL type checker and cost estimator, defaulting, and metadata validation.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { celEnv, celMethod, CelScalar, isCelError, listType, parse, plan, type CelInput } from '@bufbuild/cel';
import { strings } from '@bufbuild/cel/ext';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import ajvFormats from 'ajv-formats';
import { parse as parseYaml } from 'yaml';

interface RuleDef { rule: string; message: string; fieldPath?: string }
interface SchemaNode {
  type?: string;
  properties?: Record<string, SchemaNode>;
  additionalProperties?: SchemaNode | boolean;
  items?: SchemaNode;
  'x-kubernetes-validations'?: RuleDef[];
  'x-kubernetes-preserve-unknown-fields'?: boolean;
  [key: string]: unknown;
}

export interface CustomResource {
  apiVersion: string;
  kind: string;
  metadata?: { name?: string; [key: string]: unknown };
  spec?: unknown;
  status?: unknown;
}

// SHIM, labelled: `isSorted()` comes from the Kubernetes CEL list library, which no npm CEL interpreter ships.
// This is its documented meaning for a list of ints: every element <= the next one.
const isSorted = celMethod('isSorted', listType(CelScalar.INT), [], CelScalar.BOOL, function () {
  let prev: bigint | undefined;
  for (const v of this) {
    const n = v as bigint;
    if (prev !== undefined && prev > n) return false;
    prev = n;
  }
  return true;
});

// cel-go's strings extension (lowerAscii, ...) is part of the Kubernetes CEL environment; Buf ships the same.
const env = celEnv({ funcs: [...strings, isSorted] });

type Program = (bindings: Record<string, CelInput>) => unknown;
const programs = new Map<string, Program>();

export function compileRule(rule: string): Program {
  let program = programs.get(rule);
  if (!program) {
    program = plan(env, parse(rule)) as Program;
    programs.set(rule, program);
  }
  return program;
}

/** The value `self` is bound to: ints as bigint, nulls dropped (the API server treats them as absent). */
/** What CEL binding needs of a structural schema (both this validator's and the fake API server's nodes fit). */
interface CelSchema {
  type?: string;
  properties?: Record<string, CelSchema>;
  additionalProperties?: CelSchema | boolean;
  items?: CelSchema;
}

/** A JSON value as CEL sees it under `schema` (integers as BigInt, nulls dropped); also used by the fake API server. */
export function toCel(value: unknown, schema: CelSchema): CelInput {
  if (value === null || value === undefined) return null;
  if (schema.type === 'integer' && typeof value === 'number') return BigInt(value);
  if (Array.isArray(value)) return value.map((v) => toCel(v, schema.items ?? {}));
  if (typeof value === 'object') {
    const out: Record<string, CelInput> = {};
    for (const [k, v] of Object.entries(value)) {
      if (v === null || v === undefined) continue;
      const child = schema.properties?.[k] ?? (typeof schema.additionalProperties === 'object' ? schema.additionalProperties : {});
      out[k] = toCel(v, child);
    }
    return out as CelInput;
  }
  return value as CelInput;
}

function celTypeName(schema: SchemaNode): string {
  return schema.type ?? 'object';
}

function evaluateRules(schema: SchemaNode, value: unknown, old: unknown, path: string, errors: string[]): void {
  if (value === undefined || value === null) return;
  for (const r of schema['x-kubernetes-validations'] ?? []) {
    const transition = /\boldSelf\b/.test(r.rule);
    if (transition && (old === undefined || old === null)) continue;
    const bindings: Record<string, CelInput> = { self: toCel(value, schema) };
    if (transition) bindings.oldSelf = toCel(old, schema);
    const result = compileRule(r.rule)(bindings);
    const field = path + (r.fieldPath ?? '');
    if (isCelError(result)) errors.push(`${field}: Invalid value: "${celTypeName(schema)}": rule evaluation error (${result.message}): ${r.rule}`);
    else if (result !== true) errors.push(`${field}: Invalid value: "${celTypeName(schema)}": ${r.message}`);
  }
  if (schema.properties && typeof value === 'object' && !Array.isArray(value)) {
    for (const [k, child] of Object.entries(schema.properties)) {
      const o = old && typeof old === 'object' ? (old as Record<string, unknown>)[k] : undefined;
      evaluateRules(child, (value as Record<string, unknown>)[k], o, `${path}.${k}`, errors);
    }
  } else if (typeof schema.additionalProperties === 'object' && typeof value === 'object' && !Array.isArray(value)) {
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) evaluateRules(schema.additionalProperties, v, undefined, `${path}[${k}]`, errors);
  } else if (schema.items && Array.isArray(value)) {
    // Transition rules inside lists are only correlated for map/set lists; ours have none, so no oldSelf here.
    value.forEach((v, i) => evaluateRules(schema.items as SchemaNode, v, undefined, `${path}[${i}]`, errors));
  }
}

/** kubectl's strict field validation, emulated: an object with declared properties takes no others. */
function strictCopy(schema: SchemaNode): SchemaNode {
  const out: SchemaNode = { ...schema };
  if (schema.properties) {
    out.properties = Object.fromEntries(Object.entries(schema.properties).map(([k, v]) => [k, strictCopy(v)]));
    if (schema.additionalProperties === undefined && !schema['x-kubernetes-preserve-unknown-fields']) out.additionalProperties = false;
  }
  if (schema.items) out.items = strictCopy(schema.items);
  if (typeof schema.additionalProperties === 'object') out.additionalProperties = strictCopy(schema.additionalProperties);
  return out;
}

function fieldOf(instancePath: string): string {
  return instancePath.replace(/^\//, '').split('/').map((p) => (/^\d+$/.test(p) ? `[${p}]` : `.${p}`)).join('').replace(/^\./, '');
}

function formatAjvError(e: ErrorObject): string {
  const field = fieldOf(e.instancePath);
  if (e.keyword === 'additionalProperties') return `unknown field "${field ? `${field}.` : ''}${(e.params as { additionalProperty: string }).additionalProperty}"`;
  if (e.keyword === 'enum') return `${field}: Unsupported value: ${JSON.stringify(e.data)}: supported values: ${(e.params as { allowedValues: unknown[] }).allowedValues.map((v) => JSON.stringify(v)).join(', ')}`;
  if (e.keyword === 'required') return `${field ? `${field}.` : ''}${(e.params as { missingProperty: string }).missingProperty}: Required value`;
  return `${field}: Invalid value: ${JSON.stringify(e.data)}: ${e.message}`;
}

interface LoadedCrd { kind: string; apiVersion: string; schema: SchemaNode; validate: ValidateFunction }

export class CrdValidator {
  readonly crds = new Map<string, LoadedCrd>();

  constructor(crdObjects: Record<string, unknown>[]) {
    const ajv = new Ajv({ allErrors: true, strict: false, verbose: true });
    // ajv-formats is CommonJS: under NodeNext its callable is the module's `default`.
    (ajvFormats as unknown as { default: (a: Ajv) => void }).default(ajv);
    // Kubernetes' integer formats carry no extra rule beyond the type.
    for (const f of ['int32', 'int64', 'float', 'double']) ajv.addFormat(f, { type: 'number', validate: () => true });
    for (const crd of crdObjects) {
      const spec = crd.spec as { group: string; names: { kind: string }; versions: { name: string; schema: { openAPIV3Schema: SchemaNode } }[] };
      for (const v of spec.versions) {
        const apiVersion = `${spec.group}/${v.name}`;
        const schema = v.schema.openAPIV3Schema;
        this.crds.set(`${apiVersion}/${spec.names.kind}`, { kind: spec.names.kind, apiVersion, schema, validate: ajv.compile(strictCopy(schema)) });
      }
    }
  }

  static fromDirectory(dir = 'crds'): CrdValidator {
    const files = readdirSync(dir).filter((f) => f.endsWith('.yaml'));
    return new CrdValidator(files.map((f) => parseYaml(readFileSync(join(dir, f), 'utf8')) as Record<string, unknown>));
  }

  has(obj: { apiVersion?: unknown; kind?: unknown }): boolean {
    return this.crds.has(`${obj.apiVersion}/${obj.kind}`);
  }

  /** The API server's answer as a list of field errors; empty when the object would be accepted. `old` makes it an update. */
  validate(obj: CustomResource, old?: CustomResource): string[] {
    const crd = this.crds.get(`${obj.apiVersion}/${obj.kind}`);
    if (!crd) return [`no CRD for ${obj.apiVersion} ${obj.kind}`];
    if (!crd.validate(obj)) return (crd.validate.errors ?? []).map(formatAjvError);
    const errors: string[] = [];
    evaluateRules(crd.schema, obj, old, '', errors);
    return errors.map((e) => e.replace(/^\./, ''));
  }
}
