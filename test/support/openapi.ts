// Checks real answers against tollgate's own OpenAPI document (the bytes GET /openapi.json serves), with ajv on the
// document's JSON Schemas (draft 2020-12). Admin API tests call expectMatchesOpenApi the same way.
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { ValidateFunction } from 'ajv';
import ajvFormats from 'ajv-formats';
import { expect } from 'vitest';
import type { OpenApiDocument } from '../../gateway/openapi/document.ts';
import { openApiJson } from '../../gateway/openapi/document.ts';

// ajv-formats is CommonJS: under NodeNext its callable is the module's `default`.
const addFormats = (ajvFormats as unknown as { default: (a: Ajv2020) => void }).default;
const DOC_ID = 'https://tollgate.dev/openapi.json';
const REF = '#/components/schemas/';

type Json = Record<string, unknown>;

/** A $ref into the document's components, made resolvable by ajv (which knows the components by DOC_ID). */
function absoluteRefs(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(absoluteRefs);
  if (v === null || typeof v !== 'object') return v;
  const out: Json = {};
  for (const [k, x] of Object.entries(v)) out[k] = k === '$ref' && typeof x === 'string' && x.startsWith(REF) ? `${DOC_ID}#/$defs/${x.slice(REF.length)}` : absoluteRefs(x);
  return out;
}

/** Strict ajv (an unknown keyword is an error) that knows every component schema. */
export function openApiAjv(doc: OpenApiDocument): Ajv2020 {
  const ajv = new Ajv2020({ strict: true, allErrors: true });
  addFormats(ajv);
  // OpenAPI's own format for file parts: any string.
  ajv.addFormat('binary', true);
  ajv.addSchema({ $id: DOC_ID, $defs: absoluteRefs(doc.components.schemas) as Json });
  return ajv;
}

let cached: { doc: OpenApiDocument; ajv: Ajv2020; validators: Map<string, ValidateFunction> } | undefined;

function load() {
  if (!cached) {
    const doc = JSON.parse(openApiJson().toString('utf8')) as OpenApiDocument;
    cached = { doc, ajv: openApiAjv(doc), validators: new Map() };
  }
  return cached;
}

/**
 * The document path (`/api/v1/models/{model}`) a request path falls under: a literal path first, then templates with
 * one segment per parameter, then templates whose parameters may hold `/` (model ids).
 */
export function findDocumentPath(doc: OpenApiDocument, method: string, path: string): string | undefined {
  const m = method.toLowerCase();
  const bare = path.split('?')[0];
  if (doc.paths[bare]?.[m]) return bare;
  const templates = Object.keys(doc.paths).filter((p) => doc.paths[p][m] && p.includes('{'));
  for (const param of ['[^/]+', '.+']) {
    for (const p of templates) {
      const re = new RegExp(`^${p.split(/\{[^}]+\}/).map((x) => x.replace(/[.*+?^$()|[\]\\]/g, '\\$&')).join(param)}$`);
      if (re.test(bare)) return p;
    }
  }
  return undefined;
}

/**
 * Asserts the answer `body` (parsed JSON) to `method path` with `status` is what the document declares: the route
 * is documented, the status is listed, the content type (when given) is one it lists, and the body validates.
 */
export function expectMatchesOpenApi(method: string, path: string, status: number, body: unknown, contentType?: string): void {
  const { doc, ajv, validators } = load();
  const docPath = findDocumentPath(doc, method, path);
  expect(docPath, `${method} ${path} is not in the OpenAPI document`).toBeDefined();
  const op = doc.paths[docPath!][method.toLowerCase()] as { responses: Record<string, { content?: Record<string, { schema?: Json }> }> };
  let res = op.responses[String(status)] ?? op.responses[`${String(status)[0]}XX`] ?? op.responses.default;
  expect(res, `${method} ${docPath} does not declare status ${status}`).toBeDefined();
  const shared = (res as { $ref?: string }).$ref;
  if (shared !== undefined) res = doc.components.responses[shared.slice('#/components/responses/'.length)] as typeof res;
  expect(res, `${method} ${docPath} ${status}: ${shared} does not resolve`).toBeDefined();
  const content = res.content ?? {};
  const types = Object.keys(content);
  const ct = contentType?.split(';')[0].trim().toLowerCase();
  if (ct !== undefined) expect(types, `${method} ${docPath} ${status}: content type ${ct} not declared`).toContain(ct);
  const media = ct ?? types.find((t) => content[t].schema !== undefined);
  const schema = media === undefined ? undefined : content[media]?.schema;
  expect(schema, `${method} ${docPath} ${status} ${media ?? ''} has no schema to check the body with`).toBeDefined();
  const key = `${method} ${docPath} ${status} ${media}`;
  let validate = validators.get(key);
  if (!validate) {
    validate = ajv.compile(absoluteRefs(schema) as Json);
    validators.set(key, validate);
  }
  const ok = validate(body);
  expect(ok, `${key}: ${ajv.errorsText(validate.errors, { separator: '\n' })}\nbody: ${JSON.stringify(body).slice(0, 2000)}`).toBe(true);
}

/** Fetches `url` and checks the answer against the document; returns the status and the body (parsed when JSON). */
export async function fetchMatchingOpenApi(url: string, init: RequestInit = {}): Promise<{ status: number; body: unknown; headers: Headers }> {
  const res = await fetch(url, init);
  const text = await res.text();
  // JSON bodies are checked parsed; any other declared body (text/plain, text/html) as the string it is.
  const json = /^application\/([a-z.+-]*\+)?json/.test(res.headers.get('content-type') ?? '');
  const body = json && text !== '' ? (JSON.parse(text) as unknown) : text;
  expectMatchesOpenApi(init.method ?? 'GET', new URL(url).pathname, res.status, body, res.headers.get('content-type') ?? undefined);
  return { status: res.status, body, headers: res.headers };
}
