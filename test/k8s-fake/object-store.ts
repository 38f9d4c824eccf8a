// The API rules the operator relies on, kept in memory: resourceVersion (one global counter) and 409 on a
// stale write, metadata.generation bumped on spec changes only, the status subresource, finalizers with
// deletionTimestamp, owner references with background garbage collection, and a bounded event history
// that watches replay from (410 Gone when a resourceVersion has fallen out of it).
import { randomUUID } from 'node:crypto';
import type { ResourceType } from './resources.ts';
import { apiVersionOf, typeKey } from './resources.ts';

export interface ObjectMeta {
  name: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  ownerReferences?: { apiVersion: string; kind: string; name: string; uid: string; controller?: boolean; blockOwnerDeletion?: boolean }[];
  generateName?: string;
  [k: string]: unknown;
}

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  [k: string]: unknown;
}

export type EventType = 'ADDED' | 'MODIFIED' | 'DELETED';

export interface StoredEvent {
  rv: number;
  type: EventType;
  key: string;
  obj: KubeObject;
  /** The object before this change (undefined on ADDED): selector watches need it to send DELETED when an object stops matching. */
  prev: KubeObject | undefined;
}

export class ApiError extends Error {
  readonly code: number;
  readonly reason: string;
  /** Status.details: the kind and name concerned and, for 422 Invalid, one cause per field error. */
  readonly details: { name?: string; group?: string; kind?: string; causes?: { reason: string; message: string; field: string }[] } | undefined;
  constructor(code: number, reason: string, message: string, details?: ApiError['details']) {
    super(message);
    this.code = code;
    this.reason = reason;
    this.details = details;
  }
}

/** Per write: dryRun stores nothing and sends no event; admit sees the final object (admission, field managers). */
export interface WriteOptions {
  dryRun?: boolean;
  admit?: (next: KubeObject, current: KubeObject | undefined) => KubeObject;
}

const NAME = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;

const clone = <T>(v: T): T => structuredClone(v);

function specOf(o: KubeObject): string {
  const { metadata: _m, status: _s, apiVersion: _a, kind: _k, ...rest } = o;
  return JSON.stringify(rest);
}

export class ObjectStore {
  private rv = 0;
  private readonly objects = new Map<string, Map<string, KubeObject>>();
  private readonly history: StoredEvent[] = [];
  private readonly listeners = new Set<(e: StoredEvent) => void>();
  readonly types: Map<string, ResourceType>;
  historyLimit: number;
  /** Everything at or below this resourceVersion has been compacted away (410 for watches from it). */
  private compactedThrough = 0;
  /** Live objects' uids, and who names each uid as an owner: garbage collection without scanning every object. */
  private readonly uids = new Set<string>();
  private readonly dependents = new Map<string, Set<string>>();

  constructor(types: ResourceType[], opts: { historyLimit?: number } = {}) {
    this.types = new Map(types.map((t) => [typeKey(t), t]));
    this.historyLimit = opts.historyLimit ?? 5000;
    for (const k of this.types.keys()) this.objects.set(k, new Map());
  }

  /** Serves a new type, or redefines one (a CRD update) keeping its objects. */
  addType(t: ResourceType): void {
    const key = typeKey(t);
    this.types.set(key, t);
    if (!this.objects.has(key)) this.objects.set(key, new Map());
  }

  /** Stops serving a type; its objects go without watch events, as when a CRD is deleted. */
  removeType(key: string): void {
    this.types.delete(key);
    this.objects.delete(key);
  }

  get resourceVersion(): number {
    return this.rv;
  }

  onEvent(l: (e: StoredEvent) => void): () => void {
    this.listeners.add(l);
    return () => this.listeners.delete(l);
  }

  type(key: string): ResourceType {
    const t = this.types.get(key);
    if (!t) throw new ApiError(404, 'NotFound', `the server could not find the requested resource (${key})`);
    return t;
  }

  list(key: string, namespace: string | undefined): KubeObject[] {
    const all = [...(this.objects.get(key) ?? new Map<string, KubeObject>()).values()];
    return namespace === undefined ? all : all.filter((o) => (o.metadata.namespace ?? '') === namespace);
  }

  get(key: string, namespace: string, name: string): KubeObject {
    const o = this.objects.get(key)!.get(`${namespace}/${name}`);
    if (!o) throw new ApiError(404, 'NotFound', `${this.type(key).plural} "${name}" not found`);
    return o;
  }

  find(key: string, namespace: string, name: string): KubeObject | undefined {
    return this.objects.get(key)!.get(`${namespace}/${name}`);
  }

  /** Events after `rv`, or undefined when some of them have been compacted away (the caller answers 410). */
  eventsSince(rv: number): StoredEvent[] | undefined {
    if (rv < this.compactedThrough) return undefined;
    return this.history.filter((e) => e.rv > rv);
  }

  /** Drops the whole event history: any watch from an older resourceVersion now gets 410 Gone. */
  compact(): void {
    this.history.length = 0;
    this.compactedThrough = this.rv;
  }

  create(key: string, namespace: string, body: KubeObject, opts: WriteOptions = {}): KubeObject {
    const t = this.type(key);
    if (!t.namespaced) namespace = '';
    const meta = body.metadata ?? ({} as ObjectMeta);
    let name = meta.name;
    if (!name && meta.generateName) name = meta.generateName + randomUUID().slice(0, 5);
    if (!name || !NAME.test(name) || name.length > 253) throw new ApiError(422, 'Invalid', `${t.kind} "${name ?? ''}" is invalid: metadata.name: Invalid value: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.'`);
    if (meta.namespace && meta.namespace !== namespace) throw new ApiError(400, 'BadRequest', 'the namespace of the provided object does not match the namespace sent on the request');
    if (this.objects.get(key)!.has(`${namespace}/${name}`)) throw new ApiError(409, 'AlreadyExists', `${t.plural}${t.group ? '.' + t.group : ''} "${name}" already exists`);
    const obj = clone(body);
    if (t.status) delete obj.status;
    obj.apiVersion = apiVersionOf(t);
    obj.kind = t.kind;
    obj.metadata = { ...clone(meta), name, namespace, uid: randomUUID(), creationTimestamp: new Date().toISOString().replace(/\.\d+Z$/, 'Z') };
    if (!t.namespaced) delete obj.metadata.namespace;
    delete obj.metadata.deletionTimestamp;
    delete obj.metadata.generateName;
    delete obj.metadata.resourceVersion;
    if (t.generation) obj.metadata.generation = 1;
    else delete obj.metadata.generation;
    normalizeSecret(t, obj);
    const admitted = opts.admit ? opts.admit(obj, undefined) : obj;
    return this.commit(key, 'ADDED', admitted, undefined, true, opts.dryRun);
  }

  /** PUT of the main resource (subresource 'status' for /status). */
  update(key: string, namespace: string, name: string, body: KubeObject, subresource?: 'status', opts: WriteOptions = {}): KubeObject {
    const t = this.type(key);
    if (!t.namespaced) namespace = '';
    if (subresource === 'status' && !t.status) throw new ApiError(404, 'NotFound', `the server could not find the requested resource (${t.plural}/status)`);
    const current = this.get(key, namespace, name);
    if (body.metadata?.name !== undefined && body.metadata.name !== name) throw new ApiError(400, 'BadRequest', 'the name of the object does not match the name on the URL');
    const sentRv = body.metadata?.resourceVersion;
    if (sentRv === undefined || sentRv === '') {
      if (t.requireRvOnUpdate) throw new ApiError(422, 'Invalid', `${t.kind} "${name}" is invalid: metadata.resourceVersion: Invalid value: 0x0: must be specified for an update`);
    } else if (sentRv !== current.metadata.resourceVersion) {
      throw new ApiError(409, 'Conflict', `Operation cannot be fulfilled on ${t.plural}${t.group ? '.' + t.group : ''} "${name}": the object has been modified; please apply your changes to the latest version and try again`);
    }
    let next: KubeObject;
    if (subresource === 'status') {
      next = { ...clone(current), status: clone(body.status) };
      if (body.status === undefined) delete next.status;
    } else {
      next = clone(body);
      if (t.status) {
        if (current.status === undefined) delete next.status;
        else next.status = clone(current.status);
      }
      const m = next.metadata ?? ({} as ObjectMeta);
      // Server-owned fields cannot be changed by a client.
      next.metadata = { ...m, name, namespace, uid: current.metadata.uid, creationTimestamp: current.metadata.creationTimestamp };
      if (!t.namespaced) delete next.metadata.namespace;
      if (current.metadata.deletionTimestamp) next.metadata.deletionTimestamp = current.metadata.deletionTimestamp;
      else delete next.metadata.deletionTimestamp;
      if (t.generation) next.metadata.generation = current.metadata.generation;
      else delete next.metadata.generation;
      if (current.metadata.deletionTimestamp) {
        const before = new Set(current.metadata.finalizers ?? []);
        const added = (next.metadata.finalizers ?? []).filter((f) => !before.has(f));
        if (added.length) throw new ApiError(422, 'Invalid', `${t.kind} "${name}" is invalid: metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers ${JSON.stringify(added)}`);
      }
    }
    next.apiVersion = apiVersionOf(t);
    next.kind = t.kind;
    normalizeSecret(t, next);
    if (opts.admit) next = opts.admit(next, current);
    if (subresource !== 'status' && t.generation && specOf(next) !== specOf(current)) next.metadata.generation = (current.metadata.generation ?? 1) + 1;
    if (JSON.stringify({ ...next, metadata: { ...next.metadata, resourceVersion: undefined } }) === JSON.stringify({ ...current, metadata: { ...current.metadata, resourceVersion: undefined } })) {
      return current; // a no-op write keeps the resourceVersion and sends no event, as the real server does
    }
    if (next.metadata.deletionTimestamp && (next.metadata.finalizers ?? []).length === 0) {
      // Removing the last finalizer of a deleting object deletes it in the same operation.
      next.metadata.uid = current.metadata.uid;
      return opts.dryRun ? next : this.remove(key, next);
    }
    return this.commit(key, 'MODIFIED', next, current, true, opts.dryRun);
  }

  delete(key: string, namespace: string, name: string, preconditions?: { resourceVersion?: string; uid?: string }, opts: WriteOptions = {}): KubeObject {
    if (!this.type(key).namespaced) namespace = '';
    const current = this.get(key, namespace, name);
    if (preconditions?.uid && preconditions.uid !== current.metadata.uid) throw new ApiError(409, 'Conflict', `Precondition failed: UID in precondition: ${preconditions.uid}, UID in object meta: ${current.metadata.uid}`);
    if (preconditions?.resourceVersion && preconditions.resourceVersion !== current.metadata.resourceVersion) throw new ApiError(409, 'Conflict', `Precondition failed: ResourceVersion in precondition: ${preconditions.resourceVersion}, ResourceVersion in object meta: ${current.metadata.resourceVersion}`);
    if ((current.metadata.finalizers ?? []).length > 0) {
      if (current.metadata.deletionTimestamp) return current;
      const next = clone(current);
      next.metadata.deletionTimestamp = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
      return this.commit(key, 'MODIFIED', next, current, true, opts.dryRun);
    }
    return opts.dryRun ? current : this.remove(key, current);
  }

  private remove(key: string, current: KubeObject): KubeObject {
    const ns = current.metadata.namespace ?? '';
    const stored = this.objects.get(key)!.get(`${ns}/${current.metadata.name}`);
    this.objects.get(key)!.delete(`${ns}/${current.metadata.name}`);
    if (stored && stored !== current) this.index(key, stored, false);
    const gone = clone(current);
    const out = this.commit(key, 'DELETED', gone, current, false);
    // Background garbage collection: dependents whose every owner is gone are deleted next.
    const uid = current.metadata.uid;
    setImmediate(() => this.collectDependents(ns, uid));
    return out;
  }

  private collectDependents(namespace: string, uid: string | undefined): void {
    if (!uid) return;
    for (const id of [...(this.dependents.get(uid) ?? [])]) {
      const [key, ns, name] = JSON.parse(id) as [string, string, string];
      const o = this.objects.get(key)!.get(`${ns}/${name}`);
      if (!o || ns !== namespace) continue;
      if ((o.metadata.ownerReferences ?? []).every((r) => !this.uids.has(r.uid))) {
        try {
          this.delete(key, namespace, name);
        } catch {
          // already gone
        }
      }
    }
  }

  private index(key: string, obj: KubeObject, add: boolean): void {
    const id = JSON.stringify([key, obj.metadata.namespace ?? '', obj.metadata.name]);
    for (const r of obj.metadata.ownerReferences ?? []) {
      const set = this.dependents.get(r.uid) ?? new Set<string>();
      if (add) this.dependents.set(r.uid, set.add(id));
      else if (set.delete(id) && set.size === 0) this.dependents.delete(r.uid);
    }
    if (obj.metadata.uid) {
      if (add) this.uids.add(obj.metadata.uid);
      else this.uids.delete(obj.metadata.uid);
    }
  }

  private commit(key: string, type: EventType, obj: KubeObject, prev: KubeObject | undefined, store = true, dryRun = false): KubeObject {
    if (dryRun) return obj;
    obj.metadata.resourceVersion = String(++this.rv);
    if (prev) this.index(key, prev, false);
    if (store) {
      this.objects.get(key)!.set(`${obj.metadata.namespace ?? ''}/${obj.metadata.name}`, obj);
      this.index(key, obj, true);
    }
    const e: StoredEvent = { rv: this.rv, type, key, obj, prev };
    this.history.push(e);
    // Trimmed in batches: one splice per historyLimit/4 events, not one per event.
    if (this.history.length > this.historyLimit + Math.max(1, this.historyLimit >> 2)) {
      const dropped = this.history.splice(0, this.history.length - this.historyLimit);
      this.compactedThrough = dropped[dropped.length - 1].rv;
    }
    for (const l of this.listeners) l(e);
    return obj;
  }
}

// Secrets: stringData is write-only and lands base64-encoded in data, as on a real server.
function normalizeSecret(t: ResourceType, obj: KubeObject): void {
  if (t.kind !== 'Secret' || t.group !== '') return;
  const sd = obj.stringData as Record<string, string> | undefined;
  if (sd) {
    const data = { ...((obj.data as Record<string, string> | undefined) ?? {}) };
    for (const [k, v] of Object.entries(sd)) data[k] = Buffer.from(v, 'utf8').toString('base64');
    obj.data = data;
    delete obj.stringData;
  }
  obj.type ??= 'Opaque';
}
