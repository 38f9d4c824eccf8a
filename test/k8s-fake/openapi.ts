// OpenAPI documents built from the served types: /openapi/v3 (what kubectl 1.31 uses for `explain`, for deciding
// that the server validates fields itself, fieldValidation=Strict, and for --dry-run=server) and /openapi/v2 as
// JSON. Custom resources carry their CRD schema; core kinds a small schema of their well-known fields.
import { createHash } from 'node:crypto';
import type { SchemaNode } from './schema.ts';
import type { ResourceType } from './resources.ts';
import { apiVersionOf } from './resources.ts';

const OBJECT_META_REF = 'io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta';

const OBJECT_META: SchemaNode = {
  type: 'object',
  description: 'ObjectMeta is metadata that all persisted resources must have, which includes all objects users must create.',
  properties: {
    name: { type: 'string', description: 'Name must be unique within a namespace.' },
    namespace: { type: 'string', description: 'Namespace defines the space within which each name must be unique.' },
    labels: { type: 'object', additionalProperties: { type: 'string' }, description: 'Map of string keys and values that can be used to organize and categorize (scope and select) objects.' },
    annotations: { type: 'object', additionalProperties: { type: 'string' }, description: 'Annotations is an unstructured key value map stored with a resource.' },
    resourceVersion: { type: 'string', description: 'An opaque value that represents the internal version of this object.' },
    uid: { type: 'string', description: 'UID is the unique in time and space value for this object.' },
    generation: { type: 'integer', format: 'int64', description: 'A sequence number representing a specific generation of the desired state.' },
    creationTimestamp: { type: 'string', format: 'date-time', description: 'CreationTimestamp is a timestamp representing the server time when this object was created.' },
    deletionTimestamp: { type: 'string', format: 'date-time', description: 'DeletionTimestamp is RFC 3339 date and time at which this resource will be deleted.' },
    finalizers: { type: 'array', items: { type: 'string' }, description: 'Must be empty before the object is deleted from the registry.' },
  },
};

const str = (description: string): SchemaNode => ({ type: 'string', description });
const map = (description: string): SchemaNode => ({ type: 'object', additionalProperties: { type: 'string' }, description });

const CORE_SCHEMAS: Record<string, SchemaNode> = {
  Secret: { type: 'object', description: 'Secret holds secret data of a certain type.', properties: { data: map('Data contains the secret data, base64 encoded.'), stringData: map('stringData allows specifying non-binary secret data in string form; write-only.'), type: str('Used to facilitate programmatic handling of secret data.'), immutable: { type: 'boolean', description: 'Immutable, if set to true, ensures that data stored in the Secret cannot be updated.' } } },
  ConfigMap: { type: 'object', description: 'ConfigMap holds configuration data for pods to consume.', properties: { data: map('Data contains the configuration data.'), binaryData: map('BinaryData contains the binary data.') } },
  Namespace: { type: 'object', description: 'Namespace provides a scope for Names.', properties: { spec: { type: 'object', properties: { finalizers: { type: 'array', items: { type: 'string' } } } }, status: { type: 'object', properties: { phase: str('Phase is the current lifecycle phase of the namespace.') } } } },
  Lease: { type: 'object', description: 'Lease defines a lease concept.', properties: { spec: { type: 'object', properties: { holderIdentity: str('holderIdentity contains the identity of the holder of a current lease.'), leaseDurationSeconds: { type: 'integer', format: 'int32' }, acquireTime: str(''), renewTime: str(''), leaseTransitions: { type: 'integer', format: 'int32' } } } } },
};

/** The reverse-domain name the server gives a kind's schema: dev.tollgate.v1alpha1.Model, io.k8s.api.core.v1.Secret. */
export function definitionName(t: ResourceType): string {
  if (t.group === '') return `io.k8s.api.core.v1.${t.kind}`;
  if (t.group.endsWith('.k8s.io')) return `io.k8s.api.${t.group.slice(0, -'.k8s.io'.length)}.${t.version}.${t.kind}`;
  return `${t.group.split('.').reverse().join('.')}.${t.version}.${t.kind}`;
}

function kindSchema(t: ResourceType, ref: (name: string) => string): SchemaNode {
  const base = t.schema ?? CORE_SCHEMAS[t.kind] ?? { type: 'object', description: `${t.kind}.` };
  const gvk = [{ group: t.group, version: t.version, kind: t.kind }];
  return {
    ...base,
    type: 'object',
    properties: {
      apiVersion: str('APIVersion defines the versioned schema of this representation of an object.'),
      kind: str('Kind is a string value representing the REST resource this object represents.'),
      ...base.properties,
      metadata: { description: 'Standard object metadata.', allOf: [{ $ref: ref(OBJECT_META_REF) }] },
    },
    'x-kubernetes-group-version-kind': gvk,
  };
}

const QUERY_PARAMS = ['dryRun', 'fieldManager', 'fieldValidation', 'force', 'pretty'].map((name) => ({ name, in: 'query', schema: { type: name === 'force' ? 'boolean' : 'string' }, uniqueItems: true }));

function itemPath(t: ResourceType): string {
  const prefix = t.group === '' ? `/api/${t.version}` : `/apis/${t.group}/${t.version}`;
  return t.namespaced ? `${prefix}/namespaces/{namespace}/${t.plural}/{name}` : `${prefix}/${t.plural}/{name}`;
}

/** One group version's OpenAPI v3 document. */
export function openApiV3(types: ResourceType[]): object {
  const ref = (name: string) => `#/components/schemas/${name}`;
  const paths: Record<string, object> = {};
  const schemas: Record<string, object> = { [OBJECT_META_REF]: OBJECT_META };
  for (const t of types) {
    const name = definitionName(t);
    schemas[name] = kindSchema(t, ref);
    const gvk = { group: t.group, version: t.version, kind: t.kind };
    const body = { schema: { $ref: ref(name) } };
    const patchTypes = ['application/json-patch+json', 'application/merge-patch+json', 'application/apply-patch+yaml'];
    paths[itemPath(t)] = {
      get: { operationId: `read${t.kind}`, 'x-kubernetes-action': 'get', 'x-kubernetes-group-version-kind': gvk, responses: { '200': { content: { 'application/json': body } } } },
      put: { operationId: `replace${t.kind}`, 'x-kubernetes-action': 'put', 'x-kubernetes-group-version-kind': gvk, parameters: QUERY_PARAMS, requestBody: { content: { '*/*': body } } },
      patch: { operationId: `patch${t.kind}`, 'x-kubernetes-action': 'patch', 'x-kubernetes-group-version-kind': gvk, parameters: QUERY_PARAMS, requestBody: { content: Object.fromEntries(patchTypes.map((p) => [p, { schema: { type: 'object' } }])) } },
      delete: { operationId: `delete${t.kind}`, 'x-kubernetes-action': 'delete', 'x-kubernetes-group-version-kind': gvk, parameters: QUERY_PARAMS.filter((p) => p.name === 'dryRun') },
    };
  }
  return { openapi: '3.0.0', info: { title: 'Kubernetes', version: 'v1.31.0' }, paths, components: { schemas } };
}

/** The /openapi/v3 index: one entry per group version, each with a hash of its document for client caches. */
export function openApiV3Index(byGv: Map<string, ResourceType[]>): object {
  const paths: Record<string, object> = {};
  for (const [gv, types] of byGv) {
    const rel = gv.includes('/') ? `apis/${gv}` : `api/${gv}`;
    const hash = createHash('sha512').update(JSON.stringify(openApiV3(types))).digest('hex').slice(0, 64).toUpperCase();
    paths[rel] = { serverRelativeURL: `/openapi/v3/${rel}?hash=${hash}` };
  }
  return { paths };
}

/** The whole API as one Swagger 2.0 document (JSON only: the protobuf form is not served). */
export function openApiV2(types: ResourceType[]): object {
  const ref = (name: string) => `#/definitions/${name}`;
  const definitions: Record<string, object> = { [OBJECT_META_REF]: OBJECT_META };
  const paths: Record<string, object> = {};
  for (const t of types) {
    definitions[definitionName(t)] = kindSchema(t, ref);
    const gvk = { group: t.group, version: t.version, kind: t.kind };
    paths[itemPath(t)] = { patch: { 'x-kubernetes-action': 'patch', 'x-kubernetes-group-version-kind': gvk, parameters: QUERY_PARAMS.map(({ schema, ...p }) => ({ ...p, type: schema.type })), consumes: ['application/json-patch+json', 'application/merge-patch+json', 'application/apply-patch+yaml'] } };
  }
  return { swagger: '2.0', info: { title: 'Kubernetes', version: 'v1.31.0' }, paths, definitions };
}

export const byGroupVersion = (types: ResourceType[]): Map<string, ResourceType[]> => {
  const out = new Map<string, ResourceType[]>();
  for (const t of types) out.set(apiVersionOf(t), [...(out.get(apiVersionOf(t)) ?? []), t]);
  return out;
};
