// API keys: list, get, create (the secret shown once), patch, revoke. Writes edit the standalone config file.
import { z } from 'zod';
import { createKey, patchKey, revokeKey } from '../../snapshot/config-keys.ts';
import { budgetSchema } from '../../governance/limits-schema.ts';
import { AdminError } from '../errors.ts';
import { adminRoute, page, snapshotOf } from '../route.ts';
import type { AdminContext } from '../route.ts';
import { createdKeySchema, errorSchema, invalidConfigError, readErrors, writeErrors, keySchema, keyStateSchema, limitsSchema, listOf, listQuery, slugSchema } from '../schemas.ts';
import { allKeys, editConfig, findKey, keyOwnRules, keyState, keyView, spendOf } from '../views.ts';

const idParams = z.object({ id: z.string().min(1).max(253) });
const datetime = z.iso.datetime({ offset: true });

function keyOrFail(ctx: AdminContext, id: string) {
  const k = findKey(snapshotOf(ctx), id);
  if (!k) throw new AdminError('not_found', `No key "${id}".`);
  return keyView(k.config);
}

export const keyRoutes = [
  adminRoute(
    {
      method: 'GET',
      path: '/admin/v1/keys',
      port: 'admin',
      operationId: 'listAdminKeys',
      summary: 'API keys, ordered by id, filtered by organization, project and state.',
      tags: ['admin'],
      security: 'adminRead',
      query: z.object({ ...listQuery, organization: z.string().optional(), project: z.string().optional(), state: keyStateSchema.optional() }),
      responses: { 200: { description: 'A page of keys.', schema: listOf(keySchema) }, ...readErrors },
    },
    (ctx, { query }) => {
      const now = Date.now();
      const keys = allKeys(snapshotOf(ctx)).filter((k) => (query.organization === undefined || k.organization === query.organization) && (!query.project || k.project === query.project) && (query.state === undefined || keyState(k, now) === query.state));
      const p = page(keys, query.limit, query.cursor, (k) => k.id);
      return { body: { data: p.data.map((k) => keyView(k, now)), next_cursor: p.next_cursor } };
    },
  ),
  adminRoute(
    {
      method: 'GET',
      path: '/admin/v1/keys/:id',
      port: 'admin',
      operationId: 'getAdminKey',
      summary: 'One API key.',
      tags: ['admin'],
      security: 'adminRead',
      params: idParams,
      responses: { 200: { description: 'The key.', schema: keySchema }, 404: { description: 'No such key.', schema: errorSchema }, ...readErrors },
    },
    async (ctx, { params }) => {
      const key = keyOrFail(ctx, params.id);
      const k = findKey(snapshotOf(ctx), params.id);
      const spend = k && (await spendOf(ctx, keyOwnRules(k)));
      return { body: spend ? { ...key, spend } : key, target: params.id };
    },
  ),
  adminRoute(
    {
      method: 'POST',
      path: '/admin/v1/keys',
      port: 'admin',
      operationId: 'createAdminKey',
      summary: 'Creates an API key; the answer holds its secret, shown this once.',
      tags: ['admin'],
      security: 'adminWrite',
      body: z.object({ organization: slugSchema, project: slugSchema, name: z.string().max(200).optional(), expiresAt: datetime.optional() }).strict(),
      responses: { 201: { description: 'The key and its secret.', schema: createdKeySchema }, 404: { description: 'No such organization.', schema: errorSchema }, ...invalidConfigError, ...writeErrors },
    },
    (ctx, { body }) => {
      const made = editConfig(ctx, (path) => createKey(path, body));
      return { status: 201, body: { key: keyOrFail(ctx, made.id), secret: made.key }, headers: { 'cache-control': 'no-store' }, target: made.id };
    },
  ),
  adminRoute(
    {
      method: 'PATCH',
      path: '/admin/v1/keys/:id',
      port: 'admin',
      operationId: 'patchAdminKey',
      summary: 'Renames a key, sets or clears its expiry, limits and budget (null clears).',
      tags: ['admin'],
      security: 'adminWrite',
      params: idParams,
      body: z.object({ name: z.string().max(200).nullable().optional(), expiresAt: datetime.nullable().optional(), limits: limitsSchema.nullable().optional(), budget: budgetSchema.nullable().optional() }).strict(),
      responses: { 200: { description: 'The key.', schema: keySchema }, 404: { description: 'No such key.', schema: errorSchema }, ...invalidConfigError, ...writeErrors },
    },
    (ctx, { params, body }) => {
      editConfig(ctx, (path) => patchKey(path, params.id, body));
      return { body: keyOrFail(ctx, params.id), target: params.id };
    },
  ),
  adminRoute(
    {
      method: 'POST',
      path: '/admin/v1/keys/:id/revoke',
      port: 'admin',
      operationId: 'revokeAdminKey',
      summary: 'Revokes a key at once (idempotent).',
      tags: ['admin'],
      security: 'adminWrite',
      params: idParams,
      responses: { 200: { description: 'The key, revoked.', schema: keySchema }, 404: { description: 'No such key.', schema: errorSchema }, ...writeErrors },
    },
    (ctx, { params }) => {
      // By id only: the CLI also takes a prefix, which an API caller could mistype into another key.
      if (!findKey(snapshotOf(ctx), params.id)) throw new AdminError('not_found', `No key "${params.id}".`);
      editConfig(ctx, (path) => revokeKey(path, params.id));
      return { body: keyOrFail(ctx, params.id), target: params.id };
    },
  ),
];
