// Every admin-port route's declaration (gateway/openapi/spec.ts), in one list for the OpenAPI document, and the
// routes with their handlers for the admin server.
import type { RouteSpec } from '../openapi/spec.ts';
import type { AdminRoute } from './route.ts';
import { catalogRoutes } from './routes/catalog.ts';
import { keyRoutes } from './routes/keys.ts';
import { organizationRoutes } from './routes/organizations.ts';
import { sessionRoutes } from './routes/session.ts';
import { usageRoutes } from './routes/usage.ts';

export const ADMIN_HANDLERS: readonly AdminRoute[] = [...sessionRoutes, ...organizationRoutes, ...keyRoutes, ...usageRoutes, ...catalogRoutes];

export const ADMIN_ROUTES: RouteSpec[] = ADMIN_HANDLERS.map((r) => r.spec);
