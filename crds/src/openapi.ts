// The subset of OpenAPI v3 that a structural CRD schema may use, plus small builders that make a doc
// string mandatory: every field's description becomes `kubectl explain` output.

export interface CelRule {
  rule: string;
  message: string;
  /** JSONPath (relative to the node) the error is reported on, e.g. `.alias`. */
  fieldPath?: string;
  reason?: 'FieldValueInvalid' | 'FieldValueForbidden' | 'FieldValueRequired' | 'FieldValueDuplicate';
}

export interface Schema {
  type: 'object' | 'array' | 'string' | 'integer' | 'number' | 'boolean';
  description?: string;
  properties?: Record<string, Schema>;
  required?: string[];
  additionalProperties?: Schema;
  items?: Schema;
  enum?: (string | number)[];
  format?: string;
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  minItems?: number;
  maxItems?: number;
  maxProperties?: number;
  nullable?: boolean;
  default?: unknown;
  'x-kubernetes-list-type'?: 'atomic' | 'set' | 'map';
  'x-kubernetes-list-map-keys'?: string[];
  'x-kubernetes-validations'?: CelRule[];
}

type Extra = Omit<Schema, 'type' | 'description' | 'properties' | 'required' | 'items'>;

export function str(description: string, extra: Extra = {}): Schema {
  return { type: 'string', description, ...extra };
}

export function int(description: string, extra: Extra = {}): Schema {
  return { type: 'integer', format: 'int64', description, ...extra };
}

export function bool(description: string, extra: Extra = {}): Schema {
  return { type: 'boolean', description, ...extra };
}

export function list(description: string, items: Schema, extra: Extra = {}): Schema {
  return { type: 'array', description, items, ...extra };
}

/** An object with declared properties; `required` lists the ones a user must write. */
export function obj(description: string, properties: Record<string, Schema>, required: string[] = [], extra: Extra = {}): Schema {
  for (const name of required) if (!(name in properties)) throw new Error(`required field "${name}" is not declared`);
  const schema: Schema = { type: 'object', description, properties };
  if (required.length > 0) schema.required = required;
  return { ...schema, ...extra };
}

/** A string-to-string map (`additionalProperties`), e.g. extra headers. */
export function stringMap(description: string, valueDescription: string, extra: Extra = {}): Schema {
  return { type: 'object', description, additionalProperties: str(valueDescription, { maxLength: 4096 }), ...extra };
}
