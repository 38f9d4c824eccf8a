// The kinds the fake API server serves: tollgate's five CRDs plus the core objects the operator and gateway touch.

export interface ResourceType {
  group: string;
  version: string;
  plural: string;
  kind: string;
  /** Has a status subresource: main-resource writes ignore status, /status writes ignore everything else. */
  status: boolean;
  /** metadata.generation is kept and bumped on spec changes (custom resources). */
  generation: boolean;
  /** Custom resources need metadata.resourceVersion on PUT; core kinds accept unconditional updates. */
  requireRvOnUpdate: boolean;
}

const crd = (plural: string, kind: string): ResourceType => ({ group: 'tollgate.dev', version: 'v1alpha1', plural, kind, status: true, generation: true, requireRvOnUpdate: true });
const core = (group: string, version: string, plural: string, kind: string): ResourceType => ({ group, version, plural, kind, status: false, generation: false, requireRvOnUpdate: false });

export const RESOURCE_TYPES: ResourceType[] = [
  crd('models', 'Model'),
  crd('pricinggroups', 'PricingGroup'),
  crd('apikeys', 'ApiKey'),
  crd('organizations', 'Organization'),
  crd('providers', 'Provider'),
  core('', 'v1', 'secrets', 'Secret'),
  core('', 'v1', 'configmaps', 'ConfigMap'),
  core('', 'v1', 'events', 'Event'),
  { ...core('', 'v1', 'pods', 'Pod'), status: true },
  core('coordination.k8s.io', 'v1', 'leases', 'Lease'),
  core('events.k8s.io', 'v1', 'events', 'Event'),
];

export function apiVersionOf(t: ResourceType): string {
  return t.group ? `${t.group}/${t.version}` : t.version;
}

export function typeKey(t: { group: string; version: string; plural: string }): string {
  return `${t.group}/${t.version}/${t.plural}`;
}
