// One declaration per HTTP route: the zod schemas the route validates with, from which the OpenAPI document is
// generated and against which the route table is checked (every route documented, every documented route served).
import type { z } from 'zod';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** Which server serves the route: the API port or the admin port. */
export type RoutePort = 'api' | 'admin';

/** Who may call it: an sk_ API key, an admin token (read or read-write), or anyone. */
export type RouteSecurity = 'apiKey' | 'adminRead' | 'adminWrite' | 'none';

export interface ResponseSpec {
  description: string;
  /** Absent: no body (or a body not described, e.g. a stream). */
  schema?: z.ZodType;
  /** Default application/json. */
  contentType?: string;
}

export interface RouteSpec {
  method: HttpMethod;
  /** Fastify syntax: `/admin/v1/keys/:id`. */
  path: string;
  port: RoutePort;
  operationId: string;
  summary: string;
  tags: string[];
  security: RouteSecurity;
  params?: z.ZodObject;
  query?: z.ZodObject;
  body?: z.ZodType;
  responses: Record<number, ResponseSpec>;
}
