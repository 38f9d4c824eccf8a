// Discovery the way kubectl reads it (the unaggregated form, which client-go falls back to when the answer is plain
// application/json): /api, /apis, /apis/<group> and one APIResourceList per group version, with short names and
// categories, so `kubectl get tgkey`, `kubectl get tollgate` and `kubectl api-resources` resolve.
import type { ResourceType } from './resources.ts';
import { apiVersionOf } from './resources.ts';

const VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];

export function groupVersions(types: Iterable<ResourceType>): Map<string, string[]> {
  const groups = new Map<string, string[]>();
  for (const t of types) {
    if (t.group === '') continue;
    const versions = groups.get(t.group) ?? [];
    if (!versions.includes(t.version)) versions.push(t.version);
    groups.set(t.group, versions);
  }
  return groups;
}

function apiGroup(name: string, versions: string[]): object {
  const vs = versions.map((v) => ({ groupVersion: `${name}/${v}`, version: v }));
  return { name, versions: vs, preferredVersion: vs[0] };
}

/** The answer for a discovery path, or undefined when the path is not a discovery path. */
export function discovery(path: string, types: ResourceType[], serverAddress: string): object | undefined {
  if (path === '/api' || path === '/api/') return { kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress }] };
  if (path === '/apis' || path === '/apis/') {
    return { kind: 'APIGroupList', apiVersion: 'v1', groups: [...groupVersions(types)].map(([name, versions]) => apiGroup(name, versions)) };
  }
  const m = path.match(/^\/(?:api\/(v1)|apis\/([^/]+)(?:\/([^/]+))?)\/?$/);
  if (!m) return undefined;
  const [, coreVersion, group, version] = m;
  if (group !== undefined && version === undefined) {
    const versions = groupVersions(types).get(group);
    return versions ? { kind: 'APIGroup', apiVersion: 'v1', ...apiGroup(group, versions) } : undefined;
  }
  const g = coreVersion ? '' : group;
  const v = coreVersion ?? version;
  const inGv = types.filter((t) => t.group === g && t.version === v);
  if (inGv.length === 0) return undefined;
  const resources: object[] = [];
  for (const t of inGv) {
    resources.push({ name: t.plural, singularName: t.singular, namespaced: t.namespaced, kind: t.kind, verbs: VERBS, shortNames: t.shortNames.length ? t.shortNames : undefined, categories: t.categories.length ? t.categories : undefined, storageVersionHash: '' });
    if (t.status) resources.push({ name: `${t.plural}/status`, singularName: '', namespaced: t.namespaced, kind: t.kind, verbs: ['get', 'patch', 'update'] });
  }
  return { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: apiVersionOf({ group: g, version: v }), resources };
}
