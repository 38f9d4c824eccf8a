// The admin port (default 9464), kept off the API port so it is never exposed with the API: /metrics (Prometheus
// text), /upstreams and /healthz without auth as before, and the admin API (/admin/v1/*, admin tokens), the console's
// static files and the OpenAPI document. Its own fastify instance: a scrape still works while the API port is
// saturated or draining.
import Fastify from 'fastify';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import type { z } from 'zod';
import { ADMIN_HANDLERS } from './catalogue.ts';
import { registerConsole } from './console-files.ts';
import { AdminError } from './errors.ts';
import type { AdminErrorDetail } from './errors.ts';
import type { AdminContext, AdminRoute } from './route.ts';
import type { AdminToken } from './tokens.ts';
import { matchAdminToken } from './tokens.ts';

export interface AdminServer {
  /** A URL that reaches it from this machine. */
  url: string;
  /** The address actually bound, `host:port`. */
  bound: string;
  /** Every route it serves (for the OpenAPI conformance check). */
  listRoutes(): { method: string; path: string }[];
  close(): Promise<void>;
}

export interface AdminLogger {
  info(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export interface AdminServerOptions {
  port: number;
  host?: string;
  prometheus: PrometheusExporter;
  log?: AdminLogger;
  /** The /upstreams body: each upstream target's health in this process. */
  upstreams?: () => unknown;
  /** The admin API; absent: only /metrics, /upstreams and /healthz. */
  admin?: AdminContext & { tokens: readonly AdminToken[] };
  /** Directory of the built console (index.html and its assets). */
  consoleDir?: string;
  /** The OpenAPI document, served at /openapi.json when given: its pre-serialised bytes (gateway/openapi/document.ts) or an object. */
  openapi?: () => Buffer | object;
}

/** Largest admin request body: configuration edits are small. */
const MAX_ADMIN_BODY = 1024 * 1024;
const WRITES = new Set(['POST', 'PATCH', 'PUT', 'DELETE']);

declare module 'fastify' {
  interface FastifyRequest {
    adminWho?: AdminToken;
    adminTarget?: string;
  }
}

export async function startAdminServer(opts: AdminServerOptions): Promise<AdminServer | undefined> {
  const app = Fastify({ logger: false, exposeHeadRoutes: false, bodyLimit: MAX_ADMIN_BODY, return503OnClosing: false });
  const routes: { method: string; path: string }[] = [];
  app.addHook('onRoute', (r) => {
    for (const m of [r.method].flat()) routes.push({ method: m, path: r.url });
  });
  app.get('/metrics', (req, reply) => {
    reply.hijack();
    opts.prometheus.getMetricsRequestHandler(req.raw, reply.raw);
  });
  if (opts.upstreams) {
    const view = opts.upstreams;
    app.get('/upstreams', (_req, reply) => reply.header('cache-control', 'no-store').send(view()));
  }
  app.get('/healthz', (_req, reply) => reply.header('content-type', 'text/plain').send('ok\n'));
  if (opts.openapi) {
    const doc = opts.openapi;
    app.get('/openapi.json', (_req, reply) => reply.header('content-type', 'application/json; charset=utf-8').header('cache-control', 'no-cache').send(doc()));
  }
  if (opts.consoleDir) registerConsole(app, opts.consoleDir);
  if (opts.admin) registerAdminApi(app, opts.admin, opts.log);
  app.setNotFoundHandler((req, reply) => {
    if (req.url.startsWith('/admin/')) return sendError(reply, new AdminError('not_found', `No admin route ${req.method} ${req.url.split('?')[0]}.`));
    return reply.code(404).header('content-type', 'text/plain').send('not found: the admin port serves /metrics, /upstreams, /admin/v1 and the console\n');
  });

  // Loopback unless told: the metrics carry cost per organization, the admin API edits keys.
  try {
    await app.listen({ port: opts.port, host: opts.host ?? '127.0.0.1' });
  } catch (err) {
    // The admin port is not worth refusing traffic for: the API keeps serving and the failure is logged.
    opts.log?.error({ err: (err as Error).message, port: opts.port }, 'admin server could not listen');
    await app.close().catch(() => undefined);
    return undefined;
  }
  const addr = app.server.address() as { port: number; address: string; family: string };
  const bound = `${addr.family === 'IPv6' ? `[${addr.address}]` : addr.address}:${addr.port}`;
  return {
    url: `http://${addr.address === '0.0.0.0' || addr.address === '::' ? `127.0.0.1:${addr.port}` : bound}`,
    bound,
    listRoutes: () => routes.map((r) => ({ ...r })),
    close: async () => {
      app.server.closeAllConnections();
      await app.close();
    },
  };
}

function sendError(reply: FastifyReply, err: AdminError): FastifyReply {
  return reply.code(err.status).header('content-type', 'application/json; charset=utf-8').header('cache-control', 'no-store').send(JSON.stringify(err.toJSON()));
}

function registerAdminApi(app: FastifyInstance, ctx: AdminContext & { tokens: readonly AdminToken[] }, log: AdminLogger | undefined): void {
  app.removeAllContentTypeParsers();
  // JSON only (anything else is 415, so no cross-site form can post here); an empty body is no body.
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, text, done) => {
    if (text === '') return done(null, undefined);
    try {
      done(null, JSON.parse(text as string));
    } catch {
      done(new AdminError('invalid_request', 'The body is not valid JSON.'), undefined);
    }
  });
  app.setErrorHandler((err: FastifyError | AdminError, req, reply) => {
    if (err instanceof AdminError) return sendError(reply, err);
    if (err.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') return sendError(reply, new AdminError('unsupported_media_type', 'Send the body as application/json.'));
    if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return sendError(reply, new AdminError('invalid_request', `The body is larger than ${MAX_ADMIN_BODY} bytes.`, { status: 413 }));
    if (typeof err.statusCode === 'number' && err.statusCode >= 400 && err.statusCode < 500) return sendError(reply, new AdminError('invalid_request', err.message, { status: err.statusCode }));
    log?.error({ err: err.message, method: req.method, path: req.url.split('?')[0] }, 'admin API call failed');
    return sendError(reply, new AdminError('internal', 'The admin API failed; the gateway log has the details.'));
  });
  // One audit line per call, whatever its outcome (401s included): who, what, when, how it ended; never a token or body.
  app.addHook('onResponse', async (req, reply) => {
    if (!req.url.startsWith('/admin/')) return;
    log?.info(
      { audit: true, who: req.adminWho?.name ?? null, role: req.adminWho?.role ?? null, method: req.method, path: req.url.split('?')[0], status: reply.statusCode, ms: Math.round(reply.elapsedTime), ...(req.adminTarget ? { target: req.adminTarget } : {}) },
      'admin call',
    );
  });
  for (const route of ADMIN_HANDLERS) registerRoute(app, ctx, route);
}

function bearer(req: FastifyRequest): string | undefined {
  const h = req.headers.authorization;
  if (typeof h !== 'string') return undefined;
  const m = /^Bearer +(\S+)\s*$/i.exec(h);
  return m?.[1];
}

/** The admin server's own origin as the browser names it (the console is served from it). */
function sameOrigin(req: FastifyRequest, origin: string): boolean {
  const host = req.headers.host;
  return host !== undefined && (origin === `http://${host}` || origin === `https://${host}`);
}

function isEmptyObject(v: unknown): boolean {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && Object.keys(v).length === 0;
}

function parse(schema: z.ZodType | undefined, value: unknown, location: string): unknown {
  if (!schema) return undefined;
  const r = schema.safeParse(value ?? (location === 'body' ? undefined : {}));
  if (r.success) return r.data;
  const details: AdminErrorDetail[] = r.error.issues.map((i) => ({ location: [location, ...i.path.map(String)].join('.'), message: i.message }));
  throw new AdminError('invalid_request', `Invalid ${location}: ${details.map((d) => `${d.location}: ${d.message}`).join('; ')}`, { details });
}

function registerRoute(app: FastifyInstance, ctx: AdminContext & { tokens: readonly AdminToken[] }, route: AdminRoute): void {
  const { spec } = route;
  const write = spec.security === 'adminWrite';
  app.route({
    method: spec.method,
    url: spec.path,
    // Before the body is read: an unauthenticated or cross-site caller gets nothing parsed.
    onRequest: async (req, reply) => {
      if (ctx.tokens.length === 0) {
        return sendError(reply, new AdminError('admin_disabled', 'The admin API is off: no admin tokens are configured. Set TOLLGATE_ADMIN_TOKENS="name:write:<random token>" (or TOLLGATE_ADMIN_TOKENS_FILE) and restart.'));
      }
      const presented = bearer(req);
      const who = presented === undefined ? undefined : matchAdminToken(ctx.tokens, presented);
      if (!who) {
        reply.header('www-authenticate', 'Bearer realm="tollgate-admin"');
        return sendError(reply, new AdminError('unauthorized', presented === undefined ? 'Send an admin token: Authorization: Bearer <token>.' : 'That is not an admin token (API keys are not accepted here).'));
      }
      req.adminWho = who;
      if (WRITES.has(req.method)) {
        const origin = req.headers.origin;
        if (origin !== undefined && !sameOrigin(req, origin)) return sendError(reply, new AdminError('forbidden', 'Cross-origin writes are refused.'));
        const type = req.headers['content-type'];
        if (type !== undefined && !/^application\/json\s*(;|$)/i.test(type)) return sendError(reply, new AdminError('unsupported_media_type', 'Send the body as application/json.'));
      }
      if (write && who.role !== 'write') return sendError(reply, new AdminError('forbidden', `Token "${who.name}" is read-only.`));
      if (write && ctx.mode === 'kubernetes') return sendError(reply, new AdminError('read_only', 'This gateway runs on Kubernetes: its configuration is the tollgate custom resources. Change them with kubectl or GitOps; the admin API only reads there.'));
    },
    handler: async (req, reply) => {
      const input = {
        params: parse(spec.params, req.params, 'params'),
        query: parse(spec.query, req.query, 'query'),
        body: parse(spec.body, req.body, 'body'),
        who: req.adminWho!,
      } as Parameters<AdminRoute['handle']>[1];
      // A bodiless call may still send `{}` (what many fetch wrappers do); anything more is a mistake worth saying.
      if (!spec.body && req.body !== undefined && !isEmptyObject(req.body)) throw new AdminError('invalid_request', 'This call takes no body.');
      const out = await route.handle(ctx, input);
      req.adminTarget = out.target;
      reply.code(out.status ?? 200).header('content-type', 'application/json; charset=utf-8');
      if (!out.headers?.['cache-control']) reply.header('cache-control', 'no-store');
      for (const [k, v] of Object.entries(out.headers ?? {})) reply.header(k, v);
      return reply.send(JSON.stringify(out.body));
    },
  });
}
