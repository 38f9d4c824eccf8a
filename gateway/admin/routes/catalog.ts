// Read-only views of what the snapshot configures: models, pricing groups, providers (never a credential value), and
// each upstream target's health in this process.
import { z } from 'zod';
import { PROTOCOLS } from '../../snapshot/schema.ts';
import type { PricingGroup } from '../../snapshot/schema.ts';
import { adminRoute, byKey, page, snapshotOf } from '../route.ts';
import { listOf, listQuery, modelSchema, readErrors, pricingGroupSchema, providerSchema, upstreamsSchema } from '../schemas.ts';

const dec = (v: string | number) => String(v);

function prices(p: { input: string | number; output: string | number; cacheRead: string | number; cacheWrite: string | number }) {
  return { input: dec(p.input), output: dec(p.output), cacheRead: dec(p.cacheRead), cacheWrite: dec(p.cacheWrite) };
}

function pricingView(g: PricingGroup, models: string[]) {
  if (g.mode === 'flat_tokens') return { id: g.id, mode: g.mode, discount: dec(g.discount), prices: prices(g.prices), models };
  return { id: g.id, mode: g.mode, discount: dec(g.discount), tiers: g.tiers.map((t) => ({ upTo: t.upTo, ...prices(t) })), models };
}

export const catalogRoutes = [
  adminRoute(
    {
      method: 'GET',
      path: '/admin/v1/models',
      port: 'admin',
      operationId: 'listAdminModels',
      summary: 'Configured models with their upstreams and pricing group.',
      tags: ['admin'],
      security: 'adminRead',
      query: z.object(listQuery),
      responses: { 200: { description: 'A page of models.', schema: listOf(modelSchema) }, ...readErrors },
    },
    (ctx, { query }) => {
      const id = (m: { id: string }) => m.id;
      const p = page([...snapshotOf(ctx).models].sort(byKey(id)), query.limit, query.cursor, id);
      return {
        body: {
          next_cursor: p.next_cursor,
          data: p.data.map((m) => {
            const c = m.config;
            const providers = new Set<string>();
            for (const ups of Object.values(c.protocols)) for (const u of ups ?? []) providers.add(u.provider);
            return {
              id: c.id,
              ...(c.alias ? { alias: c.alias } : {}),
              public: c.public,
              pricingGroup: c.pricingGroup,
              created: c.created,
              protocols: Object.fromEntries(Object.entries(c.protocols).filter(([, v]) => v !== undefined)),
              providers: [...providers],
              ...(c.routing?.fallbacks ? { fallbacks: c.routing.fallbacks } : {}),
            };
          }),
        },
      };
    },
  ),
  adminRoute(
    {
      method: 'GET',
      path: '/admin/v1/pricing-groups',
      port: 'admin',
      operationId: 'listAdminPricingGroups',
      summary: 'Pricing groups, points per million tokens as exact decimals.',
      tags: ['admin'],
      security: 'adminRead',
      query: z.object(listQuery),
      responses: { 200: { description: 'A page of pricing groups.', schema: listOf(pricingGroupSchema) }, ...readErrors },
    },
    (ctx, { query }) => {
      const s = snapshotOf(ctx);
      const id = (g: { id: string }) => g.id;
      const p = page([...s.pricingGroups.values()].sort(byKey(id)), query.limit, query.cursor, id);
      return { body: { next_cursor: p.next_cursor, data: p.data.map((g) => pricingView(g, s.models.filter((m) => m.config.pricingGroup === g.id).map((m) => m.id))) } };
    },
  ),
  adminRoute(
    {
      method: 'GET',
      path: '/admin/v1/providers',
      port: 'admin',
      operationId: 'listAdminProviders',
      summary: 'Providers: base URL and where the credential comes from (whether it is set, never its value).',
      tags: ['admin'],
      security: 'adminRead',
      query: z.object(listQuery),
      responses: { 200: { description: 'A page of providers.', schema: listOf(providerSchema) }, ...readErrors },
    },
    (ctx, { query }) => {
      const s = snapshotOf(ctx);
      const id = (x: { id: string }) => x.id;
      const p = page([...s.providers.values()].sort(byKey(id)), query.limit, query.cursor, id);
      return {
        body: {
          next_cursor: p.next_cursor,
          data: p.data.map((x) => {
            const protocols = new Set<string>();
            for (const m of s.models) for (const proto of PROTOCOLS) if (m.config.protocols[proto]?.some((u) => u.provider === x.id)) protocols.add(proto);
            const key = x.config.apiKey;
            return { id: x.id, protocols: [...protocols], baseUrl: x.baseUrl, credential: { env: key && 'fromEnv' in key ? key.fromEnv : null, present: Boolean(x.credential) } };
          }),
        },
      };
    },
  ),
  adminRoute(
    {
      method: 'GET',
      path: '/admin/v1/upstreams',
      port: 'admin',
      operationId: 'getAdminUpstreams',
      summary: 'Each upstream target\'s health in this process (healthy, ejected, half_open) and attempt counts.',
      tags: ['admin'],
      security: 'adminRead',
      responses: { 200: { description: 'Upstream health.', schema: upstreamsSchema }, ...readErrors },
    },
    (ctx) => {
      const v = ctx.upstreams();
      return { body: { generation: v.generation, targets: v.upstreams }, headers: { 'cache-control': 'no-store' } };
    },
  ),
];
