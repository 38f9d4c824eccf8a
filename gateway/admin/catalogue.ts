// Every admin-port route's declaration (gateway/openapi/spec.ts), in one list for the OpenAPI document.
import type { RouteSpec } from '../openapi/spec.ts';

export const ADMIN_ROUTES: RouteSpec[] = [];
