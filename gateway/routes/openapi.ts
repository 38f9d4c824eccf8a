// GET /openapi.json: the OpenAPI 3.1 document for the public and admin API (docs/openapi.md), no auth.
import type { FastifyInstance } from 'fastify';
import { openApiJson } from '../openapi/document.ts';

export function registerOpenApiRoute(app: FastifyInstance): void {
  app.get('/openapi.json', async (_req, reply) => {
    await reply.header('content-type', 'application/json; charset=utf-8').header('cache-control', 'public, max-age=300').send(openApiJson());
  });
}
