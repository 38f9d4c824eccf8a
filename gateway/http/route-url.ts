// The matched route's path pattern, read once per request. fastify's `req.routeOptions` is a getter that builds a
// dozen-field object on every read, and the body timer, the relay and telemetry each need the pattern.
import type { FastifyInstance, FastifyRequest } from 'fastify';

declare module 'fastify' {
  interface FastifyRequest {
    /** The pattern once read; false when the request matched no route. */
    routeUrlMemo: string | false | null;
  }
}

/** Call once on the root instance, before routes are registered. */
export function rememberRouteUrls(app: FastifyInstance): void {
  app.decorateRequest('routeUrlMemo', null);
}

/** The route's path pattern (`/api/v1/gemini/models/:model`), undefined when no route matched. */
export function routeUrl(req: FastifyRequest): string | undefined {
  const m = req.routeUrlMemo;
  if (typeof m === 'string') return m;
  if (m === false) return undefined;
  const url = req.routeOptions.url;
  req.routeUrlMemo = url ?? false;
  return url;
}
