// Field ownership: metadata.managedFields kept the way the server keeps it (FieldsV1 sets per manager, operation
// Apply or Update), and server-side apply (PATCH application/apply-patch+yaml) on top of it: conflicts with other
// managers over a field whose value would change (409 unless force=true), fields an applier stops sending are
// removed when nobody else owns them. Lists are owned whole (atomic), a simplification the README states.
import { ApiError } from './object-store.ts';
import type { KubeObject } from './object-store.ts';

export interface ManagedFieldsEntry {
  manager: string;
  operation: 'Apply' | 'Update';
  apiVersion: string;
  time: string;
  fieldsType: 'FieldsV1';
  fieldsV1: Record<string, unknown>;
  subresource?: string;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);
const now = () => new Date().toISOString().replace(/\.\d+Z$/, 'Z');

/** A field is its JSON path, encoded as a JSON array string so it can live in a Set. */
type Field = string;

const METADATA_FIELDS = new Set(['labels', 'annotations', 'finalizers', 'ownerReferences']);

/** The leaf fields an object sets: scalars, lists (atomic) and empty maps; status only for the status subresource. */
export function fieldsOf(obj: KubeObject, subresource?: string): Set<Field> {
  const out = new Set<Field>();
  const walk = (v: unknown, path: string[]) => {
    if (isObj(v) && Object.keys(v).length > 0) for (const [k, c] of Object.entries(v)) walk(c, [...path, k]);
    else if (v !== undefined) out.add(JSON.stringify(path));
  };
  for (const [k, v] of Object.entries(obj)) {
    if (k === 'apiVersion' || k === 'kind') continue;
    if ((k === 'status') !== (subresource === 'status')) continue;
    if (k === 'metadata') {
      for (const [mk, mv] of Object.entries((v as Obj) ?? {})) if (METADATA_FIELDS.has(mk)) walk(mv, ['metadata', mk]);
    } else walk(v, [k]);
  }
  return out;
}

function at(obj: unknown, path: string[]): unknown {
  let cur = obj;
  for (const p of path) cur = isObj(cur) ? cur[p] : undefined;
  return cur;
}

function removeAt(obj: Obj, path: string[]): void {
  const parents: Obj[] = [];
  let cur: unknown = obj;
  for (const p of path.slice(0, -1)) {
    if (!isObj(cur)) return;
    parents.push(cur);
    cur = cur[p];
  }
  if (isObj(cur)) delete cur[path[path.length - 1]];
  // Maps left empty by the removal go too.
  for (let i = parents.length - 1; i >= 0; i--) {
    const child = parents[i][path[i]];
    if (isObj(child) && Object.keys(child).length === 0 && i > 0) delete parents[i][path[i]];
  }
}

export function toFieldsV1(fields: Set<Field>): Record<string, unknown> {
  const root: Record<string, unknown> = {};
  for (const f of fields) {
    let node = root;
    const path = JSON.parse(f) as string[];
    path.forEach((p, i) => {
      const key = `f:${p}`;
      node[key] ??= {};
      node = node[key] as Record<string, unknown>;
      if (i < path.length - 1) node['.'] = {};
    });
  }
  return root;
}

export function fromFieldsV1(v1: Record<string, unknown> | undefined): Set<Field> {
  const out = new Set<Field>();
  const walk = (node: Record<string, unknown>, path: string[]) => {
    const children = Object.keys(node).filter((k) => k.startsWith('f:'));
    if (children.length === 0 && path.length > 0) out.add(JSON.stringify(path));
    for (const k of children) walk(node[k] as Record<string, unknown>, [...path, k.slice(2)]);
  };
  walk(v1 ?? {}, []);
  return out;
}

const display = (f: Field) => '.' + (JSON.parse(f) as string[]).join('.');
const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

function entriesOf(obj: KubeObject | undefined): ManagedFieldsEntry[] {
  return structuredClone((obj?.metadata.managedFields as ManagedFieldsEntry[] | undefined) ?? []);
}

function finish(entries: ManagedFieldsEntry[]): ManagedFieldsEntry[] {
  return entries.filter((e) => Object.keys(e.fieldsV1).length > 0);
}

/**
 * Records an Update by `manager`: it takes the fields this write set or changed, and every other manager gives them
 * up. A write that changed no field leaves managedFields as they were.
 */
export function recordUpdate(prev: KubeObject | undefined, next: KubeObject, manager: string, apiVersion: string, subresource?: string): void {
  const changed = [...fieldsOf(next, subresource)].filter((f) => !prev || !same(at(prev, JSON.parse(f) as string[]), at(next, JSON.parse(f) as string[])));
  if (changed.length === 0) {
    if (prev?.metadata.managedFields) next.metadata.managedFields = prev.metadata.managedFields;
    return;
  }
  const entries = entriesOf(prev);
  for (const e of entries) {
    const owned = fromFieldsV1(e.fieldsV1);
    for (const f of changed) owned.delete(f);
    e.fieldsV1 = toFieldsV1(owned);
  }
  let mine = entries.find((e) => e.manager === manager && e.operation === 'Update' && e.subresource === subresource);
  if (!mine) {
    mine = { manager, operation: 'Update', apiVersion, time: now(), fieldsType: 'FieldsV1', fieldsV1: {}, ...(subresource ? { subresource } : {}) };
    entries.push(mine);
  }
  const owned = fromFieldsV1(mine.fieldsV1);
  for (const f of changed) owned.add(f);
  mine.fieldsV1 = toFieldsV1(owned);
  mine.time = now();
  next.metadata.managedFields = finish(entries);
}

/** Server-side apply of `config` by `manager` onto `current` (undefined: the object is created). */
export function serverSideApply(current: KubeObject | undefined, config: KubeObject, manager: string, force: boolean, apiVersion: string, subresource?: string): KubeObject {
  const applied = fieldsOf(config, subresource);
  const entries = entriesOf(current);
  const conflicts = new Map<string, Field[]>();
  if (current) {
    for (const e of entries) {
      if ((e.manager === manager && e.operation === 'Apply') || e.subresource !== subresource) continue;
      const owned = fromFieldsV1(e.fieldsV1);
      for (const f of applied) {
        const path = JSON.parse(f) as string[];
        if (owned.has(f) && !same(at(current, path), at(config, path))) conflicts.set(e.manager, [...(conflicts.get(e.manager) ?? []), f]);
      }
    }
  }
  if (conflicts.size > 0 && !force) {
    const all = [...conflicts].flatMap(([m, fs]) => fs.map((f) => ({ manager: m, field: f })));
    const message =
      all.length === 1
        ? `Apply failed with 1 conflict: conflict with "${all[0].manager}" using ${apiVersion}: ${display(all[0].field)}`
        : `Apply failed with ${all.length} conflicts: ${[...conflicts].map(([m, fs]) => `conflicts with "${m}" using ${apiVersion}:\n${fs.map((f) => `- ${display(f)}`).join('\n')}`).join('\n')}`;
    throw new ApiError(409, 'Conflict', message, { causes: all.map((c) => ({ reason: 'FieldManagerConflict', message: `conflict with "${c.manager}" using ${apiVersion}`, field: display(c.field) })) });
  }
  // Forced: the others give the conflicting fields up.
  for (const e of entries) {
    const lost = conflicts.get(e.manager);
    if (!lost || (e.manager === manager && e.operation === 'Apply')) continue;
    const owned = fromFieldsV1(e.fieldsV1);
    for (const f of lost) owned.delete(f);
    e.fieldsV1 = toFieldsV1(owned);
  }
  const next = structuredClone(current ?? { apiVersion: config.apiVersion, kind: config.kind, metadata: { name: config.metadata.name } }) as KubeObject;
  // Fields this manager applied before and no longer sends are removed, unless someone else still owns them.
  const mineBefore = entries.find((e) => e.manager === manager && e.operation === 'Apply' && e.subresource === subresource);
  const others = new Set(entries.filter((e) => e !== mineBefore).flatMap((e) => [...fromFieldsV1(e.fieldsV1)]));
  for (const f of fromFieldsV1(mineBefore?.fieldsV1)) if (!applied.has(f) && !others.has(f)) removeAt(next as Obj, JSON.parse(f) as string[]);
  for (const f of applied) {
    const path = JSON.parse(f) as string[];
    let node = next as Obj;
    for (const p of path.slice(0, -1)) {
      if (!isObj(node[p])) node[p] = {};
      node = node[p] as Obj;
    }
    node[path[path.length - 1]] = structuredClone(at(config, path));
  }
  const kept = entries.filter((e) => e !== mineBefore);
  kept.push({ manager, operation: 'Apply', apiVersion, time: now(), fieldsType: 'FieldsV1', fieldsV1: toFieldsV1(applied), ...(subresource ? { subresource } : {}) });
  next.metadata.managedFields = finish(kept);
  return next;
}
