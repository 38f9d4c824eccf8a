// The admin port's routes outside the admin API (/admin/v1, declared in gateway/admin/catalogue.ts): metrics,
// upstream health and the console's files. Its /healthz and /openapi.json share their paths with the API port's and
// are documented there (the admin port's /healthz answers text/plain `ok`).
import { z } from 'zod';
import type { RouteSpec } from './spec.ts';

const upstreamView = z.looseObject({
  provider: z.string(),
  model: z.string(),
  state: z.string().describe('healthy, ejected or half_open'),
  healthy: z.boolean(),
  consecutiveFailures: z.number().int(),
  ejectedUntil: z.string().nullable(),
  inFlight: z.number().int(),
  attempts: z.record(z.string(), z.number().int()),
  retries: z.number().int(),
  ejections: z.number().int(),
});

export const upstreamHealth = z
  .object({ generation: z.number().int().nullable(), upstreams: z.array(upstreamView) })
  .meta({ id: 'UpstreamHealth', description: "Each upstream target's health in this process." });

const plainText = z.string().meta({ id: 'Text', description: 'A text body.' });
const text = (description: string, contentType: string) => ({ description, contentType, schema: plainText });

export const ADMIN_PORT_ROUTES: RouteSpec[] = [
  {
    method: 'GET',
    path: '/metrics',
    port: 'admin',
    operationId: 'metrics',
    summary: 'Prometheus metrics',
    tags: ['operations'],
    security: 'none',
    responses: { 200: text('Prometheus text exposition format.', 'text/plain') },
  },
  {
    method: 'GET',
    path: '/upstreams',
    port: 'admin',
    operationId: 'upstreamHealth',
    summary: 'Upstream health in this process',
    tags: ['operations'],
    security: 'none',
    responses: { 200: { description: 'Every target, by provider and model.', schema: upstreamHealth } },
  },
  {
    method: 'GET',
    path: '/',
    port: 'admin',
    operationId: 'console',
    summary: 'The console (sign in with an admin token)',
    tags: ['operations'],
    security: 'none',
    responses: { 200: text('The console page.', 'text/html'), 404: text('The console is not built (no index.html in its directory).', 'text/plain') },
  },
  {
    method: 'GET',
    path: '/console/*',
    docPath: '/console/{asset}',
    port: 'admin',
    operationId: 'consoleAsset',
    summary: "The console's built assets",
    tags: ['operations'],
    security: 'none',
    params: z.object({ asset: z.string().describe('A hashed file name from the console build.') }),
    responses: { 200: { description: 'The file (JavaScript, CSS, fonts, images).' }, 404: { description: 'No such asset.' } },
  },
];
