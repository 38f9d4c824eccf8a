// The kinds the fake API server serves: the core objects the operator, the gateway and kubectl touch, plus every
// CustomResourceDefinition, installed from crds/ at start or created through the API (kubectl apply -f crds/).
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import type { SchemaNode } from './schema.ts';

export interface PrinterColumn {
  name: string;
  type: string;
  jsonPath: string;
  description?: string;
  format?: string;
  priority?: number;
}

export interface ResourceType {
  group: string;
  version: string;
  plural: string;
  singular: string;
  kind: string;
  namespaced: boolean;
  shortNames: string[];
  categories: string[];
  /** Has a status subresource: main-resource writes ignore status, /status writes ignore everything else. */
  status: boolean;
  /** metadata.generation is kept and bumped on spec changes (custom resources). */
  generation: boolean;
  /** Custom resources need metadata.resourceVersion on PUT; core kinds accept unconditional updates. */
  requireRvOnUpdate: boolean;
  /** A CRD's columns for `kubectl get` (Table output); core kinds have their own in table.ts. */
  printerColumns?: PrinterColumn[];
  /** A CRD's structural schema: admission (in strict mode), OpenAPI documents and `kubectl explain`. */
  schema?: SchemaNode;
}

const core = (group: string, version: string, plural: string, kind: string, extra: Partial<ResourceType> = {}): ResourceType => ({
  group,
  version,
  plural,
  singular: kind.toLowerCase(),
  kind,
  namespaced: true,
  shortNames: [],
  categories: [],
  status: false,
  generation: false,
  requireRvOnUpdate: false,
  ...extra,
});

export const CORE_TYPES: ResourceType[] = [
  core('', 'v1', 'namespaces', 'Namespace', { namespaced: false, shortNames: ['ns'], status: true }),
  core('', 'v1', 'secrets', 'Secret'),
  core('', 'v1', 'configmaps', 'ConfigMap', { shortNames: ['cm'] }),
  core('', 'v1', 'events', 'Event', { shortNames: ['ev'] }),
  core('', 'v1', 'pods', 'Pod', { shortNames: ['po'], categories: ['all'], status: true }),
  core('coordination.k8s.io', 'v1', 'leases', 'Lease'),
  core('events.k8s.io', 'v1', 'events', 'Event', { shortNames: ['ev'] }),
  core('apiextensions.k8s.io', 'v1', 'customresourcedefinitions', 'CustomResourceDefinition', { namespaced: false, shortNames: ['crd', 'crds'], categories: ['api-extensions'], status: true, generation: true }),
];

export interface CrdObject {
  metadata?: { name?: string };
  spec: {
    group: string;
    scope: 'Namespaced' | 'Cluster';
    names: { kind: string; plural: string; singular?: string; shortNames?: string[]; categories?: string[]; listKind?: string };
    versions: { name: string; served: boolean; storage?: boolean; subresources?: { status?: object }; additionalPrinterColumns?: PrinterColumn[]; schema?: { openAPIV3Schema?: SchemaNode } }[];
  };
}

/** The served versions of a CRD as resource types (the storage version first). */
export function typesOfCrd(crd: CrdObject): ResourceType[] {
  const { group, names, scope } = crd.spec;
  const versions = [...crd.spec.versions].filter((v) => v.served).sort((a, b) => Number(b.storage ?? false) - Number(a.storage ?? false));
  return versions.map((v) => ({
    group,
    version: v.name,
    plural: names.plural,
    singular: names.singular ?? names.kind.toLowerCase(),
    kind: names.kind,
    namespaced: scope !== 'Cluster',
    shortNames: names.shortNames ?? [],
    categories: names.categories ?? [],
    status: v.subresources?.status !== undefined,
    generation: true,
    requireRvOnUpdate: true,
    printerColumns: v.additionalPrinterColumns ?? [],
    schema: v.schema?.openAPIV3Schema,
  }));
}

const CRD_DIR = resolve(import.meta.dirname, '../../crds');

/** tollgate's CRDs as shipped in crds/, read once: a fresh fake server starts with them installed. */
export const TOLLGATE_CRDS: CrdObject[] = readdirSync(CRD_DIR)
  .filter((f) => f.endsWith('.yaml'))
  .sort()
  .map((f) => parseYaml(readFileSync(join(CRD_DIR, f), 'utf8')) as CrdObject);

export function apiVersionOf(t: { group: string; version: string }): string {
  return t.group ? `${t.group}/${t.version}` : t.version;
}

export function typeKey(t: { group: string; version: string; plural: string }): string {
  return `${t.group}/${t.version}/${t.plural}`;
}
