// A fake Kubernetes API server over real HTTP, so tests drive the operator and the gateway through the real
// @kubernetes/client-node (its list calls, patch content types and Watch stream parsing). The rules live in
// object-store.ts; this file is the REST surface: paths, verbs, patch types, selectors and watch streams
// with BOOKMARKs and 410 Gone. It is a test double, not a product: see README.md beside it for what it leaves out.
import { KubeConfig } from '@kubernetes/client-node';
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { KubeObject, StoredEvent } from './object-store.ts';
import { ApiError, ObjectStore } from './object-store.ts';
import { jsonPatch, mergePatch, PatchError } from './patch.ts';
import type { ResourceType } from './resources.ts';
import { apiVersionOf, RESOURCE_TYPES, typeKey } from './resources.ts';
import { parseFieldSelector, parseLabelSelector } from './selectors.ts';

export interface FakeApiServerOptions {
  port?: number;
  /** How often a watch that asked for allowWatchBookmarks gets a BOOKMARK (the real server: about a minute). */
  bookmarkIntervalMs?: number;
  /** Events kept for watch replay; older resourceVersions get 410 Gone. */
  historyLimit?: number;
}

interface Route {
  type: ResourceType;
  key: string;
  namespace: string | undefined;
  name: string | undefined;
  subresource: 'status' | undefined;
}

const PATH = /^\/(?:api\/(v1)|apis\/([^/]+)\/([^/]+))(?:\/namespaces\/([^/]+))?\/([^/]+)(?:\/([^/]+))?(?:\/([^/]+))?$/;

export class FakeApiServer {
  readonly store: ObjectStore;
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
    this.store = new ObjectStore(RESOURCE_TYPES, { historyLimit: opts.historyLimit });
    this.port = opts.port ?? 0;
    this.bookmarkIntervalMs = opts.bookmarkIntervalMs ?? 1000;
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

  private handle(req: IncomingMessage, res: ServerResponse): void {
    this.stats.requests++;
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const run = () => {
        try {
          this.dispatch(req, res, Buffer.concat(chunks));
        } catch (err) {
          if (err instanceof ApiError || err instanceof PatchError) sendStatus(res, err.code, err instanceof ApiError ? err.reason : err.code === 422 ? 'Invalid' : 'BadRequest', err.message);
          else sendStatus(res, 500, 'InternalError', (err as Error).message);
        }
      };
      const url = new URL(req.url ?? '/', 'http://x');
      const ms = this.delay?.({ method: req.method ?? 'GET', path: url.pathname, watch: url.searchParams.get('watch') === 'true' || url.searchParams.get('watch') === '1' }) ?? 0;
      if (ms > 0) setTimeout(run, ms);
      else run();
    });
  }

  private route(url: URL): Route {
    const m = url.pathname.match(PATH);
    if (!m) throw new ApiError(404, 'NotFound', `the server could not find the requested resource (${url.pathname})`);
    const [, coreVersion, group, groupVersion, namespace, plural, name, subresource] = m;
    const key = typeKey({ group: coreVersion ? '' : group, version: coreVersion ?? groupVersion, plural });
    const type = this.store.type(key);
    if (subresource !== undefined && subresource !== 'status') throw new ApiError(404, 'NotFound', `the server could not find the requested resource (${plural}/${subresource})`);
    return { type, key, namespace, name, subresource: subresource as 'status' | undefined };
  }

  private dispatch(req: IncomingMessage, res: ServerResponse, raw: Buffer): void {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname === '/version') return send(res, 200, { major: '1', minor: '33', gitVersion: 'v1.33.0-tollgate-fake' });
    const r = this.route(url);
    const q = url.searchParams;
    const method = req.method ?? 'GET';
    if (method !== 'GET') this.stats.writesByResource[r.type.plural] = (this.stats.writesByResource[r.type.plural] ?? 0) + 1;
    const body = (): KubeObject => {
      try {
        return JSON.parse(raw.toString('utf8') || '{}') as KubeObject;
      } catch {
        throw new ApiError(400, 'BadRequest', 'the request body is not valid JSON');
      }
    };
    if (method === 'GET' && r.name === undefined) {
      if (q.get('watch') === 'true' || q.get('watch') === '1') return this.watch(res, r, q);
      const items = this.select(this.store.list(r.key, r.namespace), q);
      return send(res, 200, { apiVersion: apiVersionOf(r.type), kind: `${r.type.kind}List`, metadata: { resourceVersion: String(this.store.resourceVersion) }, items });
    }
    if (r.namespace === undefined) throw new ApiError(405, 'MethodNotAllowed', 'only list and watch work across namespaces here');
    if (method === 'POST' && r.name === undefined) {
      this.stats.writes++;
      return send(res, 201, this.store.create(r.key, r.namespace, body()));
    }
    if (r.name === undefined) throw new ApiError(405, 'MethodNotAllowed', `${method} needs a name`);
    switch (method) {
      case 'GET':
        return send(res, 200, this.store.get(r.key, r.namespace, r.name));
      case 'PUT':
        this.stats.writes++;
        return send(res, 200, this.store.update(r.key, r.namespace, r.name, body(), r.subresource));
      case 'PATCH': {
        this.stats.writes++;
        const current = this.store.get(r.key, r.namespace, r.name);
        const type = (req.headers['content-type'] ?? '').split(';')[0].trim();
        let patched: unknown;
        if (type === 'application/merge-patch+json' || type === 'application/strategic-merge-patch+json') patched = mergePatch(current, body());
        else if (type === 'application/json-patch+json') patched = jsonPatch(current, body());
        else throw new ApiError(415, 'UnsupportedMediaType', `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json (got "${type}")`);
        return send(res, 200, this.store.update(r.key, r.namespace, r.name, patched as KubeObject, r.subresource));
      }
      case 'DELETE': {
        this.stats.writes++;
        const opts = raw.length ? (body() as unknown as { preconditions?: { resourceVersion?: string; uid?: string } }) : {};
        return send(res, 200, this.store.delete(r.key, r.namespace, r.name, opts.preconditions));
      }
      default:
        throw new ApiError(405, 'MethodNotAllowed', `${method} is not supported`);
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

  private watch(res: ServerResponse, r: Route, q: URLSearchParams): void {
    this.stats.watches++;
    const match = this.matcher(q);
    const inNs = (o: KubeObject | undefined) => o !== undefined && (r.namespace === undefined || o.metadata.namespace === r.namespace) && match(o);
    const rvParam = q.get('resourceVersion');
    res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-cache' });
    res.flushHeaders();
    const write = (type: string, object: unknown) => {
      if (!this.stalled && !res.writableEnded) res.write(JSON.stringify({ type, object }) + '\n');
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

function sendStatus(res: ServerResponse, code: number, reason: string, message: string): void {
  send(res, code, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code });
}

export async function startFakeApiServer(opts: FakeApiServerOptions = {}): Promise<FakeApiServer> {
  return new FakeApiServer(opts).start();
}
