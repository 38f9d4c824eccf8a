// A fake Kubernetes API server over real HTTP, so tests drive the operator and the gateway through the real
// @kubernetes/client-node (its list calls, patch content types and Watch stream parsing) and a platform engineer's
// commands through the real kubectl: discovery, OpenAPI, Table output, client- and server-side apply, dry runs,
// chunked lists and, in strict mode, admission like the real server's. The storage rules live in object-store.ts;
// this file is the REST surface. It is a test double, not a product: see README.md beside it for what it leaves out.
import { KubeConfig } from '@kubernetes/client-node';
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parse as parseYaml } from 'yaml';
import { discovery } from './discovery.ts';
import { recordUpdate, serverSideApply } from './managed-fields.ts';
import type { KubeObject, StoredEvent, WriteOptions } from './object-store.ts';
import { ApiError, ObjectStore } from './object-store.ts';
import { byGroupVersion, openApiV2, openApiV3, openApiV3Index } from './openapi.ts';
import { jsonPatch, mergePatch, PatchError, strategicMergePatch } from './patch.ts';
import type { CrdObject, ResourceType } from './resources.ts';
import { apiVersionOf, CORE_TYPES, TOLLGATE_CRDS, typeKey, typesOfCrd } from './resources.ts';
import type { FieldCause } from './schema.ts';
import { applyDefaults, prune, validateCel, validateSchema } from './schema.ts';
import { parseFieldSelector, parseLabelSelector } from './selectors.ts';
import { toTable } from './table.ts';

export interface FakeApiServerOptions {
  port?: number;
  /** How often a watch that asked for allowWatchBookmarks gets a BOOKMARK (the real server: about a minute). */
  bookmarkIntervalMs?: number;
  /** Events kept for watch replay; older resourceVersions get 410 Gone. */
  historyLimit?: number;
  /**
   * The real server's admission and bookkeeping: custom resources checked against their CRD's schema (unknown
   * fields pruned, defaults, structural checks, CEL rules), the 256 KiB annotation limit, writes only into
   * namespaces that exist, and managedFields for every write. Off by default for the client-node tests that
   * write partial objects on purpose; on for kubectl and `npm run dev:cluster`.
   */
  strict?: boolean;
  /** Install the CRDs in crds/ at start, as the Helm chart does (default true). */
  installCrds?: boolean;
}

interface Route {
  type: ResourceType;
  key: string;
  namespace: string | undefined;
  name: string | undefined;
  subresource: 'status' | undefined;
}

/** The API server's own request body limit (--max-request-bytes is etcd's; this is the apiserver's 3 MiB). */
const MAX_BODY_BYTES = 3 * 1024 * 1024;
/** etcd's default --max-request-bytes (1.5 MiB): a larger object is refused whatever the request size. */
const MAX_OBJECT_BYTES = 1.5 * 1024 * 1024;
/** metadata.annotations may hold at most this many bytes (keys and values), as on the server. */
const MAX_ANNOTATION_BYTES = 256 * 1024;
const DEFAULT_NAMESPACES = ['default', 'kube-system', 'kube-public', 'kube-node-lease'];
const TABLE = /as=Table/;

export class FakeApiServer {
  readonly store: ObjectStore;
  readonly strict: boolean;
  private server: Server | undefined;
  private port: number;
  private readonly bookmarkIntervalMs: number;
  private readonly watches = new Set<ServerResponse>();
  /** While true, watch streams stay open but deliver nothing, not even bookmarks: a silently dead watch. */
  stalled = false;
  /** Holds back answers (ms) to chosen requests, e.g. one slow list, to test what a client does meanwhile. */
  delay: ((req: { method: string; path: string; watch: boolean }) => number) | undefined;
  readonly stats = { requests: 0, writes: 0, watches: 0, gone: 0, writesByResource: {} as Record<string, number> };

  constructor(opts: FakeApiServerOptions = {}) {
    this.store = new ObjectStore(CORE_TYPES, { historyLimit: opts.historyLimit });
    this.strict = opts.strict ?? false;
    this.port = opts.port ?? 0;
    this.bookmarkIntervalMs = opts.bookmarkIntervalMs ?? 1000;
    const nsKey = typeKey({ group: '', version: 'v1', plural: 'namespaces' });
    for (const name of DEFAULT_NAMESPACES) this.store.create(nsKey, '', { apiVersion: 'v1', kind: 'Namespace', metadata: { name } }, { admit: (o) => withNamespaceStatus(o) });
    if (opts.installCrds ?? true) for (const crd of TOLLGATE_CRDS) this.installCrd(crd);
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get running(): boolean {
    return this.server !== undefined;
  }

  async start(): Promise<this> {
    if (this.server) return this;
    const server = createServer((req, res) => this.handle(req, res));
    server.keepAliveTimeout = 5_000;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
    return this;
  }

  /** Stops answering (the port is kept for start()); open watches and keep-alive connections are cut. */
  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    for (const w of this.watches) w.destroy();
    this.watches.clear();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** Ends every watch stream normally, as the server does when a watch times out. */
  endWatches(): void {
    for (const w of this.watches) w.end();
    this.watches.clear();
  }

  kubeConfig(namespace = 'default'): KubeConfig {
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'fake', server: this.url, skipTLSVerify: true }],
      users: [{ name: 'fake', token: 'fake-token' }],
      contexts: [{ name: 'fake', cluster: 'fake', user: 'fake', namespace }],
      currentContext: 'fake',
    });
    return kc;
  }

  /** Writes a kubeconfig file for kubectl (plain HTTP on loopback, a placeholder token) and returns its path. */
  writeKubeconfig(path: string, namespace = 'default'): string {
    const cfg = {
      apiVersion: 'v1',
      kind: 'Config',
      // Plain HTTP on loopback: @kubernetes/client-node refuses http:// unless TLS verification is explicitly off.
      clusters: [{ name: 'tollgate-fake', cluster: { server: this.url, 'insecure-skip-tls-verify': true } }],
      users: [{ name: 'tollgate-fake', user: { token: 'fake-token' } }],
      contexts: [{ name: 'tollgate-fake', context: { cluster: 'tollgate-fake', user: 'tollgate-fake', namespace } }],
      'current-context': 'tollgate-fake',
    };
    writeFileSync(path, JSON.stringify(cfg, null, 2), { mode: 0o600 });
    return path;
  }

  private installCrd(crd: CrdObject): void {
    const key = typeKey({ group: 'apiextensions.k8s.io', version: 'v1', plural: 'customresourcedefinitions' });
    const obj = this.store.create(key, '', structuredClone(crd) as unknown as KubeObject, { admit: (o) => this.admitCrd(o) });
    this.syncCrd(obj, undefined);
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    this.stats.requests++;
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= MAX_BODY_BYTES) chunks.push(c);
    });
    req.on('end', () => {
      const run = () => {
        try {
          if (size > MAX_BODY_BYTES) throw new ApiError(413, 'RequestEntityTooLarge', `Request entity too large: limit is ${MAX_BODY_BYTES}`);
          this.dispatch(req, res, Buffer.concat(chunks));
        } catch (err) {
          if (err instanceof ApiError) sendStatus(res, err.code, err.reason, err.message, err.details);
          else if (err instanceof PatchError) sendStatus(res, err.code, err.code === 422 ? 'Invalid' : 'BadRequest', err.message);
          else sendStatus(res, 500, 'InternalError', (err as Error).message);
        }
      };
      const url = new URL(req.url ?? '/', 'http://x');
      const ms = this.delay?.({ method: req.method ?? 'GET', path: url.pathname, watch: url.searchParams.get('watch') === 'true' || url.searchParams.get('watch') === '1' }) ?? 0;
      if (ms > 0) setTimeout(run, ms);
      else run();
    });
  }

  /** /api/v1[/namespaces/<ns>]/<plural>[/<name>[/status]] and the same under /apis/<group>/<version>. */
  private route(path: string): Route {
    const notFound = () => new ApiError(404, 'NotFound', 'the server could not find the requested resource');
    const parts = path.split('/').filter(Boolean);
    let group: string;
    let version: string;
    let rest: string[];
    if (parts[0] === 'api' && parts.length >= 3) [group, version, rest] = ['', parts[1], parts.slice(2)];
    else if (parts[0] === 'apis' && parts.length >= 4) [group, version, rest] = [parts[1], parts[2], parts.slice(3)];
    else throw notFound();
    let namespace: string | undefined;
    if (rest[0] === 'namespaces' && rest.length >= 3 && this.store.types.has(typeKey({ group, version, plural: rest[2] }))) {
      namespace = rest[1];
      rest = rest.slice(2);
    }
    const [plural, name, subresource, ...extra] = rest;
    const key = typeKey({ group, version, plural });
    const type = this.store.types.get(key);
    if (!type || extra.length > 0 || (namespace !== undefined && !type.namespaced)) throw notFound();
    if (subresource !== undefined && !(subresource === 'status' && type.status)) throw notFound();
    return { type, key, namespace: type.namespaced ? namespace : '', name, subresource: subresource as 'status' | undefined };
  }

  private dispatch(req: IncomingMessage, res: ServerResponse, raw: Buffer): void {
    const url = new URL(req.url ?? '/', 'http://x');
    const path = url.pathname;
    const accept = req.headers.accept ?? '';
    if (path === '/version') return send(res, 200, { major: '1', minor: '31', gitVersion: 'v1.31.0-tollgate-fake', platform: 'linux/amd64' });
    if (path === '/healthz' || path === '/livez' || path === '/readyz') return sendText(res, 200, 'ok');
    const types = [...this.store.types.values()];
    const found = discovery(path, types, `127.0.0.1:${this.port}`);
    if (found) return send(res, 200, found);
    if (path === '/openapi/v2') {
      // client-go asks for the protobuf form only; a 406 tells it this server has none (kubectl then uses v3).
      if (accept && !/json|\*\/\*/.test(accept)) throw new ApiError(406, 'NotAcceptable', 'only application/json is served for /openapi/v2');
      return send(res, 200, openApiV2(types));
    }
    const byGv = byGroupVersion(types);
    if (path === '/openapi/v3') return send(res, 200, openApiV3Index(byGv));
    const v3 = path.match(/^\/openapi\/v3\/(?:api\/(v1)|apis\/([^/]+\/[^/]+))$/);
    if (v3) {
      const inGv = byGv.get(v3[1] ?? v3[2]);
      if (!inGv) throw new ApiError(404, 'NotFound', 'the server could not find the requested resource');
      return send(res, 200, openApiV3(inGv));
    }
    const r = this.route(path);
    const q = url.searchParams;
    const method = req.method ?? 'GET';
    if (method === 'GET') return this.read(req, res, r, q);
    this.stats.writes++;
    this.stats.writesByResource[r.type.plural] = (this.stats.writesByResource[r.type.plural] ?? 0) + 1;
    const dryRunValues = q.getAll('dryRun');
    for (const v of dryRunValues) if (v !== 'All') throw new ApiError(400, 'BadRequest', `Invalid dry run value: ${v}; supported values: All`);
    const warnings: string[] = [];
    const ctx = { r, q, req, raw, warnings, dryRun: dryRunValues.length > 0 };
    const reply = (code: number, obj: unknown) => {
      if (warnings.length) res.setHeader('Warning', warnings.map((w) => `299 - ${JSON.stringify(w)}`));
      send(res, code, obj);
    };
    if (r.namespace === undefined) throw new ApiError(405, 'MethodNotAllowed', 'only list and watch work across namespaces here');
    if (method === 'POST' && r.name === undefined) return reply(201, this.create(ctx, parseBody(raw)));
    if (r.name === undefined) throw new ApiError(405, 'MethodNotAllowed', `${method} needs a name`);
    switch (method) {
      case 'PUT':
        return reply(200, this.store.update(r.key, r.namespace, r.name, parseBody(raw), r.subresource, this.writeOptions(ctx, false)));
      case 'PATCH': {
        const type = (req.headers['content-type'] ?? '').split(';')[0].trim();
        if (type === 'application/apply-patch+yaml') {
          const [code, obj] = this.apply(ctx, r.name);
          return reply(code, obj);
        }
        if (q.get('force') !== null) throw new ApiError(400, 'BadRequest', 'force may only be specified with an apply patch');
        const current = this.store.get(r.key, r.namespace, r.name);
        let patched: unknown;
        if (type === 'application/merge-patch+json') patched = mergePatch(current, parseBody(raw));
        else if (type === 'application/strategic-merge-patch+json') {
          // Custom resources have no Go struct to carry patch strategies, so the server refuses it for them.
          if (r.type.printerColumns !== undefined) throw new ApiError(415, 'UnsupportedMediaType', 'the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml');
          patched = strategicMergePatch(current, parseBody(raw));
        } else if (type === 'application/json-patch+json') patched = jsonPatch(current, parseBody(raw));
        else throw new ApiError(415, 'UnsupportedMediaType', `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml${r.type.printerColumns === undefined ? ', application/strategic-merge-patch+json' : ''} (got "${type}")`);
        return reply(200, this.store.update(r.key, r.namespace, r.name, patched as KubeObject, r.subresource, this.writeOptions(ctx, false)));
      }
      case 'DELETE': {
        const opts = raw.length ? (parseBody(raw) as unknown as { preconditions?: { resourceVersion?: string; uid?: string }; dryRun?: string[] }) : {};
        const dryRun = ctx.dryRun || (opts.dryRun ?? []).includes('All');
        const gone = this.store.delete(r.key, r.namespace, r.name, opts.preconditions, { dryRun });
        if (!dryRun) this.afterDelete(r.type, gone);
        return reply(200, gone);
      }
      default:
        throw new ApiError(405, 'MethodNotAllowed', `${method} is not supported`);
    }
  }

  private read(req: IncomingMessage, res: ServerResponse, r: Route, q: URLSearchParams): void {
    const table = TABLE.test(req.headers.accept ?? '');
    if (r.name !== undefined) {
      const obj = this.store.get(r.key, r.namespace!, r.name);
      return send(res, 200, table ? toTable(r.type, [obj], q.get('includeObject'), { resourceVersion: obj.metadata.resourceVersion }) : obj);
    }
    if (q.get('watch') === 'true' || q.get('watch') === '1') return this.watch(res, r, q, table);
    const { items, metadata } = this.page(this.select(this.store.list(r.key, r.namespace), q), q);
    if (table) return send(res, 200, toTable(r.type, items, q.get('includeObject'), metadata));
    send(res, 200, { apiVersion: apiVersionOf(r.type), kind: `${r.type.kind}List`, metadata, items });
  }

  /** limit/continue: items in key order; the token carries the list's resourceVersion and the last key served. */
  private page(all: KubeObject[], q: URLSearchParams): { items: KubeObject[]; metadata: Record<string, unknown> } {
    const token = q.get('continue');
    const limit = Number(q.get('limit') ?? 0);
    let rv = this.store.resourceVersion;
    // Unpaginated lists (the operator's and the gateway's informers, at 50,000 keys) skip the sort.
    if (!token && !(limit > 0)) return { items: all, metadata: { resourceVersion: String(rv) } };
    const keyOf = (o: KubeObject) => `${o.metadata.namespace ?? ''}/${o.metadata.name}`;
    const sorted = all.map((o) => [keyOf(o), o] as const).sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)).map(([, o]) => o);
    let rest = sorted;
    if (token) {
      let parsed: { rv: number; start: string };
      try {
        parsed = JSON.parse(Buffer.from(token, 'base64').toString('utf8')) as { rv: number; start: string };
        if (typeof parsed.rv !== 'number' || typeof parsed.start !== 'string') throw new Error('bad token');
      } catch {
        throw new ApiError(400, 'BadRequest', 'continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)');
      }
      if (this.store.eventsSince(parsed.rv) === undefined) throw new ApiError(410, 'Expired', 'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.');
      rv = parsed.rv;
      rest = sorted.filter((o) => keyOf(o) > parsed.start);
    }
    const metadata: Record<string, unknown> = { resourceVersion: String(rv) };
    if (limit > 0 && rest.length > limit) {
      const items = rest.slice(0, limit);
      metadata.continue = Buffer.from(JSON.stringify({ rv, start: keyOf(items[items.length - 1]) })).toString('base64');
      metadata.remainingItemCount = rest.length - limit;
      return { items, metadata };
    }
    return { items: rest, metadata };
  }

  private create(ctx: WriteCtx, body: KubeObject, applied = false): KubeObject {
    const { r } = ctx;
    if (this.strict && r.type.namespaced && !this.store.find(typeKey({ group: '', version: 'v1', plural: 'namespaces' }), '', r.namespace!)) {
      throw new ApiError(404, 'NotFound', `namespaces "${r.namespace}" not found`, { name: r.namespace, kind: 'namespaces' });
    }
    const created = this.store.create(r.key, r.namespace!, body, this.writeOptions(ctx, applied));
    if (!ctx.dryRun && r.type.kind === 'CustomResourceDefinition') this.syncCrd(created, undefined);
    return created;
  }

  /** Server-side apply: create when absent, else merge by field ownership (managed-fields.ts). */
  private apply(ctx: WriteCtx, name: string): [number, KubeObject] {
    const { r, q, raw } = ctx;
    const manager = q.get('fieldManager');
    if (!manager) throw new ApiError(400, 'BadRequest', 'PATCH requests with an apply patch must specify a fieldManager');
    let config: KubeObject;
    try {
      config = parseYaml(raw.toString('utf8')) as KubeObject;
    } catch (err) {
      throw new ApiError(400, 'BadRequest', `error decoding YAML: ${(err as Error).message}`);
    }
    if (config === null || typeof config !== 'object' || Array.isArray(config)) throw new ApiError(400, 'BadRequest', 'an apply patch is one object');
    config.metadata ??= { name };
    if (config.apiVersion !== apiVersionOf(r.type) || config.kind !== r.type.kind) throw new ApiError(400, 'BadRequest', `the apply patch must have apiVersion ${apiVersionOf(r.type)} and kind ${r.type.kind}`);
    if (config.metadata.name !== name) throw new ApiError(400, 'BadRequest', 'the name of the object does not match the name on the URL');
    const force = q.get('force') === 'true';
    const current = this.store.find(r.key, r.namespace!, name);
    const next = serverSideApply(current, config, manager, force, apiVersionOf(r.type), r.subresource);
    if (!current) return [201, this.create(ctx, next, true)];
    next.metadata.resourceVersion = config.metadata.resourceVersion ?? current.metadata.resourceVersion;
    const updated = this.store.update(r.key, r.namespace!, name, next, r.subresource, this.writeOptions(ctx, true));
    return [200, updated];
  }

  /** The admission chain every write goes through, in the server's order. */
  private writeOptions(ctx: WriteCtx, applied: boolean): WriteOptions {
    const { r, q, req, warnings } = ctx;
    const fieldValidation = q.get('fieldValidation') ?? 'Warn';
    if (!['Strict', 'Warn', 'Ignore'].includes(fieldValidation)) throw new ApiError(400, 'BadRequest', `fieldValidation must be one of Strict, Warn, Ignore (got "${fieldValidation}")`);
    const manager = q.get('fieldManager') ?? (req.headers['user-agent'] ?? 'unknown').split('/')[0];
    return {
      dryRun: ctx.dryRun,
      admit: (next, current) => {
        const t = r.type;
        if (t.kind === 'CustomResourceDefinition') this.admitCrd(next);
        if (t.kind === 'Namespace' && t.group === '') withNamespaceStatus(next);
        if (this.strict) {
          if (t.schema) this.admitCustom(t, next, current, fieldValidation, warnings);
          const annotations = Object.entries(next.metadata.annotations ?? {}).reduce((n, [k, v]) => n + k.length + String(v).length, 0);
          if (annotations > MAX_ANNOTATION_BYTES) throw invalid(t, next.metadata.name, [{ reason: 'FieldValueTooLong', field: 'metadata.annotations', message: `Too long: must have at most ${MAX_ANNOTATION_BYTES} bytes` }]);
          // A client that sends managedFields sets them (kubectl does, migrating client-side apply to server-side).
          const sent = (parseMaybe(ctx.raw) as KubeObject | undefined)?.metadata?.managedFields;
          const explicit = sent !== undefined && JSON.stringify(sent) !== JSON.stringify(current?.metadata.managedFields);
          if (!applied && !explicit) recordUpdate(current, next, manager, apiVersionOf(t), r.subresource);
        }
        // Checked on writes through HTTP only, so tests that fill the store directly pay nothing for it.
        if (Buffer.byteLength(JSON.stringify(next)) > MAX_OBJECT_BYTES) throw new ApiError(413, 'RequestEntityTooLarge', 'etcdserver: request is too large');
        return next;
      },
    };
  }

  /** A custom resource against its CRD schema: unknown fields, defaults, structural checks, then CEL. */
  private admitCustom(t: ResourceType, obj: KubeObject, current: KubeObject | undefined, fieldValidation: string, warnings: string[]): void {
    const unknown = prune(obj, t.schema!);
    if (unknown.length && fieldValidation === 'Strict') {
      throw new ApiError(400, 'BadRequest', `${t.kind} in version "${t.version}" cannot be handled as a ${t.kind}: strict decoding error: ${unknown.map((f) => `unknown field "${f}"`).join(', ')}`);
    }
    if (fieldValidation === 'Warn') for (const f of unknown) warnings.push(`unknown field "${f}"`);
    applyDefaults(obj, t.schema!);
    const causes: FieldCause[] = [];
    validateSchema(obj, t.schema!, '', causes);
    if (causes.length === 0) validateCel(obj, current, t.schema!, '', causes);
    if (causes.length) throw invalid(t, obj.metadata.name, causes);
  }

  /** A CRD is accepted when its name, group and names agree and one served version is the storage version. */
  private admitCrd(obj: KubeObject): KubeObject {
    const crd = obj as unknown as CrdObject & KubeObject;
    const t = this.store.types.get(typeKey({ group: 'apiextensions.k8s.io', version: 'v1', plural: 'customresourcedefinitions' }))!;
    const causes: FieldCause[] = [];
    const spec = crd.spec as Partial<CrdObject['spec']> | undefined;
    if (!spec?.group || !spec.names?.plural || !spec.names.kind) causes.push({ reason: 'FieldValueRequired', field: 'spec', message: 'Required value: group, names.plural and names.kind' });
    else if (obj.metadata.name !== `${spec.names.plural}.${spec.group}`) causes.push({ reason: 'FieldValueInvalid', field: 'metadata.name', message: `Invalid value: ${JSON.stringify(obj.metadata.name)}: must be spec.names.plural+"."+spec.group` });
    if (!Array.isArray(spec?.versions) || spec.versions.filter((v) => v.storage).length !== 1) causes.push({ reason: 'FieldValueInvalid', field: 'spec.versions', message: 'Invalid value: "array": must have exactly one version marked as storage version' });
    if (causes.length) throw invalid(t, obj.metadata.name, causes);
    obj.status = {
      conditions: ['NamesAccepted', 'Established'].map((type) => ({ type, status: 'True', reason: type === 'Established' ? 'InitialNamesAccepted' : 'NoConflicts', message: type === 'Established' ? 'the initial names have been accepted' : 'no conflicts found', lastTransitionTime: obj.metadata.creationTimestamp ?? new Date().toISOString().replace(/\.\d+Z$/, 'Z') })),
      acceptedNames: spec!.names,
      storedVersions: spec!.versions!.filter((v) => v.storage).map((v) => v.name),
    };
    return obj;
  }

  /** Serves what a CRD defines now, and stops serving what it no longer does (with the objects of that type). */
  private syncCrd(now: KubeObject | undefined, before: KubeObject | undefined): void {
    const keys = (o: KubeObject | undefined) => (o ? typesOfCrd(o as unknown as CrdObject).map((t) => [typeKey(t), t] as const) : []);
    const next = new Map(keys(now));
    for (const [key] of keys(before)) if (!next.has(key)) this.store.removeType(key);
    for (const t of next.values()) this.store.addType(t);
  }

  private afterDelete(t: ResourceType, gone: KubeObject): void {
    if (gone.metadata.deletionTimestamp && (gone.metadata.finalizers ?? []).length > 0) return;
    if (t.kind === 'CustomResourceDefinition') this.syncCrd(undefined, gone);
    if (t.kind === 'Namespace' && t.group === '') {
      // Namespace deletion takes its content with it (here at once; the real server does it in the background).
      for (const [key, type] of this.store.types) {
        if (!type.namespaced) continue;
        for (const o of this.store.list(key, gone.metadata.name)) {
          try {
            this.store.delete(key, gone.metadata.name, o.metadata.name);
          } catch {
            // already gone
          }
        }
      }
    }
  }

  private matcher(q: URLSearchParams): (o: KubeObject | undefined) => boolean {
    let labels: ReturnType<typeof parseLabelSelector>;
    let fields: ReturnType<typeof parseFieldSelector>;
    try {
      labels = parseLabelSelector(q.get('labelSelector'));
      fields = parseFieldSelector(q.get('fieldSelector'));
    } catch (err) {
      throw new ApiError(400, 'BadRequest', (err as Error).message);
    }
    return (o) => o !== undefined && labels(o.metadata.labels ?? {}) && fields(o);
  }

  private select(items: KubeObject[], q: URLSearchParams): KubeObject[] {
    const match = this.matcher(q);
    return items.filter(match);
  }

  private watch(res: ServerResponse, r: Route, q: URLSearchParams, table = false): void {
    this.stats.watches++;
    const match = this.matcher(q);
    const inNs = (o: KubeObject | undefined) => o !== undefined && (r.namespace === undefined || (o.metadata.namespace ?? '') === r.namespace) && match(o);
    const rvParam = q.get('resourceVersion');
    res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-cache' });
    res.flushHeaders();
    const includeObject = q.get('includeObject');
    const write = (type: string, object: unknown) => {
      // `kubectl get -w` asks for Tables: each event then carries a one-row Table of the object.
      const o = table && type !== 'BOOKMARK' ? toTable(r.type, [object as KubeObject], includeObject, { resourceVersion: (object as KubeObject).metadata.resourceVersion }) : object;
      if (!this.stalled && !res.writableEnded) res.write(JSON.stringify({ type, object: o }) + '\n');
    };
    const deliver = (e: StoredEvent) => {
      if (e.key !== r.key) return;
      const now = inNs(e.obj);
      const before = inNs(e.prev);
      if (e.type === 'ADDED' && now) write('ADDED', e.obj);
      else if (e.type === 'MODIFIED') {
        if (now && before) write('MODIFIED', e.obj);
        else if (now) write('ADDED', e.obj);
        else if (before) write('DELETED', e.obj);
      } else if (e.type === 'DELETED' && (now || before)) write('DELETED', e.obj);
    };
    if (rvParam && rvParam !== '0') {
      const since = this.store.eventsSince(Number(rvParam));
      if (since === undefined || !/^\d+$/.test(rvParam)) {
        this.stats.gone++;
        res.end(JSON.stringify({ type: 'ERROR', object: { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: `too old resource version: ${rvParam} (${this.store.resourceVersion})`, reason: 'Expired', code: 410 } }) + '\n');
        return;
      }
      for (const e of since) deliver(e);
    } else {
      for (const o of this.store.list(r.key, r.namespace)) if (match(o)) write('ADDED', o);
    }
    const unsubscribe = this.store.onEvent(deliver);
    this.watches.add(res);
    const bookmarks = q.get('allowWatchBookmarks') === 'true'
      ? setInterval(() => write('BOOKMARK', { kind: r.type.kind, apiVersion: apiVersionOf(r.type), metadata: { resourceVersion: String(this.store.resourceVersion) } }), this.bookmarkIntervalMs)
      : undefined;
    const timeoutSeconds = Number(q.get('timeoutSeconds') ?? 0);
    const timeout = timeoutSeconds > 0 ? setTimeout(() => res.end(), timeoutSeconds * 1000) : undefined;
    const cleanup = () => {
      unsubscribe();
      clearInterval(bookmarks);
      clearTimeout(timeout);
      this.watches.delete(res);
    };
    // Not req 'close': that fires as soon as the (empty) request body has been read.
    res.on('close', cleanup);
  }
}

function send(res: ServerResponse, code: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(code, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function sendText(res: ServerResponse, code: number, text: string): void {
  res.writeHead(code, { 'content-type': 'text/plain; charset=utf-8', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function sendStatus(res: ServerResponse, code: number, reason: string, message: string, details?: ApiError['details']): void {
  send(res, code, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, details, code });
}

interface WriteCtx {
  r: Route;
  q: URLSearchParams;
  req: IncomingMessage;
  raw: Buffer;
  warnings: string[];
  dryRun: boolean;
}

function parseBody(raw: Buffer): KubeObject {
  try {
    return JSON.parse(raw.toString('utf8') || '{}') as KubeObject;
  } catch {
    throw new ApiError(400, 'BadRequest', 'the request body is not valid JSON');
  }
}

function parseMaybe(raw: Buffer): unknown {
  try {
    return JSON.parse(raw.toString('utf8'));
  } catch {
    return undefined;
  }
}

/** 422 Invalid in the server's shape: `<Kind>.<group> "<name>" is invalid: <field>: <detail>` plus one cause each. */
function invalid(t: ResourceType, name: string, causes: FieldCause[]): ApiError {
  const qualified = t.group ? `${t.kind}.${t.group}` : t.kind;
  const lines = causes.map((c) => `${c.field}: ${c.message}`);
  const message = `${qualified} "${name}" is invalid: ${lines.length === 1 ? lines[0] : `[${lines.join(', ')}]`}`;
  return new ApiError(422, 'Invalid', message, { name, group: t.group || undefined, kind: t.kind, causes });
}

function withNamespaceStatus(o: KubeObject): KubeObject {
  o.spec = { finalizers: ['kubernetes'], ...(o.spec as object | undefined) };
  o.status = { phase: o.metadata.deletionTimestamp ? 'Terminating' : 'Active' };
  return o;
}

export async function startFakeApiServer(opts: FakeApiServerOptions = {}): Promise<FakeApiServer> {
  return new FakeApiServer(opts).start();
}
