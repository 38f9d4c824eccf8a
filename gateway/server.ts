// Builds the HTTP server: body parsing, routes, and errors in each family's shape (nothing here knows SQL or providers).
import { randomUUID } from 'node:crypto';
import Fastify, { LogController } from 'fastify';
import type { FastifyBaseLogger, FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ErrorFamily } from './errors.ts';
import { GatewayError, renderError } from './errors.ts';
import { bodyTimeouts, clientErrorHandler, notFoundHandler, RouteTable } from './http/framework-errors.ts';
import type { BodyTimeouts } from './http/framework-errors.ts';
import { stripQueryKey } from './http/query-key.ts';
import { withLazyChildren } from './http/request-logger.ts';
import { rememberRouteUrls } from './http/route-url.ts';
import { replyError } from './http/reply-error.ts';
import { registerChatRoutes } from './routes/chat.ts';
import { registerEmbeddingsRoutes } from './routes/embeddings.ts';
import type { GatewayContext } from './routes/context.ts';
import { registerGeminiRoutes } from './routes/gemini.ts';
import { registerHealthRoutes } from './routes/health.ts';
import { registerImageRoutes } from './routes/images.ts';
import { registerLimitsRoutes } from './routes/limits.ts';
import { registerMessagesRoutes } from './routes/messages.ts';
import { registerModelRoutes } from './routes/models.ts';
import { registerOpenApiRoute } from './routes/openapi.ts';
import { registerResponsesRoutes } from './routes/responses.ts';
import { registerUnifiedRoutes } from './routes/unified.ts';
import { registerUsageRoutes } from './routes/usage.ts';
import { instrumentRefused, instrumentServer } from './telemetry/request-hook.ts';
import type { Telemetry } from './telemetry/telemetry.ts';

export interface ServerOptions {
  /** Largest JSON body accepted on chat-style routes (configurable; image routes take 64 MiB). */
  maxBodyBytes: number;
  /** How long a request body may take to arrive (default: 30 s JSON, 5 min uploads). */
  bodyTimeouts?: Partial<BodyTimeouts>;
  logger: FastifyBaseLogger;
  /** Per-request metrics, spans and the access log (absent or disabled: none). */
  telemetry?: Telemetry;
  /** Told of every route as it is registered (the OpenAPI check compares them with the declared routes). */
  onRoute?: (route: { method: string | string[]; url: string }) => void;
}

export const DEFAULT_BODY_TIMEOUTS: BodyTimeouts = { jsonMs: 30_000, uploadMs: 300_000 };

export function familyOf(url: string): ErrorFamily {
  if (url.startsWith('/api/v3/')) return 'compat';
  if (url.startsWith('/api/anthropic/') || url.startsWith('/api/v1/messages')) return 'messages';
  if (url.startsWith('/api/v1/gemini/')) return 'gemini';
  if (url.startsWith('/api/business/')) return 'problem';
  return 'chat';
}

export function buildServer(ctx: GatewayContext, opts: ServerOptions): FastifyInstance {
  const timeouts: BodyTimeouts = { jsonMs: opts.bodyTimeouts?.jsonMs ?? DEFAULT_BODY_TIMEOUTS.jsonMs, uploadMs: opts.bodyTimeouts?.uploadMs ?? DEFAULT_BODY_TIMEOUTS.uploadMs };
  const app = Fastify({
    // req.log / reply.log: the request's pino child is made only when something logs through it.
    loggerInstance: withLazyChildren(opts.logger),
    // One access line per request is ours to write (without bodies or keys); fastify's own request logs stay off.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: opts.maxBodyBytes,
    genReqId: () => randomUUID(),
    requestIdHeader: false,
    // Draining answers 503 in the family's shape (the hook below) rather than fastify's own body.
    return503OnClosing: false,
    // Node's own whole-request deadline stays as a backstop behind the per-body timers (bodyTimeouts).
    requestTimeout: Math.max(timeouts.jsonMs, timeouts.uploadMs) + 10_000,
    clientErrorHandler: clientErrorHandler(familyOf),
    forceCloseConnections: false,
    rewriteUrl: stripQueryKey,
    // Malformed URLs (bad percent escapes, over-long params) answer in the path's family too, not in fastify's shape.
    frameworkErrors: (err, req, reply) => {
      instrumentRefused(opts.telemetry, req, reply as FastifyReply);
      replyError(reply as FastifyReply, familyOf(req.url), new GatewayError('invalid_request', `The request URL is malformed (${err.code}).`), req.id);
    },
  });
  // Every body arrives as raw bytes: routes parse what they need and forward the rest untouched.
  rememberRouteUrls(app);
  instrumentServer(app, opts.telemetry);
  const routes = new RouteTable();
  routes.watch(app);
  if (opts.onRoute) app.addHook('onRoute', opts.onRoute);
  app.addHook('onRequest', (req, reply, done) => {
    if (!ctx.draining.value) return done();
    const r = renderError(familyOf(req.url), new GatewayError('shutting_down', 'The gateway is shutting down; retry on another instance.'), req.id);
    void reply.code(r.status).header('content-type', r.contentType).header('connection', 'close').send(r.body);
  });
  bodyTimeouts(app, familyOf, timeouts);
  app.removeAllContentTypeParsers();
  const asBuffer = (_req: unknown, body: Buffer, done: (err: null, body: Buffer) => void) => done(null, body);
  app.addContentTypeParser('*', { parseAs: 'buffer' }, asBuffer);
  // The same parser under its exact type: fastify caches the parser it found for a content type, but not the
  // catch-all, so without this every JSON request re-parsed its content-type header (~0.4 µs).
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, asBuffer);

  app.setErrorHandler((err: FastifyError, req: FastifyRequest, reply) => {
    const family = familyOf(req.url);
    let gerr: GatewayError;
    if (err instanceof GatewayError) gerr = err;
    else if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE') gerr = new GatewayError('request_too_large', `The request body is too large (limit ${req.routeOptions.bodyLimit ?? opts.maxBodyBytes} bytes).`);
    else if (err.statusCode !== undefined && err.statusCode >= 400 && err.statusCode < 500) gerr = new GatewayError('invalid_request', err.message);
    else {
      req.log.error({ err: { message: err.message, code: err.code, stack: err.stack } }, 'unhandled error');
      gerr = new GatewayError('internal', 'The gateway hit an internal error. The request id identifies it in our logs.');
    }
    replyError(reply, family, gerr, req.id);
  });
  app.setNotFoundHandler(notFoundHandler(routes, familyOf));

  registerHealthRoutes(app, ctx);
  registerModelRoutes(app, ctx);
  registerChatRoutes(app, ctx);
  registerImageRoutes(app, ctx);
  registerUnifiedRoutes(app, ctx);
  registerMessagesRoutes(app, ctx);
  registerResponsesRoutes(app, ctx);
  registerGeminiRoutes(app, ctx);
  registerUsageRoutes(app, ctx);
  registerEmbeddingsRoutes(app, ctx);
  registerLimitsRoutes(app, ctx);
  registerOpenApiRoute(app);
  return app;
}
