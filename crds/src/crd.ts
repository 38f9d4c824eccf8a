// Turns one kind's definition into an apiextensions.k8s.io/v1 CustomResourceDefinition object.
import { CATEGORY, GROUP, VERSION } from './common.ts';
import { obj, str, type Schema } from './openapi.ts';

export interface PrinterColumn {
  name: string;
  type: 'string' | 'integer' | 'number' | 'boolean' | 'date';
  jsonPath: string;
  description: string;
  /** 0: `kubectl get`; 1: only with `-o wide`. */
  priority?: 0 | 1;
}

export interface KindDefinition {
  kind: string;
  plural: string;
  singular: string;
  shortNames: string[];
  /** `kubectl explain <kind>` top-level text. */
  description: string;
  spec: Schema;
  status: Schema;
  columns: PrinterColumn[];
}

export const READY_COLUMN: PrinterColumn = {
  name: 'Ready',
  type: 'string',
  jsonPath: '.status.conditions[?(@.type=="Ready")].status',
  description: 'Whether the operator compiled this resource into the gateway snapshot.',
};

export const REASON_COLUMN: PrinterColumn = {
  name: 'Reason',
  type: 'string',
  jsonPath: '.status.conditions[?(@.type=="Ready")].reason',
  description: 'Why the resource is or is not Ready.',
  priority: 1,
};

export const APPLIED_COLUMN: PrinterColumn = {
  name: 'Applied',
  type: 'string',
  jsonPath: '.status.conditions[?(@.type=="Applied")].message',
  description: 'How many gateway pods serve the current generation.',
  priority: 1,
};

export const AGE_COLUMN: PrinterColumn = {
  name: 'Age',
  type: 'date',
  jsonPath: '.metadata.creationTimestamp',
  description: 'Time since the resource was created.',
};

export function customResourceDefinition(def: KindDefinition): Record<string, unknown> {
  const openAPIV3Schema = obj(def.description, {
    apiVersion: str('APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values.'),
    kind: str('Kind is a string value representing the REST resource this object represents. In CamelCase.'),
    metadata: { type: 'object', description: 'Standard object metadata.' },
    spec: def.spec,
    status: def.status,
  }, ['spec']);
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: {
      name: `${def.plural}.${GROUP}`,
      annotations: {
        // Kept by Helm on uninstall: deleting a CRD deletes every resource of its kind.
        'helm.sh/resource-policy': 'keep',
      },
      labels: { 'app.kubernetes.io/name': 'tollgate', 'app.kubernetes.io/part-of': 'tollgate' },
    },
    spec: {
      group: GROUP,
      names: {
        kind: def.kind,
        listKind: `${def.kind}List`,
        plural: def.plural,
        singular: def.singular,
        shortNames: def.shortNames,
        categories: [CATEGORY],
      },
      scope: 'Namespaced',
      versions: [
        {
          name: VERSION,
          served: true,
          storage: true,
          subresources: { status: {} },
          additionalPrinterColumns: def.columns.map((c) => ({
            name: c.name,
            type: c.type,
            jsonPath: c.jsonPath,
            description: c.description,
            ...(c.priority ? { priority: c.priority } : {}),
          })),
          schema: { openAPIV3Schema: openAPIV3Schema satisfies Schema },
        },
      ],
    },
  };
}
