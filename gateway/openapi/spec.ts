// One declaration per HTTP route: the zod schemas the route validates with, from which the OpenAPI document is
// generated and against which the route table is checked (every route documented, every documented route served).
import type { z } from 'zod';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** Which server serves the route: the API port or the admin port. */
export type RoutePort = 'api' | 'admin';

/**
 * Who may call it: an sk_ API key; an sk_ key that is optional (it widens the answer); an sk_ key also taken as
 * x-goog-api-key or ?key= (the gemini paths); an admin token (read or read-write); or anyone.
 */
export type RouteSecurity = 'apiKey' | 'apiKeyOptional' | 'apiKeyGemini' | 'adminRead' | 'adminWrite' | 'none';

export interface ResponseSpec {
  description: string;
  /** Absent: no body (or a body not described, e.g. a stream). */
  schema?: z.ZodType;
  /** Default application/json. */
  contentType?: string;
  /** The same status may instead answer as a server-sent event stream (`text/event-stream`, not described). */
  stream?: boolean;
}

export interface RouteSpec {
  method: HttpMethod;
  /** Fastify syntax: `/admin/v1/keys/:id`. */
  path: string;
  /**
   * The path as the document shows it, for a fastify wildcard (`/models/*`) that stands for a named parameter
   * (`/models/{model}`); `:id` params need none. Several specs may share one fastify route with different docPaths.
   */
  docPath?: string;
  port: RoutePort;
  operationId: string;
  summary: string;
  description?: string;
  tags: string[];
  security: RouteSecurity;
  params?: z.ZodObject;
  query?: z.ZodObject;
  body?: z.ZodType;
  /** Default application/json. */
  bodyContentType?: string;
  /** Further request content types the route takes beside `body` (e.g. multipart/form-data). */
  otherBodies?: Record<string, z.ZodType>;
  /** Keyed by HTTP status. */
  responses: Record<number, ResponseSpec>;
  /** Any other status (an upstream's own error, passed through with its status). */
  defaultResponse?: ResponseSpec;
}
