// The tollgate.dev/v1alpha1 custom resources as the operator reads them (docs/adr/0005-kubernetes-api.md).
import type { Budget, ProjectConfig, RateLimits } from '../gateway/governance/limits-schema.ts';

export const GROUP = 'tollgate.dev';
export const VERSION = 'v1alpha1';
export const API_VERSION = `${GROUP}/${VERSION}`;
export const FINALIZER = 'tollgate.dev/revoke';
export const FIELD_MANAGER = 'tollgate-operator';
export const API_KEY_LABEL = 'tollgate.dev/api-key';

export const KINDS = {
  Provider: 'providers',
  PricingGroup: 'pricinggroups',
  Model: 'models',
  Organization: 'organizations',
  ApiKey: 'apikeys',
} as const;
export type Kind = keyof typeof KINDS;
export const KIND_NAMES = Object.keys(KINDS) as Kind[];

export interface Condition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
  observedGeneration?: number;
  lastTransitionTime?: string;
}

export interface Meta {
  name: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string | Date;
  deletionTimestamp?: string | Date;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  ownerReferences?: { apiVersion: string; kind: string; name: string; uid: string; controller?: boolean; blockOwnerDeletion?: boolean }[];
}

export interface Resource<S = Record<string, unknown>> {
  apiVersion?: string;
  kind?: string;
  metadata: Meta;
  spec?: S;
  status?: { observedGeneration?: number; conditions?: Condition[]; secretName?: string; prefix?: string };
}

export interface ProviderSpec {
  baseUrl?: string;
  protocols?: string[];
  credentials?: { secretRef?: { name?: string; key?: string } };
  headers?: Record<string, string>;
  timeouts?: Record<string, number>;
  onClientDisconnect?: string;
  maxResponseBytes?: number;
  routing?: Record<string, number>;
}

export interface PricingGroupSpec {
  mode?: string;
  prices?: Record<string, unknown>;
  tiers?: Record<string, unknown>[];
  discount?: string;
}

export interface ModelSpec {
  id?: string;
  alias?: string;
  public?: boolean;
  pricingGroupRef?: { name?: string };
  created?: number;
  upstreams?: { protocol?: string; providerRef?: { name?: string }; model?: string; weight?: number }[];
  capabilities?: { drop?: string[]; imageSizes?: string[] };
  routing?: Record<string, number | string[]>;
}

export interface OrganizationSpec {
  models?: string[];
  discount?: string;
  limits?: RateLimits;
  budget?: Budget;
  projects?: ProjectConfig[];
}

export interface ApiKeySpec {
  organization?: string;
  project?: string;
  displayName?: string;
  disabled?: boolean;
  expiresAt?: string;
  limits?: RateLimits;
  budget?: Budget;
}

/** A Secret as the operator sees it: data values are base64. */
export interface SecretObject {
  metadata: Meta;
  data?: Record<string, string>;
  type?: string;
}

export const refOf = (kind: Kind, name: string): string => `${kind}/${name}`;
export const keySecretName = (apiKey: string): string => `${apiKey}-key`;
export const timestamp = (t: string | Date | undefined): string | undefined => (t === undefined ? undefined : typeof t === 'string' ? t : t.toISOString().replace(/\.\d+Z$/, 'Z'));
