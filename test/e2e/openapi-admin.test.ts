// The admin port against the OpenAPI document: it serves the same document, every route it registers is declared and
// every declared admin-port route is registered, and its answers (reads, writes, refusals) validate against the
// document's JSON Schemas (what a generated client would check), not only against the zod schemas they come from.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAdminTokens } from '../../gateway/admin/tokens.ts';
import { ALL_ROUTES } from '../../gateway/openapi/document.ts';
import type { TestGateway } from '../support/gateway.ts';
import { startTestGateway } from '../support/gateway.ts';
import { expectMatchesOpenApi, fetchMatchingOpenApi } from '../support/openapi.ts';

const WRITE = 'tga_openapi_write_0123456789';
const READ = 'tga_openapi_read_01234567890';
/** Served by the admin port under the same path as the API port's, documented once (there). */
const SHARED_WITH_API_PORT = ['GET /healthz', 'GET /openapi.json'];

let t: TestGateway;
let admin: string;
let consoleDir: string;
beforeAll(async () => {
  consoleDir = mkdtempSync(join(tmpdir(), 'tg-openapi-console-'));
  writeFileSync(join(consoleDir, 'index.html'), '<!doctype html><title>tollgate</title>');
  writeFileSync(join(consoleDir, 'app.js'), 'export {};');
  t = await startTestGateway({ gateway: { adminPort: 0, adminTokens: parseAdminTokens(`ops:write:${WRITE},viewer:read:${READ}`, 'test'), adminConsoleDir: consoleDir } });
  admin = t.gw.adminUrl!;
});
afterAll(async () => {
  await t?.close();
  rmSync(consoleDir, { recursive: true, force: true });
});

const bearer = (token: string, init: RequestInit = {}): RequestInit => ({ ...init, headers: { authorization: `Bearer ${token}`, ...(init.body ? { 'content-type': 'application/json' } : {}), ...(init.headers as Record<string, string>) } });

/** A concrete path for a declared one, naming things the test world has (org acme, project web, key acme). */
function concrete(path: string): string {
  return path
    .replace(':organization', 'acme')
    .replace(':id', path.startsWith('/admin/v1/projects/') ? 'web' : 'acme')
    .replace('*', 'app.js');
}

describe('the admin port and the document', () => {
  it('serves the same document as the API port', async () => {
    const [a, b] = await Promise.all([fetch(`${admin}/openapi.json`), fetch(`${t.url}/openapi.json`)]);
    expect(a.status).toBe(200);
    expect(a.headers.get('content-type')).toMatch(/^application\/json/);
    const bytes = Buffer.from(await a.arrayBuffer());
    expect(bytes.equals(Buffer.from(await b.arrayBuffer()))).toBe(true);
    const doc = JSON.parse(bytes.toString('utf8')) as { paths: Record<string, Record<string, { 'x-tollgate-port'?: string }>> };
    expect(doc.paths['/admin/v1/keys/{id}/revoke'].post['x-tollgate-port']).toBe('admin');
  });

  it('every route the admin port registers is declared, and every declared admin-port route is registered', () => {
    const served = new Set(t.gw.admin!.listRoutes().filter((r) => r.method !== 'HEAD').map((r) => `${r.method} ${r.path}`));
    const declared = new Set(ALL_ROUTES.filter((r) => r.port === 'admin').map((r) => `${r.method} ${r.path}`));
    expect([...served].filter((r) => !declared.has(r) && !SHARED_WITH_API_PORT.includes(r)), 'served but not declared').toEqual([]);
    expect([...declared].filter((r) => !served.has(r)), 'declared but not served').toEqual([]);
    expect(declared.size).toBeGreaterThan(15);
  });

  it('every declared admin-port route answers something other than 404, in its declared shape', async () => {
    // The control: an undeclared admin path is a 404, so a non-404 below means the route is there.
    expect((await fetch(`${admin}/admin/v1/nothing-here`, bearer(READ))).status).toBe(404);
    for (const r of ALL_ROUTES.filter((x) => x.port === 'admin')) {
      const path = concrete(r.path);
      // Reads with the read token; writes with it too, so nothing changes: 403.
      const res = await fetch(`${admin}${path}`, bearer(READ, { method: r.method, ...(r.method === 'GET' ? {} : { body: '{}' }) }));
      const text = await res.text();
      expect(res.status, `${r.method} ${path}: ${text}`).not.toBe(404);
      if (r.security === 'adminWrite') expect(res.status, `${r.method} ${path}`).toBe(403);
      const ct = res.headers.get('content-type') ?? '';
      if (ct.startsWith('application/json')) expectMatchesOpenApi(r.method, path, res.status, JSON.parse(text), ct);
    }
  });

  it('admin answers validate: session, lists, one of each, usage, recent requests, upstreams', async () => {
    // Something for usage and recent requests to show.
    const chat = await fetch(`${t.url}/api/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${t.keys.acme}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hi' }] }) });
    expect(chat.status).toBe(200);
    await chat.text();
    await t.gw.ledger.flush();
    const today = new Date().toISOString().slice(0, 10);
    const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
    for (const path of [
      '/admin/v1/session',
      '/admin/v1/organizations',
      '/admin/v1/organizations/acme',
      '/admin/v1/projects?organization=acme',
      '/admin/v1/keys?state=active&limit=2',
      '/admin/v1/keys/acme',
      `/admin/v1/usage?from=${today}&to=${tomorrow}&bucket=hour&group_by=model`,
      `/admin/v1/usage?from=${today}&to=${tomorrow}&group_by=key&organization=acme`,
      '/admin/v1/requests?limit=5',
      '/admin/v1/models',
      '/admin/v1/pricing-groups',
      '/admin/v1/providers',
      '/admin/v1/upstreams',
      '/upstreams',
      '/metrics',
      '/',
    ]) {
      const r = await fetchMatchingOpenApi(`${admin}${path}`, bearer(READ));
      expect(r.status, `${path}: ${JSON.stringify(r.body)}`).toBe(200);
    }
    const usage = await fetchMatchingOpenApi(`${admin}/admin/v1/usage?from=${today}&to=${tomorrow}`, bearer(READ));
    expect(JSON.stringify(usage.body)).toContain('cost_points');
  });

  it('writes and refusals validate: create, patch and revoke a key, a conflict, bad input, no token', async () => {
    const created = await fetchMatchingOpenApi(`${admin}/admin/v1/keys`, bearer(WRITE, { method: 'POST', body: JSON.stringify({ organization: 'acme', project: 'openapi', name: 'doc check' }) }));
    expect(created.status).toBe(201);
    const id = (created.body as { key: { id: string } }).key.id;
    expect((await fetchMatchingOpenApi(`${admin}/admin/v1/keys/${id}`, bearer(WRITE, { method: 'PATCH', body: JSON.stringify({ name: 'renamed' }) }))).status).toBe(200);
    expect((await fetchMatchingOpenApi(`${admin}/admin/v1/keys/${id}/revoke`, bearer(WRITE, { method: 'POST' }))).status).toBe(200);
    expect((await fetchMatchingOpenApi(`${admin}/admin/v1/organizations`, bearer(WRITE, { method: 'POST', body: JSON.stringify({ id: 'acme' }) }))).status).toBe(409);
    expect((await fetchMatchingOpenApi(`${admin}/admin/v1/keys`, bearer(WRITE, { method: 'POST', body: JSON.stringify({ organization: 42 }) }))).status).toBe(400);
    expect((await fetchMatchingOpenApi(`${admin}/admin/v1/keys/nope`, bearer(READ))).status).toBe(404);
    expect((await fetchMatchingOpenApi(`${admin}/admin/v1/keys`)).status).toBe(401);
  });
});
