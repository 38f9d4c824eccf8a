// JSON merge patch (RFC 7386) and JSON patch (RFC 6902), as the API server applies them.

export class PatchError extends Error {
  readonly code: number;
  constructor(code: number, message: string) {
    super(message);
    this.code = code;
  }
}

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

export function mergePatch(target: unknown, patch: unknown): unknown {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return structuredClone(patch);
  const out: Record<string, unknown> = target !== null && typeof target === 'object' && !Array.isArray(target) ? { ...(target as Record<string, unknown>) } : {};
  for (const [k, v] of Object.entries(patch as Record<string, unknown>)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

interface Op {
  op: string;
  path: string;
  value?: unknown;
  from?: string;
}

function pointer(path: string): string[] {
  if (path === '') return [];
  if (!path.startsWith('/')) throw new PatchError(422, `invalid JSON pointer "${path}"`);
  return path.slice(1).split('/').map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
}

function parentOf(doc: Json, parts: string[], path: string): { parent: Json; key: string } {
  let cur: Json = doc;
  for (const p of parts.slice(0, -1)) {
    const next: Json | undefined = Array.isArray(cur) ? cur[Number(p)] : cur !== null && typeof cur === 'object' ? cur[p] : undefined;
    if (next === undefined) throw new PatchError(422, `path "${path}" does not exist`);
    cur = next;
  }
  return { parent: cur, key: parts[parts.length - 1] };
}

function get(doc: Json, path: string): Json {
  let cur: Json = doc;
  for (const p of pointer(path)) {
    const next: Json | undefined = Array.isArray(cur) ? cur[Number(p)] : cur !== null && typeof cur === 'object' ? cur[p] : undefined;
    if (next === undefined) throw new PatchError(422, `path "${path}" does not exist`);
    cur = next;
  }
  return cur;
}

function remove(doc: Json, path: string): void {
  const { parent, key } = parentOf(doc, pointer(path), path);
  if (Array.isArray(parent)) {
    const i = Number(key);
    if (!(i >= 0 && i < parent.length)) throw new PatchError(422, `path "${path}" does not exist`);
    parent.splice(i, 1);
  } else if (parent !== null && typeof parent === 'object' && key in parent) delete parent[key];
  else throw new PatchError(422, `path "${path}" does not exist`);
}

function add(doc: Json, path: string, value: Json): Json {
  const parts = pointer(path);
  if (parts.length === 0) return value;
  const { parent, key } = parentOf(doc, parts, path);
  if (Array.isArray(parent)) {
    const i = key === '-' ? parent.length : Number(key);
    if (!(i >= 0 && i <= parent.length)) throw new PatchError(422, `index out of range at "${path}"`);
    parent.splice(i, 0, value);
  } else if (parent !== null && typeof parent === 'object') parent[key] = value;
  else throw new PatchError(422, `path "${path}" does not exist`);
  return doc;
}

export function jsonPatch(target: unknown, ops: unknown): unknown {
  if (!Array.isArray(ops)) throw new PatchError(400, 'a JSON patch is an array of operations');
  let doc = structuredClone(target) as Json;
  for (const o of ops as Op[]) {
    switch (o.op) {
      case 'add':
        doc = add(doc, o.path, structuredClone(o.value) as Json);
        break;
      case 'remove':
        remove(doc, o.path);
        break;
      case 'replace':
        get(doc, o.path);
        if (pointer(o.path).length === 0) doc = structuredClone(o.value) as Json;
        else {
          remove(doc, o.path);
          doc = add(doc, o.path, structuredClone(o.value) as Json);
        }
        break;
      case 'move': {
        const v = get(doc, o.from ?? '');
        remove(doc, o.from ?? '');
        doc = add(doc, o.path, v);
        break;
      }
      case 'copy':
        doc = add(doc, o.path, structuredClone(get(doc, o.from ?? '')));
        break;
      case 'test':
        if (JSON.stringify(get(doc, o.path)) !== JSON.stringify(o.value)) throw new PatchError(422, `test operation failed at "${o.path}"`);
        break;
      default:
        throw new PatchError(400, `unknown JSON patch operation "${o.op}"`);
    }
  }
  return doc;
}

/** Lists that strategic merge patch merges by a key (patchMergeKey) in the core kinds served here; others replace. */
const MERGE_KEYS: Record<string, string> = { ownerReferences: 'uid', conditions: 'type' };
/** Primitive lists with patchStrategy "merge": patched values are added, not substituted. */
const MERGE_PRIMITIVES = new Set(['finalizers']);

/**
 * Strategic merge patch as kubectl sends it for core kinds: a merge patch whose lists of maps merge by key and
 * whose directives ($patch, $retainKeys, $setElementOrder/…, $deleteFromPrimitiveList/…) are honoured.
 */
export function strategicMergePatch(target: unknown, patch: unknown, field = ''): unknown {
  if (patch === null || typeof patch !== 'object') return structuredClone(patch);
  if (Array.isArray(patch)) {
    const key = MERGE_KEYS[field];
    if (MERGE_PRIMITIVES.has(field) && Array.isArray(target)) return [...new Set([...target, ...patch])];
    if (!key || !Array.isArray(target)) return structuredClone(patch.filter((p) => !(p && typeof p === 'object' && (p as Record<string, unknown>).$patch === 'delete')));
    const out = structuredClone(target) as Record<string, unknown>[];
    for (const item of patch as Record<string, unknown>[]) {
      const i = out.findIndex((o) => o?.[key] === item?.[key]);
      if (item?.$patch === 'delete') {
        if (i >= 0) out.splice(i, 1);
      } else if (i >= 0) out[i] = strategicMergePatch(out[i], item) as Record<string, unknown>;
      else out.push(structuredClone(item));
    }
    return out;
  }
  const p = patch as Record<string, unknown>;
  if (p.$patch === 'replace') {
    const { $patch: _, ...rest } = p;
    return structuredClone(rest);
  }
  if (p.$patch === 'delete') return undefined;
  const out: Record<string, unknown> = target !== null && typeof target === 'object' && !Array.isArray(target) ? { ...(target as Record<string, unknown>) } : {};
  for (const [k, v] of Object.entries(p)) {
    if (k === '$patch' || k === '$retainKeys' || k.startsWith('$setElementOrder/')) continue;
    if (k.startsWith('$deleteFromPrimitiveList/')) {
      const name = k.slice('$deleteFromPrimitiveList/'.length);
      if (Array.isArray(out[name])) out[name] = (out[name] as unknown[]).filter((x) => !(v as unknown[]).includes(x));
      continue;
    }
    if (v === null) delete out[k];
    else {
      const merged = strategicMergePatch(out[k], v, k);
      if (merged === undefined) delete out[k];
      else out[k] = merged;
    }
  }
  if (Array.isArray(p.$retainKeys)) for (const k of Object.keys(out)) if (!(p.$retainKeys as string[]).includes(k)) delete out[k];
  return out;
}
