// GET /admin/v1/usage and /admin/v1/requests: the ledger's rollups and recent rows (never bodies).
import { z } from 'zod';
import { GatewayError } from '../../errors.ts';
import { parseRange } from '../../routes/usage.ts';
import { AdminError } from '../errors.ts';
import { adminRoute, decodeCursor, encodeCursor } from '../route.ts';
import { errorSchema, listOf, listQuery, requestSchema, usageSchema } from '../schemas.ts';

const errors = { 400: { description: 'Invalid query.', schema: errorSchema }, 401: { description: 'No or wrong token.', schema: errorSchema }, 503: { description: 'The ledger database cannot be reached.', schema: errorSchema } };

/** A ledger query that fails is the database's state, not the caller's mistake. */
async function fromLedger<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    throw new AdminError('internal', `The usage store cannot be reached right now (${(err as Error).message}); try again shortly.`, { status: 503 });
  }
}

type Cursor = [number, string];
const isCursor = (v: unknown): v is Cursor => Array.isArray(v) && v.length === 2 && Number.isSafeInteger(v[0]) && typeof v[1] === 'string';

export const usageRoutes = [
  adminRoute(
    {
      method: 'GET',
      path: '/admin/v1/usage',
      port: 'admin',
      operationId: 'getAdminUsage',
      summary: 'Usage and spend per hour or day, grouped by model, project, key or organization; exact decimal sums.',
      tags: ['admin'],
      security: 'adminRead',
      query: z.object({
        from: z.string().describe('RFC 3339 timestamp or YYYY-MM-DD (inclusive).'),
        to: z.string().describe('RFC 3339 timestamp or YYYY-MM-DD (exclusive); at most 366 days after from.'),
        bucket: z.enum(['hour', 'day']).default('day'),
        group_by: z.enum(['model', 'project', 'key', 'organization']).default('model'),
        organization: z.string().optional(),
        project: z.string().optional().describe('Empty or absent: every project of the organization.'),
        key: z.string().optional().describe('An API key id.'),
      }),
      responses: { 200: { description: 'The usage.', schema: usageSchema }, 422: { description: 'An impossible range.', schema: errorSchema }, ...errors },
    },
    async (ctx, { query }) => {
      let range: { from: Date; to: Date };
      try {
        range = parseRange(query.from, query.to);
      } catch (err) {
        if (!(err instanceof GatewayError)) throw err;
        throw new AdminError('invalid_request', err.message, { status: err.status, details: err.errors?.map((e) => ({ location: e.location, message: e.message, value: e.value })) });
      }
      const body = await fromLedger(() => ctx.ledger.adminUsage({ ...range, bucket: query.bucket, groupBy: query.group_by, organization: query.organization, project: query.project, key: query.key }));
      return { body, headers: { 'cache-control': 'no-store' } };
    },
  ),
  adminRoute(
    {
      method: 'GET',
      path: '/admin/v1/requests',
      port: 'admin',
      operationId: 'listAdminRequests',
      summary: 'Recent billed requests, newest first (never bodies).',
      tags: ['admin'],
      security: 'adminRead',
      query: z.object({
        ...listQuery,
        organization: z.string().optional(),
        project: z.string().optional(),
        key: z.string().optional().describe('An API key id.'),
        model: z.string().optional().describe('The model the client sent, or the configured model id.'),
        status: z.coerce.number().int().min(100).max(599).optional().describe('The HTTP status the client got.'),
      }),
      responses: { 200: { description: 'A page of requests.', schema: listOf(requestSchema) }, ...errors },
    },
    async (ctx, { query }) => {
      const after = decodeCursor(query.cursor, isCursor);
      const { rows, more } = await fromLedger(() =>
        ctx.ledger.recentRequests({ limit: query.limit, after: after && { occurredAtMs: after[0], requestId: after[1] }, organization: query.organization, project: query.project, key: query.key, model: query.model, status: query.status }),
      );
      const last = rows.at(-1);
      return { body: { data: rows, next_cursor: more && last ? encodeCursor([Date.parse(last.occurred_at), last.request_id]) : null }, headers: { 'cache-control': 'no-store' } };
    },
  ),
];
