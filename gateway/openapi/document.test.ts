// The OpenAPI document: well-formed OpenAPI 3.1 whose schemas compile under draft 2020-12, and in step with the
// routes fastify actually registers on the API port (each served route documented, each documented route served).
import { readFileSync } from 'node:fs';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { ADMIN_ROUTES } from '../admin/catalogue.ts';
import type { GatewayContext } from '../routes/context.ts';
import { buildServer } from '../server.ts';
import { findDocumentPath, openApiAjv } from '../../test/support/openapi.ts';
import type { OpenApiDocument } from './document.ts';
import { ALL_ROUTES, buildOpenApi, documentPath, openApiJson } from './document.ts';
import { PUBLIC_ROUTES } from './public-routes.ts';

const doc = JSON.parse(openApiJson().toString('utf8')) as OpenApiDocument;
const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
type Op = {
  operationId: string;
  tags: string[];
  parameters?: { name: string; in: string; required: boolean; schema: Record<string, unknown> }[];
  requestBody?: { content: Record<string, { schema?: unknown }> };
  responses: Record<string, { description: string; content?: Record<string, { schema?: unknown }> }>;
  security: Record<string, string[]>[];
};
// A path item holds operations by method, and may hold `servers` (admin paths).
const operations = Object.entries(doc.paths).flatMap(([path, item]) =>
  Object.entries(item)
    .filter(([k]) => k !== 'servers')
    .map(([method, op]) => ({ path, method, op: op as unknown as Op })),
);

function refs(v: unknown, out: string[] = []): string[] {
  if (Array.isArray(v)) for (const x of v) refs(x, out);
  else if (v !== null && typeof v === 'object') {
    for (const [k, x] of Object.entries(v)) {
      if (k === '$ref' && typeof x === 'string') out.push(x);
      else refs(x, out);
    }
  }
  return out;
}

describe('the OpenAPI document', () => {
  it('is an OpenAPI 3.1 document with the draft 2020-12 dialect', () => {
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.jsonSchemaDialect).toBe('https://json-schema.org/draft/2020-12/schema');
    expect(doc.info).toMatchObject({ title: 'tollgate', version: expect.any(String) });
    expect(Object.keys(doc)).toEqual(expect.arrayContaining(['openapi', 'info', 'paths', 'components']));
    expect(doc.servers[0]).toMatchObject({ url: 'http://{host}:{port}', variables: { port: { default: '8080' } } });
    const tagNames = new Set(doc.tags.map((t) => t.name));
    for (const { path, method, op } of operations) {
      expect(path).toMatch(/^\//);
      expect(METHODS).toContain(method);
      expect(op.operationId).toMatch(/^[A-Za-z][A-Za-z0-9]*$/);
      for (const t of op.tags) expect(tagNames).toContain(t);
      expect(Object.keys(op.responses).length).toBeGreaterThan(0);
      for (const [status, declared] of Object.entries(op.responses)) {
        expect(status).toMatch(/^([1-5]\d\d|[1-5]XX|default)$/);
        const shared = (declared as { $ref?: string }).$ref;
        const res = shared === undefined ? declared : doc.components.responses[shared.replace('#/components/responses/', '')];
        expect(res, `${op.operationId} ${status}`).toBeDefined();
        expect((res as { description: string }).description).toBeTruthy();
      }
      for (const s of op.security) for (const scheme of Object.keys(s)) expect(doc.components.securitySchemes).toHaveProperty(scheme);
      // Every {name} in the path is a required path parameter, and no path parameter is missing from the path.
      const templated = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]).sort();
      const inPath = (op.parameters ?? []).filter((p) => p.in === 'path');
      expect(inPath.map((p) => p.name).sort()).toEqual(templated);
      for (const p of inPath) expect(p.required).toBe(true);
    }
  });

  it('declares 401 on every operation that needs a credential', () => {
    for (const { op } of operations) {
      const needsOne = op.security.length > 0 && op.security.every((s) => Object.keys(s).length > 0);
      if (needsOne) expect(Object.keys(op.responses), op.operationId).toContain('401');
    }
  });

  it('finds the operation for a concrete path, preferring one-segment parameters', () => {
    expect(findDocumentPath(doc, 'GET', '/api/v1/models/openai/gpt-4o-mini')).toBe('/api/v1/models/{model}');
    expect(findDocumentPath(doc, 'POST', '/api/v1/gemini/v1/models/google%2Fx:streamGenerateContent')).toBe('/api/v1/gemini/v1/models/{model}:streamGenerateContent');
    expect(findDocumentPath(doc, 'GET', '/api/v1/models')).toBe('/api/v1/models');
    expect(findDocumentPath(doc, 'DELETE', '/api/v1/models')).toBeUndefined();
    if (ADMIN_ROUTES.length > 0) {
      expect(findDocumentPath(doc, 'POST', '/admin/v1/keys/k1/revoke')).toBe('/admin/v1/keys/{id}/revoke');
      expect(findDocumentPath(doc, 'PATCH', '/admin/v1/projects/acme/web')).toBe('/admin/v1/projects/{organization}/{id}');
    }
  });

  it('has unique operation ids and one operation per method and path', () => {
    const ids = operations.map((o) => o.op.operationId);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('resolves every $ref to a component, and every schema compiles under strict draft 2020-12', () => {
    const names = new Set(Object.keys(doc.components.schemas));
    for (const r of refs(doc)) {
      if (r.startsWith('#/components/responses/')) expect(doc.components.responses).toHaveProperty(r.slice('#/components/responses/'.length));
      else expect(names).toContain(r.slice('#/components/schemas/'.length));
      expect(r).toMatch(/^#\/components\/(schemas|responses)\//);
    }
    // Strict: an unknown keyword, a bad pattern or a dangling reference throws here.
    const ajv = openApiAjv(doc);
    for (const name of names) expect(() => ajv.getSchema(`https://tollgate.dev/openapi.json#/$defs/${name}`), name).not.toThrow();
    for (const { op } of operations) for (const p of op.parameters ?? []) expect(() => ajv.compile(p.schema), `${op.operationId} ${p.name}`).not.toThrow();
  });

  it('is built by zod from the declarations: the served bytes are buildOpenApi of every route', () => {
    expect(doc).toEqual(buildOpenApi(ALL_ROUTES, { version: pkg.version }));
    expect(openApiJson()).toBe(openApiJson());
  });

  it("declares each family's error answers once, shared by every operation that can give them", () => {
    const op = doc.paths['/api/v3/chat/completions'].post as unknown as Op;
    expect(op.responses['429']).toEqual({ $ref: '#/components/responses/CompatError429' });
    expect(doc.components.responses.CompatError429).toMatchObject({ content: { 'application/json': { schema: { $ref: '#/components/schemas/CompatError' } } } });
    expect(doc.components.responses.Problem401).toMatchObject({ content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } } });
  });

  it('documents the money in the usage report as decimal strings, never numbers', () => {
    const row = doc.components.schemas.UsageRow as { properties: Record<string, { type: string }> };
    expect(row.properties.cost_points.type).toBe('string');
    expect(row.properties.original_cost.type).toBe('string');
  });

  it('refuses a wildcard route without a docPath and a route declared twice', () => {
    const base = PUBLIC_ROUTES.find((r) => r.operationId === 'getModelV1')!;
    expect(() => documentPath({ ...base, docPath: undefined })).toThrow(/docPath/);
    expect(() => buildOpenApi([base, { ...base, operationId: 'other' }])).toThrow(/twice/);
  });
});

describe('the document and the API port agree', () => {
  it('every route fastify registers is documented, and every documented API-port route is registered', async () => {
    const served = new Set<string>();
    const app = buildServer({} as GatewayContext, {
      maxBodyBytes: 1024,
      logger: pino({ level: 'silent' }),
      onRoute: (r) => {
        for (const m of [r.method].flat()) if (m !== 'HEAD') served.add(`${m} ${r.url}`);
      },
    });
    await app.ready();
    await app.close();
    const declared = new Set(PUBLIC_ROUTES.map((r) => `${r.method} ${r.path}`));
    expect([...served].filter((r) => !declared.has(r)), 'served but not documented').toEqual([]);
    expect([...declared].filter((r) => !served.has(r)), 'documented but not served').toEqual([]);
    expect(PUBLIC_ROUTES.every((r) => r.port === 'api')).toBe(true);
    expect(ADMIN_ROUTES.every((r) => r.port === 'admin')).toBe(true);
  });
});
