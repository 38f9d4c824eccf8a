// Organizations: list, get, create, patch (models, limits, budget). Projects: list and set limits and budget.
import { z } from 'zod';
import { createOrganization, patchOrganization, patchProject } from '../../snapshot/config-keys.ts';
import { budgetSchema } from '../../governance/limits-schema.ts';
import { adminRoute, byKey, page, snapshotOf } from '../route.ts';
import { errorSchema, invalidConfigError, limitsSchema, readErrors, writeErrors, listOf, listQuery, organizationSchema, projectSchema, slugSchema } from '../schemas.ts';
import { editConfig, organizationView, projectKey, projectViews, spendOf } from '../views.ts';
import type { AdminContext } from '../route.ts';

async function withProjectSpend(ctx: AdminContext, projects: ReturnType<typeof projectViews>) {
  const s = snapshotOf(ctx);
  return Promise.all(
    projects.map(async (p) => {
      const spend = await spendOf(ctx, s.organizations.get(p.organization)?.governance?.projects.get(p.id));
      return spend ? { ...p, spend } : p;
    }),
  );
}

const configWriteErrors = { ...writeErrors, ...invalidConfigError };
const models = z.array(z.string().min(1)).max(1000);

export const organizationRoutes = [
  adminRoute(
    {
      method: 'GET',
      path: '/admin/v1/organizations',
      port: 'admin',
      operationId: 'listAdminOrganizations',
      summary: 'Organizations, ordered by id.',
      tags: ['admin'],
      security: 'adminRead',
      query: z.object(listQuery),
      responses: { 200: { description: 'A page of organizations.', schema: listOf(organizationSchema) }, ...readErrors },
    },
    (ctx, { query }) => {
      const s = snapshotOf(ctx);
      const self = (id: string) => id;
      const p = page([...s.organizations.keys()].sort(byKey(self)), query.limit, query.cursor, self);
      return { body: { data: p.data.map((id) => organizationView(s, id)), next_cursor: p.next_cursor } };
    },
  ),
  adminRoute(
    {
      method: 'GET',
      path: '/admin/v1/organizations/:id',
      port: 'admin',
      operationId: 'getAdminOrganization',
      summary: 'One organization.',
      tags: ['admin'],
      security: 'adminRead',
      params: z.object({ id: z.string().min(1).max(253) }),
      responses: { 200: { description: 'The organization.', schema: organizationSchema }, 404: { description: 'No such organization.', schema: errorSchema }, ...readErrors },
    },
    async (ctx, { params }) => {
      const s = snapshotOf(ctx);
      const org = organizationView(s, params.id);
      const spend = await spendOf(ctx, s.organizations.get(params.id)?.governance?.rules);
      return { body: spend ? { ...org, spend } : org, target: params.id };
    },
  ),
  adminRoute(
    {
      method: 'POST',
      path: '/admin/v1/organizations',
      port: 'admin',
      operationId: 'createAdminOrganization',
      summary: 'Creates an organization.',
      tags: ['admin'],
      security: 'adminWrite',
      body: z.object({ id: slugSchema, models: models.optional(), limits: limitsSchema.optional(), budget: budgetSchema.optional() }).strict(),
      responses: { 201: { description: 'The organization.', schema: organizationSchema }, 409: { description: 'It exists already.', schema: errorSchema }, ...configWriteErrors },
    },
    (ctx, { body }) => {
      editConfig(ctx, (path) => createOrganization(path, body.id, body));
      return { status: 201, body: organizationView(snapshotOf(ctx), body.id), target: body.id };
    },
  ),
  adminRoute(
    {
      method: 'PATCH',
      path: '/admin/v1/organizations/:id',
      port: 'admin',
      operationId: 'patchAdminOrganization',
      summary: 'Sets an organization\'s models, limits and budget (null removes).',
      tags: ['admin'],
      security: 'adminWrite',
      params: z.object({ id: z.string().min(1).max(253) }),
      body: z.object({ models: models.nullable().optional(), limits: limitsSchema.nullable().optional(), budget: budgetSchema.nullable().optional() }).strict(),
      responses: { 200: { description: 'The organization.', schema: organizationSchema }, 404: { description: 'No such organization.', schema: errorSchema }, ...configWriteErrors },
    },
    (ctx, { params, body }) => {
      editConfig(ctx, (path) => patchOrganization(path, params.id, body));
      return { body: organizationView(snapshotOf(ctx), params.id), target: params.id };
    },
  ),
  adminRoute(
    {
      method: 'GET',
      path: '/admin/v1/projects',
      port: 'admin',
      operationId: 'listAdminProjects',
      summary: 'Projects an organization lists or a key names, ordered by organization and id.',
      tags: ['admin'],
      security: 'adminRead',
      query: z.object({ ...listQuery, organization: z.string().optional() }),
      responses: { 200: { description: 'A page of projects.', schema: listOf(projectSchema) }, ...readErrors },
    },
    async (ctx, { query }) => {
      const p = page(projectViews(snapshotOf(ctx), query.organization), query.limit, query.cursor, projectKey);
      return { body: { data: await withProjectSpend(ctx, p.data), next_cursor: p.next_cursor } };
    },
  ),
  adminRoute(
    {
      method: 'PATCH',
      path: '/admin/v1/projects/:organization/:id',
      port: 'admin',
      operationId: 'patchAdminProject',
      summary: 'Sets a project\'s limits and budget (null removes); adds the project to its organization if absent.',
      tags: ['admin'],
      security: 'adminWrite',
      params: z.object({ organization: z.string().min(1).max(253), id: slugSchema }),
      body: z.object({ limits: limitsSchema.nullable().optional(), budget: budgetSchema.nullable().optional() }).strict(),
      responses: { 200: { description: 'The project.', schema: projectSchema }, 404: { description: 'No such organization.', schema: errorSchema }, ...configWriteErrors },
    },
    async (ctx, { params, body }) => {
      editConfig(ctx, (path) => patchProject(path, params.organization, params.id, body));
      const p = projectViews(snapshotOf(ctx), params.organization).find((x) => x.id === params.id)!;
      return { body: (await withProjectSpend(ctx, [p]))[0], target: `${params.organization}/${params.id}` };
    },
  ),
];
