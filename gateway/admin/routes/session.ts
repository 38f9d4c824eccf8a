// GET /admin/v1/session: who the token is and whether this gateway takes writes.
import { adminRoute } from '../route.ts';
import { errorSchema, sessionSchema } from '../schemas.ts';

export const sessionRoutes = [
  adminRoute(
    {
      method: 'GET',
      path: '/admin/v1/session',
      port: 'admin',
      operationId: 'getAdminSession',
      summary: 'The calling token: its name, role, and whether writes are possible here.',
      tags: ['admin'],
      security: 'adminRead',
      responses: { 200: { description: 'The session.', schema: sessionSchema }, 401: { description: 'No or wrong token.', schema: errorSchema } },
    },
    (ctx, { who }) => ({ body: { name: who.name, role: who.role, mode: ctx.mode, writable: who.role === 'write' && ctx.mode === 'standalone' } }),
  ),
];
