// The one contract between the operator, the standalone file and every gateway pod (docs/contract.md, snapshot).
// Kept free of transforms so the generated JSON Schema documents exactly what a file may hold.
import { z } from 'zod';
import { budgetSchema, projectSchema, rateLimitsSchema } from '../governance/limits-schema.ts';

export const PROTOCOLS = ['openai', 'anthropic', 'responses', 'images', 'gemini', 'embeddings'] as const;
export type Protocol = (typeof PROTOCOLS)[number];
// Enums and bounds the CRDs repeat in OpenAPI: declared here once, imported by crds/src.
export const DISCONNECT_ACTIONS = ['continue', 'abort'] as const;
export const PRICING_MODES = ['flat_tokens', 'input_tokens_tiers'] as const;
export const UPSTREAM_WEIGHT = { min: 1, max: 1000 } as const;

const slug = z
  .string()
  .min(1)
  .max(253)
  .regex(/^[a-z0-9]([a-z0-9._-]*[a-z0-9])?$/, 'lower-case letters, digits, ".", "_" or "-"');

// Prices and rates: a decimal string ("2.5") or a plain number; never stored as a float downstream.
export const decimalSchema = z
  .union([z.string().regex(/^\d+(\.\d+)?$/, 'a non-negative decimal such as "2.5"'), z.number().nonnegative()])
  .describe('Non-negative decimal. Quote it ("0.15") to keep it exact in YAML.');

const positiveMs = z.number().int().positive();

export const credentialSchema = z
  .union([
    z.object({ fromEnv: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/) }).strict().describe('Read from this environment variable when the snapshot loads.'),
    z.object({ value: z.string().min(1) }).strict().describe('Literal value: for operator-compiled snapshots only (they live in a Secret).'),
  ])
  .describe('The provider credential. Standalone files should use fromEnv.');

// Retries, backoff and outlier ejection (docs/routing.md). Every field is optional: a model's value wins over its
// provider's, which wins over the built-in default.
const routingFields = {
  maxAttempts: z.number().int().min(1).max(10).optional().describe('Attempts in all, the first included (default 3; 1 = never retry).'),
  backoffBaseMs: positiveMs.optional().describe('Backoff before retry n is uniform in [0, min(backoffMaxMs, backoffBaseMs·2^(n-1))] (default 100).'),
  backoffMaxMs: positiveMs.optional().describe('Upper bound of one backoff (default 2000).'),
  retryAfterCapMs: z.number().int().nonnegative().optional().describe('An upstream retry-after longer than this is not waited for; its answer goes to the client (default 10000).'),
  ejectAfter: z.number().int().min(1).optional().describe('Consecutive failed attempts (connect error, timeout, 429, 5xx) that eject a target (default 5).'),
  ejectFailurePercent: z.number().int().min(0).max(100).optional().describe('Failure-ratio ejection: a target is ejected when at least this percentage of its attempts in the window failed (default 50; 0 turns it off).'),
  ejectMinRequests: z.number().int().min(1).optional().describe('Attempts the window must hold before its failure ratio can eject a target (default 20).'),
  ejectWindowMs: z.number().int().min(100).max(600_000).optional().describe('Length of the sliding failure-ratio window; it slides in tenths (default 10000).'),
  ejectBaseMs: positiveMs.optional().describe('Cooldown of a first ejection; it doubles on each repeat (default 5000).'),
  ejectMaxMs: positiveMs.optional().describe('Longest cooldown (default 300000).'),
  maxConcurrency: z.number().int().nonnegative().optional().describe('Requests in flight per target; a full target is skipped, all full answers 503 (default 0 = unbounded).'),
};

export const providerRoutingSchema = z.object(routingFields).strict().describe('Routing defaults for every upstream on this provider.');

export const modelRoutingSchema = z
  .object({
    ...routingFields,
    fallbacks: z.array(z.string().min(1)).max(5).optional().describe('Model ids tried in order when this model\'s upstreams are exhausted or ejected; the client\'s model stays the reported one.'),
  })
  .strict()
  .describe('Retries, ejection and fallbacks for this model (over its providers\' defaults).');

export const providerSchema = z
  .object({
    id: slug.describe('Provider id, referenced by model upstreams.'),
    baseUrl: z.url().describe('Upstream base URL, e.g. https://api.openai.com/v1. Protocol paths are appended to it.'),
    apiKey: credentialSchema.optional(),
    headers: z.record(z.string(), z.string()).optional().describe('Extra headers sent on every upstream request (not secret).'),
    timeouts: z
      .object({
        connectMs: positiveMs.default(10_000).describe('TCP + TLS connect.'),
        firstByteMs: positiveMs.default(120_000).describe('Until the upstream response headers arrive.'),
        idleMs: positiveMs.default(120_000).describe('Longest silence between two body chunks (SSE events).'),
        totalMs: positiveMs.default(600_000).describe('The whole exchange, including draining after a client disconnect.'),
      })
      .strict()
      .prefault({}),
    onClientDisconnect: z
      .enum(DISCONNECT_ACTIONS)
      .default('continue')
      .describe('continue: read the upstream to its end so usage is what the provider bills; abort: stop at once and bill what was seen (estimated).'),
    maxResponseBytes: z.number().int().positive().optional().describe('Largest JSON answer read from this provider (default 64 MiB for images, 16 MiB otherwise); past it: 502 and the connection dropped.'),
    routing: providerRoutingSchema.optional(),
  })
  .strict();

export const upstreamSchema = z
  .object({
    provider: slug.describe('Provider id.'),
    model: z.string().min(1).describe('The model id sent to the upstream.'),
    weight: z.number().int().min(UPSTREAM_WEIGHT.min).max(UPSTREAM_WEIGHT.max).default(1).describe('Relative share of traffic among upstreams of one protocol.'),
  })
  .strict();

const protocolUpstreams = z.array(upstreamSchema).min(1);

export const modelSchema = z
  .object({
    id: z.string().min(1).max(200).regex(/^[A-Za-z0-9][A-Za-z0-9._:/@-]*$/, 'letters, digits and . _ : / @ -').describe('The name clients send as `model`, e.g. openai/gpt-4o.'),
    alias: z.string().min(1).max(200).regex(/^[a-z0-9][a-z0-9._:/@-]*$/, 'lower-case').optional().describe('Second accepted name, matched case-insensitively.'),
    public: z.boolean().default(false).describe('Listed to callers without a key; an organization still needs permission to call it.'),
    pricingGroup: slug.describe('Pricing group id.'),
    created: z.number().int().nonnegative().default(0).describe('Unix seconds shown in /models.'),
    protocols: z
      .object({
        openai: protocolUpstreams.optional(),
        anthropic: protocolUpstreams.optional(),
        responses: protocolUpstreams.optional(),
        images: protocolUpstreams.optional(),
        gemini: protocolUpstreams.optional(),
        // OpenAI embeddings (`POST /embeddings`); an openai model serves them too when it lists no embeddings upstream.
        embeddings: protocolUpstreams.optional(),
      })
      .strict()
      .refine((p) => Object.values(p).some((v) => v !== undefined), 'a model needs at least one protocol')
      .describe('The protocols upstreams serve natively, each with the upstreams that serve it.'),
    capabilities: z
      .object({
        drop: z.array(z.string().min(1)).default([]).describe('Top-level request fields removed before the body goes upstream.'),
        imageSizes: z.array(z.string().min(1)).optional().describe('Sizes accepted on the compat (v3) images route.'),
      })
      .strict()
      .prefault({}),
    routing: modelRoutingSchema.optional(),
  })
  .strict();

const tierPrices = {
  input: decimalSchema.describe('Points per million uncached input tokens.'),
  output: decimalSchema.describe('Points per million output tokens.'),
  cacheRead: decimalSchema.default('0').describe('Points per million cache-read tokens.'),
  cacheWrite: decimalSchema.default('0').describe('Points per million cache-write tokens.'),
};

export const pricingGroupSchema = z.discriminatedUnion('mode', [
  z
    .object({
      id: slug,
      mode: z.literal(PRICING_MODES[0]),
      prices: z.object(tierPrices).strict(),
      discount: decimalSchema.default('1').describe('Multiplier applied to the cost (1 = full price).'),
    })
    .strict(),
  z
    .object({
      id: slug,
      mode: z.literal(PRICING_MODES[1]),
      tiers: z
        .array(
          z
            .object({
              upTo: z.number().int().positive().nullable().describe('Inclusive upper bound on prompt tokens; null on the last tier.'),
              ...tierPrices,
            })
            .strict(),
        )
        .min(1),
      discount: decimalSchema.default('1'),
    })
    .strict(),
]);

export const organizationSchema = z
  .object({
    id: slug,
    models: z.array(z.string().min(1)).default([]).describe('Model ids this organization may call; "*" for all, "prefix/*" for a family.'),
    discount: decimalSchema.optional().describe('Overrides every pricing group discount for this organization.'),
    limits: rateLimitsSchema.optional(),
    budget: budgetSchema.optional(),
    projects: z.array(projectSchema).optional().describe("Limits and budgets per project (a key names its project); a project not listed has none of its own."),
  })
  .strict();

export const apiKeySchema = z
  .object({
    id: slug.describe('Stable key id, recorded on every ledger row.'),
    hash: z.string().regex(/^sha256:[0-9a-f]{64}$/).describe('sha256:<hex> of the whole key.'),
    prefix: z.string().min(8).max(24).describe('Display prefix, e.g. sk_live_Ab3d.'),
    organization: slug,
    project: slug,
    name: z.string().max(200).optional(),
    disabled: z.boolean().default(false),
    expiresAt: z.iso.datetime({ offset: true }).optional(),
    createdAt: z.iso.datetime({ offset: true }).optional(),
    limits: rateLimitsSchema.optional(),
    budget: budgetSchema.optional(),
  })
  .strict();

export const snapshotSchema = z
  .object({
    version: z.string().optional().describe('Content hash; computed by the loader when absent.'),
    generation: z.number().int().nonnegative().optional().describe('The source generation this snapshot was compiled from.'),
    providers: z.array(providerSchema).default([]),
    models: z.array(modelSchema).default([]),
    pricingGroups: z.array(pricingGroupSchema).default([]),
    organizations: z.array(organizationSchema).default([]),
    apiKeys: z.array(apiKeySchema).default([]),
  })
  .strict()
  .superRefine((s, ctx) => {
    const unique = (items: { id: string }[], key: string) => {
      const seen = new Set<string>();
      items.forEach((item, i) => {
        if (seen.has(item.id)) ctx.addIssue({ code: 'custom', path: [key, i, 'id'], message: `duplicate id "${item.id}"` });
        seen.add(item.id);
      });
      return seen;
    };
    const providers = unique(s.providers, 'providers');
    const groups = unique(s.pricingGroups, 'pricingGroups');
    const orgs = unique(s.organizations, 'organizations');
    s.organizations.forEach((o, i) => {
      if (o.projects) unique(o.projects, `organizations.${i}.projects`);
    });
    unique(s.apiKeys, 'apiKeys');
    const names = new Map<string, number>();
    s.models.forEach((m, i) => {
      for (const [name, field] of [[m.id.toLowerCase(), 'id'], [m.alias, 'alias']] as const) {
        if (name === undefined) continue;
        const other = names.get(name);
        if (other !== undefined && other !== i) ctx.addIssue({ code: 'custom', path: ['models', i, field], message: `"${name}" already names models[${other}]` });
        names.set(name, i);
      }
      if (!groups.has(m.pricingGroup)) ctx.addIssue({ code: 'custom', path: ['models', i, 'pricingGroup'], message: `unknown pricing group "${m.pricingGroup}"` });
      m.routing?.fallbacks?.forEach((f, j) => {
        const known = s.models.some((o) => o.id === f);
        if (!known) ctx.addIssue({ code: 'custom', path: ['models', i, 'routing', 'fallbacks', j], message: `unknown model "${f}"` });
        else if (f === m.id) ctx.addIssue({ code: 'custom', path: ['models', i, 'routing', 'fallbacks', j], message: 'a model cannot fall back to itself' });
      });
      for (const [protocol, ups] of Object.entries(m.protocols)) {
        ups?.forEach((u, j) => {
          if (!providers.has(u.provider)) ctx.addIssue({ code: 'custom', path: ['models', i, 'protocols', protocol, j, 'provider'], message: `unknown provider "${u.provider}"` });
        });
      }
    });
    s.pricingGroups.forEach((g, i) => {
      if (g.mode !== 'input_tokens_tiers') return;
      g.tiers.forEach((t, j) => {
        const last = j === g.tiers.length - 1;
        if (last !== (t.upTo === null)) ctx.addIssue({ code: 'custom', path: ['pricingGroups', i, 'tiers', j, 'upTo'], message: last ? 'the last tier is unbounded (null)' : 'only the last tier may be unbounded' });
        const prev = j > 0 ? g.tiers[j - 1].upTo : null;
        if (t.upTo !== null && prev !== null && t.upTo <= prev) ctx.addIssue({ code: 'custom', path: ['pricingGroups', i, 'tiers', j, 'upTo'], message: 'tiers must be strictly ascending' });
      });
    });
    const hashes = new Set<string>();
    s.apiKeys.forEach((k, i) => {
      if (!orgs.has(k.organization)) ctx.addIssue({ code: 'custom', path: ['apiKeys', i, 'organization'], message: `unknown organization "${k.organization}"` });
      if (hashes.has(k.hash)) ctx.addIssue({ code: 'custom', path: ['apiKeys', i, 'hash'], message: 'duplicate key hash' });
      hashes.add(k.hash);
    });
  });

export type SnapshotInput = z.input<typeof snapshotSchema>;
export type Snapshot = z.output<typeof snapshotSchema>;
export type Provider = z.output<typeof providerSchema>;
export type Model = z.output<typeof modelSchema>;
export type Upstream = z.output<typeof upstreamSchema>;
export type PricingGroup = z.output<typeof pricingGroupSchema>;
export type Organization = z.output<typeof organizationSchema>;
export type ApiKey = z.output<typeof apiKeySchema>;
export type RoutingInput = z.output<typeof modelRoutingSchema>;
