// Builds the OpenAPI 3.1 document from the route declarations with zod's own JSON Schema conversion (draft 2020-12,
// which OpenAPI 3.1 uses): no schema is written twice. Built once per process, on first use.
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { ADMIN_ROUTES } from '../admin/catalogue.ts';
import { ADMIN_PORT_ROUTES } from './admin-port-routes.ts';
import { PUBLIC_ROUTES } from './public-routes.ts';
import type { ResponseSpec, RouteSecurity, RouteSpec } from './spec.ts';

export const OPENAPI_VERSION = '3.1.0';
const DIALECT = 'https://json-schema.org/draft/2020-12/schema';
const REF = '#/components/schemas/';

type Json = Record<string, unknown>;

export interface OpenApiDocument {
  openapi: string;
  info: Json;
  jsonSchemaDialect: string;
  servers: Json[];
  tags: { name: string; description?: string }[];
  paths: Record<string, Record<string, Json>>;
  components: { schemas: Record<string, Json>; responses: Record<string, Json>; securitySchemes: Record<string, Json> };
}

const server = (port: string, description: string): Json[] => [
  { url: 'http://{host}:{port}', description, variables: { host: { default: 'localhost' }, port: { default: port } } },
];
const API_SERVERS = server('8080', 'The API port (--port or PORT).');
const ADMIN_SERVERS = server('9464', 'The admin port (TOLLGATE_ADMIN_PORT).');

const SECURITY_SCHEMES: Record<string, Json> = {
  apiKey: { type: 'http', scheme: 'bearer', description: 'An API key (`sk_live_…`) as `Authorization: Bearer`.' },
  apiKeyHeader: { type: 'apiKey', in: 'header', name: 'x-api-key', description: 'An API key (`sk_live_…`) as `x-api-key` (what Anthropic SDKs send).' },
  googApiKey: { type: 'apiKey', in: 'header', name: 'x-goog-api-key', description: 'An API key as `x-goog-api-key` (gemini paths only; what @google/genai sends).' },
  googApiKeyQuery: { type: 'apiKey', in: 'query', name: 'key', description: 'An API key as `?key=` (gemini paths only).' },
  adminToken: { type: 'http', scheme: 'bearer', description: 'An admin token (TOLLGATE_ADMIN_TOKENS), read-only or read-write; never an sk_ key.' },
};

const API_KEY = [{ apiKey: [] }, { apiKeyHeader: [] }];
const SECURITY: Record<RouteSecurity, Json[]> = {
  apiKey: API_KEY,
  // `{}`: calling without any credential is allowed too.
  apiKeyOptional: [{}, ...API_KEY],
  apiKeyGemini: [...API_KEY, { googApiKey: [] }, { googApiKeyQuery: [] }],
  adminRead: [{ adminToken: [] }],
  adminWrite: [{ adminToken: [] }],
  none: [],
};

const TAGS: Record<string, string> = {
  chat: 'OpenAI chat completions',
  messages: 'Anthropic messages',
  responses: 'OpenAI responses',
  images: 'Image generation and edits',
  embeddings: 'Embeddings',
  gemini: 'Gemini generateContent',
  models: 'The model catalogue',
  usage: "The calling key's usage, limits and budgets",
  health: 'Liveness and readiness',
  meta: 'This document',
  operations: "The admin port's metrics, upstream health and console",
  admin: 'The admin API (admin port, admin tokens)',
};

/** `/a/:id` → `/a/{id}`; a wildcard needs a docPath naming its parameter. */
export function documentPath(r: RouteSpec): string {
  if (r.docPath) return r.docPath;
  if (r.path.includes('*')) throw new Error(`${r.method} ${r.path}: a wildcard route needs a docPath`);
  return r.path.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
}

/** Names each distinct schema once: its registered id (`.meta({ id })`) or one made from where it is first used. */
class SchemaNames {
  readonly names = new Map<z.ZodType, string>();
  private readonly taken = new Set<string>();
  name(schema: z.ZodType, fallback: string): string {
    const known = this.names.get(schema);
    if (known) return known;
    const base = (z.globalRegistry.get(schema)?.id as string | undefined) ?? fallback;
    let name = base;
    for (let i = 2; this.taken.has(name); i++) name = `${base}${i}`;
    this.taken.add(name);
    this.names.set(schema, name);
    return name;
  }
}

/** Converts every named schema at once so shared ones become `$ref`s into components. */
function convert(names: SchemaNames, io: 'input' | 'output'): Record<string, Json> {
  if (names.names.size === 0) return {};
  const registry = z.registry<{ id: string }>();
  for (const [schema, id] of names.names) registry.add(schema, { id });
  // unrepresentable 'any': a transform or a Date in some schema documents as `{}` rather than failing the whole document.
  const out = z.toJSONSchema(registry, { target: 'draft-2020-12', io, unrepresentable: 'any', uri: (id) => `${REF}${id}` }) as { schemas: Record<string, Json> };
  const schemas: Record<string, Json> = {};
  for (const [id, s] of Object.entries(out.schemas)) {
    // Schemas named only inside others (a nested `.meta({ id })`) land in `__shared`: hoisted beside the rest.
    if (id === '__shared') Object.assign(schemas, (s.$defs ?? {}) as Record<string, Json>);
    else schemas[id] = s;
  }
  for (const s of Object.values(schemas)) {
    delete s.$schema;
    delete s.$id;
  }
  return rewriteRefs(schemas, (ref) => ref.replace(`${REF}__shared#/$defs/`, REF)) as Record<string, Json>;
}

function rewriteRefs(v: unknown, fn: (ref: string) => string): unknown {
  if (Array.isArray(v)) return v.map((x) => rewriteRefs(x, fn));
  if (v === null || typeof v !== 'object') return v;
  const out: Json = {};
  for (const [k, x] of Object.entries(v)) out[k] = k === '$ref' && typeof x === 'string' ? fn(x) : rewriteRefs(x, fn);
  return out;
}

function upperFirst(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}

/** Path or query parameters from a zod object, each property one parameter. */
function parameters(where: 'path' | 'query', obj: z.ZodObject | undefined, docPath: string): Json[] {
  const json = obj ? (z.toJSONSchema(obj, { target: 'draft-2020-12', io: 'input', unrepresentable: 'any' }) as Json) : { properties: {}, required: [] };
  const props = (json.properties ?? {}) as Record<string, Json>;
  const required = new Set((json.required ?? []) as string[]);
  const out: Json[] = [];
  if (where === 'path') {
    // Every `{name}` in the path is a parameter, described or not.
    for (const m of docPath.matchAll(/\{([^}]+)\}/g)) {
      const { description, ...schema } = props[m[1]] ?? { type: 'string' };
      out.push({ name: m[1], in: 'path', required: true, ...(description ? { description } : {}), schema });
    }
    const extra = Object.keys(props).filter((k) => !docPath.includes(`{${k}}`));
    if (extra.length) throw new Error(`${docPath}: path parameters ${extra.join(', ')} are not in the path`);
    return out;
  }
  for (const [name, p] of Object.entries(props)) {
    const { description, ...schema } = p;
    out.push({ name, in: 'query', required: required.has(name), ...(description ? { description } : {}), schema });
  }
  return out;
}

export function buildOpenApi(routes: readonly RouteSpec[], info: { title?: string; version?: string } = {}): OpenApiDocument {
  const requests = new SchemaNames();
  const answers = new SchemaNames();
  const seen = new Set<string>();
  for (const r of routes) {
    const key = `${r.method} ${documentPath(r)}`;
    if (seen.has(key)) throw new Error(`${key} is declared twice`);
    seen.add(key);
    const op = upperFirst(r.operationId);
    if (r.body) requests.name(r.body, `${op}Request`);
    for (const [ct, b] of Object.entries(r.otherBodies ?? {})) requests.name(b, `${op}${upperFirst(ct.split('/')[1].replace(/[^A-Za-z0-9]/g, ''))}Request`);
    for (const [status, res] of Object.entries(r.responses)) if (res.schema) answers.name(res.schema, `${op}${status}`);
    if (r.defaultResponse?.schema) answers.name(r.defaultResponse.schema, `${op}Default`);
  }
  const answerSchemas = convert(answers, 'output');
  // A schema used both ways may differ by direction (defaults, transforms): the request side gets its own name.
  const requestSchemas = convert(requests, 'input');
  const inputName = (id: string) => (id in answerSchemas && JSON.stringify(answerSchemas[id]) !== JSON.stringify(requestSchemas[id]) ? `${id}Input` : id);
  const schemas: Record<string, Json> = { ...answerSchemas };
  for (const [id, s] of Object.entries(requestSchemas)) schemas[inputName(id)] = rewriteRefs(s, (ref) => (ref.startsWith(REF) ? REF + inputName(ref.slice(REF.length)) : ref)) as Json;
  const ref = (id: string) => ({ $ref: REF + id });

  const paths: OpenApiDocument['paths'] = {};
  const operationIds = new Set<string>();
  const answered: { responses: Json; status: string; name: string }[] = [];
  for (const r of routes) {
    if (operationIds.has(r.operationId)) throw new Error(`operationId ${r.operationId} is used twice`);
    operationIds.add(r.operationId);
    const docPath = documentPath(r);
    const content = (schema: z.ZodType | undefined, ct: string, names: SchemaNames, rename: (id: string) => string = (id) => id): Json => ({ [ct]: schema ? { schema: ref(rename(names.names.get(schema)!)) } : {} });
    const responses: Json = {};
    const declared: [string, ResponseSpec][] = Object.entries(r.responses);
    if (r.defaultResponse) declared.push(['default', r.defaultResponse]);
    for (const [status, res] of declared) {
      const media: Json = {};
      if (res.schema) media[res.contentType ?? 'application/json'] = { schema: ref(answers.names.get(res.schema)!) };
      if (res.stream) media['text/event-stream'] = {};
      responses[status] = { description: res.description, ...(Object.keys(media).length ? { content: media } : {}) };
      if (res.schema && (status === 'default' || Number(status) >= 400)) answered.push({ responses, status, name: `${answers.names.get(res.schema)!}${status === 'default' ? 'Upstream' : status}` });
    }
    const params = [...parameters('path', r.params, docPath), ...parameters('query', r.query, docPath)];
    let requestBody: Json | undefined;
    if (r.body || r.otherBodies) {
      const c: Json = r.body ? content(r.body, r.bodyContentType ?? 'application/json', requests, inputName) : {};
      for (const [ct, b] of Object.entries(r.otherBodies ?? {})) Object.assign(c, content(b, ct, requests, inputName));
      requestBody = { required: true, content: c };
    }
    const operation: Json = {
      operationId: r.operationId,
      summary: r.summary,
      ...(r.description ? { description: r.description } : {}),
      tags: r.tags,
      ...(params.length ? { parameters: params } : {}),
      ...(requestBody ? { requestBody } : {}),
      responses,
      security: SECURITY[r.security],
      'x-tollgate-port': r.port,
      ...(r.security === 'adminWrite' ? { 'x-tollgate-admin-role': 'write' } : r.security === 'adminRead' ? { 'x-tollgate-admin-role': 'read' } : {}),
    };
    const item = (paths[docPath] ??= {});
    // Admin operations are answered on the admin port: tools that follow `servers` send them there.
    if (r.port === 'admin') item.servers = ADMIN_SERVERS as unknown as Json;
    item[r.method.toLowerCase()] = operation;
  }
  const tagNames = [...new Set(routes.flatMap((r) => r.tags))];
  const sharedResponses = shareResponses(answered);
  return {
    openapi: OPENAPI_VERSION,
    info: {
      title: info.title ?? 'tollgate',
      version: info.version ?? '0.1.0',
      description: 'A model gateway: OpenAI, Anthropic and Gemini protocols behind one key, billed exactly. Public routes are served on the API port; routes marked `x-tollgate-port: admin` on the admin port.',
      license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
    },
    jsonSchemaDialect: DIALECT,
    servers: API_SERVERS,
    tags: tagNames.map((name) => ({ name, ...(TAGS[name] ? { description: TAGS[name] } : {}) })),
    paths,
    components: { schemas, responses: sharedResponses, securitySchemes: SECURITY_SCHEMES },
  };
}

/** An error answer declared alike by several operations (each family's) becomes one `components.responses` entry. */
function shareResponses(answered: { responses: Json; status: string; name: string }[]): Record<string, Json> {
  const byText = new Map<string, { uses: typeof answered; name: string }>();
  for (const a of answered) {
    const text = JSON.stringify(a.responses[a.status]);
    const entry = byText.get(text);
    if (entry) entry.uses.push(a);
    else byText.set(text, { uses: [a], name: a.name });
  }
  const shared: Record<string, Json> = {};
  for (const [text, { uses, name }] of byText) {
    if (uses.length < 2) continue;
    let unique = name;
    for (let i = 2; unique in shared; i++) unique = `${name}_${i}`;
    shared[unique] = JSON.parse(text) as Json;
    for (const u of uses) u.responses[u.status] = { $ref: `#/components/responses/${unique}` };
  }
  return shared;
}

/** Every route of both ports, as the document lists them. */
export const ALL_ROUTES: readonly RouteSpec[] = [...PUBLIC_ROUTES, ...ADMIN_ROUTES, ...ADMIN_PORT_ROUTES];

let served: Buffer | undefined;

/** The document for every route (API and admin ports), serialised once per process. */
export function openApiJson(): Buffer {
  served ??= Buffer.from(JSON.stringify(buildOpenApi(ALL_ROUTES, { version: packageVersion() })));
  return served;
}

/** package.json's version: two levels up from the sources, three from the compiled `dist/`. */
function packageVersion(): string | undefined {
  for (const rel of ['../../package.json', '../../../package.json']) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(rel, import.meta.url), 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'tollgate') return pkg.version;
    } catch {
      // not there: try the next
    }
  }
  return undefined;
}
