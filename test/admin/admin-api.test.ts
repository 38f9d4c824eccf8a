// The admin API against a real gateway (admin port, real store), driven over HTTP as the console drives it, with the
// official openai SDK on the API port for the keys it creates.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_ROUTES } from '../../gateway/admin/catalogue.ts';
import { startAdminServer } from '../../gateway/admin/server.ts';
import { createTelemetry } from '../../gateway/telemetry/telemetry.ts';
import { parseAdminTokens } from '../../gateway/admin/tokens.ts';
import type { Backend } from '../support/databases.ts';
import type { TestGateway } from '../support/gateway.ts';
import { PROVIDER_SECRET, startTestGateway } from '../support/gateway.ts';
import type { Json } from '../support/http.ts';
import { sumDecimals } from '../support/expected-cost.ts';

class Lines extends Writable {
  readonly lines: string[] = [];
  private rest = '';
  override _write(chunk: Buffer, _enc: string, done: () => void): void {
    const parts = (this.rest + chunk.toString('utf8')).split('\n');
    this.rest = parts.pop()!;
    this.lines.push(...parts.filter((l) => l !== ''));
    done();
  }
}

const WRITE = 'tga_write_0123456789abcdef';
const READ = 'tga_read_0123456789abcdef0';
const TOKENS = parseAdminTokens(`ops:write:${WRITE},grafana:read:${READ}`, 'test');

/** Every admin answer must match the schema its route declares for that status (the OpenAPI document's source). */
function checkDeclared(method: string, path: string, status: number, body: unknown): void {
  const bare = path.split('?')[0];
  const spec = ADMIN_ROUTES.find((r) => r.method === method && new RegExp(`^${r.path.replace(/:[^/]+/g, '[^/]+')}$`).test(bare));
  if (!spec) return;
  const declared = spec.responses[status];
  expect(declared, `${method} ${bare} answered ${status}, which its RouteSpec does not declare`).toBeDefined();
  const r = declared.schema?.safeParse(body);
  expect(r?.success ?? true, `${method} ${bare} ${status}: ${JSON.stringify(r?.error?.issues)}`).toBe(true);
}

const BACKENDS: Backend[] = process.env.DATABASE_URL ? ['pglite', 'postgres'] : ['pglite'];

describe.each(BACKENDS)('admin API on %s', (backend) => {
  let t: TestGateway;
  let admin: string;
  const log = new Lines();

  async function call(method: string, path: string, init: { token?: string | null; body?: unknown; headers?: Record<string, string> } = {}): Promise<{ status: number; body: Json; headers: Headers }> {
    const headers: Record<string, string> = { ...init.headers };
    if (init.token !== null) headers.authorization = `Bearer ${init.token ?? WRITE}`;
    if (init.body !== undefined && !headers['content-type']) headers['content-type'] = 'application/json';
    const res = await fetch(`${admin}${path}`, { method, headers, body: init.body === undefined ? undefined : typeof init.body === 'string' ? init.body : JSON.stringify(init.body) });
    const text = await res.text();
    const body = text && res.headers.get('content-type')?.includes('json') ? JSON.parse(text) : text;
    checkDeclared(method, path, res.status, body);
    return { status: res.status, body, headers: res.headers };
  }

  /** Every page of a list, following next_cursor. */
  async function all(path: string, limit: number): Promise<Json[]> {
    const out: Json[] = [];
    let cursor: string | null = null;
    for (let i = 0; i < 100; i++) {
      const sep = path.includes('?') ? '&' : '?';
      const r = await call('GET', `${path}${sep}limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      expect(r.status).toBe(200);
      expect(r.body.data.length).toBeLessThanOrEqual(limit);
      out.push(...r.body.data);
      cursor = r.body.next_cursor;
      if (!cursor) return out;
    }
    throw new Error('paging did not end');
  }

  beforeAll(async () => {
    t = await startTestGateway({ backend, gateway: { adminPort: 0, adminTokens: TOKENS, logger: true, logDestination: log } });
    admin = t.gw.adminUrl!;
  });
  afterAll(async () => t?.close());

  it('keeps /metrics, /upstreams and /healthz open and lists its routes', async () => {
    expect((await fetch(`${admin}/healthz`)).status).toBe(200);
    expect((await fetch(`${admin}/metrics`)).headers.get('content-type')).toContain('text/plain');
    expect((await fetch(`${admin}/upstreams`)).status).toBe(200);
    const routes = t.gw.admin!.listRoutes();
    expect(routes).toContainEqual({ method: 'GET', path: '/admin/v1/keys' });
    expect(routes).toContainEqual({ method: 'POST', path: '/admin/v1/keys/:id/revoke' });
  });

  it('refuses no token, a wrong token and an sk_ key with 401, and a read token writing with 403', async () => {
    const none = await call('GET', '/admin/v1/session', { token: null });
    expect(none.status).toBe(401);
    expect(none.body.error.code).toBe('unauthorized');
    expect((await call('GET', '/admin/v1/session', { token: 'tga_wrong_0123456789abcdef' })).status).toBe(401);
    const sk = await call('GET', '/admin/v1/keys', { token: t.keys.acme });
    expect(sk.status).toBe(401);
    expect(JSON.stringify(sk.body)).not.toContain(t.keys.acme);
    const ro = await call('POST', '/admin/v1/keys', { token: READ, body: { organization: 'acme', project: 'web' } });
    expect(ro.status).toBe(403);
    expect(ro.body.error.code).toBe('forbidden');
    expect((await call('GET', '/admin/v1/session', { token: READ })).body).toEqual({ name: 'grafana', role: 'read', mode: 'standalone', writable: false });
    expect((await call('GET', '/admin/v1/session')).body).toEqual({ name: 'ops', role: 'write', mode: 'standalone', writable: true });
  });

  it('refuses cross-site writes: a foreign Origin (403) and a non-JSON body (415)', async () => {
    const foreign = await call('POST', '/admin/v1/organizations', { body: { id: 'evil' }, headers: { origin: 'https://evil.example' } });
    expect(foreign.status).toBe(403);
    const form = await call('POST', '/admin/v1/organizations', { body: 'id=evil', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expect(form.status).toBe(415);
    expect(form.body.error.code).toBe('unsupported_media_type');
    const own = await call('POST', '/admin/v1/organizations', { body: { id: 'initech', models: ['openai/*'] }, headers: { origin: admin } });
    expect(own.status).toBe(201);
  });

  it('writes one audit line per call, with who and what but never the token', async () => {
    await call('GET', '/admin/v1/organizations/acme', { token: READ });
    await call('GET', '/admin/v1/session', { token: 'tga_wrong_0123456789abcdef' });
    for (let i = 0; i < 100 && !log.lines.some((l) => l.includes('tga_wrong') || l.includes('"status":401')); i++) await new Promise((r) => setTimeout(r, 10));
    const audit = log.lines.map((l) => JSON.parse(l) as Json).filter((l) => l.audit === true);
    expect(audit).toContainEqual(expect.objectContaining({ audit: true, who: 'grafana', role: 'read', method: 'GET', path: '/admin/v1/organizations/acme', status: 200, target: 'acme', ms: expect.any(Number) }));
    expect(audit).toContainEqual(expect.objectContaining({ who: null, path: '/admin/v1/session', status: 401 }));
    const text = log.lines.join('\n');
    for (const secret of [WRITE, READ, 'tga_wrong_0123456789abcdef', PROVIDER_SECRET]) expect(text).not.toContain(secret);
  });

  it('creates a key usable at once with the openai SDK, shows its request with the ledger row\'s numbers, and revokes it', async () => {
    const made = await call('POST', '/admin/v1/keys', { body: { organization: 'acme', project: 'console', name: 'from the admin API' } });
    expect(made.status).toBe(201);
    expect(made.headers.get('cache-control')).toBe('no-store');
    expect(made.body.secret).toMatch(/^sk_live_/);
    expect(made.body.key).toMatchObject({ organization: 'acme', project: 'console', name: 'from the admin API', state: 'active', prefix: made.body.secret.slice(0, 14) });
    const id = made.body.key.id as string;
    expect((await call('GET', `/admin/v1/keys/${id}`)).body.id).toBe(id);

    const client = new OpenAI({ baseURL: `${t.url}/api/v1`, apiKey: made.body.secret, maxRetries: 0 });
    const { data, response } = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hello admin' }] }).withResponse();
    expect(data.choices[0].message.content).toContain('hello admin');
    const requestId = response.headers.get('x-tollgate-request-id')!;
    await t.gw.ledger.flush();

    const listed = await call('GET', `/admin/v1/requests?key=${id}`);
    expect(listed.status).toBe(200);
    expect(listed.body.data).toHaveLength(1);
    const row = listed.body.data[0];
    const { rows } = await t.gw.store.query<Json>('SELECT cost_points::text AS cost, status, latency_ms, input::int, output::int, key_prefix FROM usage_events WHERE request_id = $1', [requestId]);
    expect(row).toMatchObject({ request_id: requestId, key_id: id, key_prefix: made.body.key.prefix, organization: 'acme', project: 'console', route: '/api/v1/chat/completions', model: 'gpt-4o-mini', model_id: 'openai/gpt-4o-mini', status: 200, stream: false, attempts: 1 });
    expect(row.cost_points).toBe(response.headers.get('x-tollgate-cost-points'));
    expect(Number(row.cost_points)).toBeGreaterThan(0);
    expect(row.cost_points).toBe(sumDecimals([rows[0].cost]));
    expect({ status: row.status, latency_ms: row.latency_ms, input: row.input, output: row.output, key_prefix: row.key_prefix }).toEqual({ status: rows[0].status, latency_ms: rows[0].latency_ms, input: rows[0].input, output: rows[0].output, key_prefix: rows[0].key_prefix });
    expect(row.latency_ms).toBeGreaterThanOrEqual(0);

    const revoked = await call('POST', `/admin/v1/keys/${id}/revoke`);
    expect(revoked.status).toBe(200);
    expect(revoked.body.state).toBe('revoked');
    expect((await call('POST', `/admin/v1/keys/${id}/revoke`, { body: {} })).body.state).toBe('revoked');
    expect((await call('POST', `/admin/v1/keys/${id}/revoke`, { body: { why: 'x' } })).status).toBe(400);
    await expect(client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'again' }] })).rejects.toMatchObject({ status: 401 });
    expect((await call('GET', `/admin/v1/keys?state=revoked&organization=acme`)).body.data.map((k: Json) => k.id)).toContain(id);
  });

  it('sums usage exactly as the ledger does, per key, project, model and organization', async () => {
    const client = new OpenAI({ baseURL: `${t.url}/api/v1`, apiKey: t.keys.globex, maxRetries: 0 });
    for (let i = 0; i < 3; i++) await client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: `usage ${i}` }] });
    const acme = new OpenAI({ baseURL: `${t.url}/api/v1`, apiKey: t.keys.acme, maxRetries: 0 });
    await acme.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'usage acme' }] });
    await t.gw.ledger.flush();
    const from = new Date(Date.now() - 3 * 3600_000).toISOString();
    const to = new Date(Date.now() + 60_000).toISOString();
    const { rows } = await t.gw.store.query<{ organization: string; cost: string; n: string }>('SELECT organization, sum(cost_points)::text AS cost, count(*)::text AS n FROM usage_events GROUP BY organization ORDER BY organization');
    for (const bucket of ['hour', 'day']) {
      const byOrg = await call('GET', `/admin/v1/usage?from=${from}&to=${to}&bucket=${bucket}&group_by=organization`);
      expect(byOrg.status, JSON.stringify(byOrg.body)).toBe(200);
      for (const r of rows) {
        const total = byOrg.body.totals.find((x: Json) => x.group === r.organization);
        expect(total.requests).toBe(Number(r.n));
        expect(total.cost_points).toBe(sumDecimals([r.cost]));
      }
      expect(byOrg.body.total.cost_points).toBe(sumDecimals(rows.map((r) => r.cost)));
      const seriesSum = sumDecimals(byOrg.body.series.flatMap((s: Json) => s.groups.map((g: Json) => g.cost_points)));
      expect(seriesSum).toBe(byOrg.body.total.cost_points);
    }
    const globexKey = await t.gw.store.query<{ id: string; cost: string }>("SELECT api_key_id AS id, sum(cost_points)::text AS cost FROM usage_events WHERE organization = 'globex' GROUP BY 1");
    const byKey = await call('GET', `/admin/v1/usage?from=${from}&to=${to}&group_by=key&organization=globex`);
    expect(byKey.body.totals).toEqual([expect.objectContaining({ group: globexKey.rows[0].id, requests: 3, cost_points: sumDecimals([globexKey.rows[0].cost]) })]);
    // Organization-wide (project empty) equals the sum over its projects.
    const orgWide = await call('GET', `/admin/v1/usage?from=${from}&to=${to}&group_by=project&organization=acme&project=`);
    const acmeCost = await t.gw.store.query<{ cost: string }>("SELECT sum(cost_points)::text AS cost FROM usage_events WHERE organization = 'acme'");
    expect(orgWide.body.total.cost_points).toBe(sumDecimals([acmeCost.rows[0].cost]));
    expect(orgWide.body.totals.map((x: Json) => x.group).sort()).toEqual(['console', 'web']);
    const bad = await call('GET', `/admin/v1/usage?from=${to}&to=${from}`);
    expect(bad.status).toBe(422);
    expect((await call('GET', `/admin/v1/usage?from=yesterday&to=${to}`)).status).toBe(400);
    // The key's own report is unchanged by all this.
    const own = await fetch(`${t.url}/api/business/v1/customer/usage?from=${from}&to=${to}`, { headers: { authorization: `Bearer ${t.keys.globex}` } });
    expect(((await own.json()) as Json).totals.request_count).toBe(3);
  });

  it('pages recent requests newest first without gaps or repeats, and filters by tenancy', async () => {
    const every = await all('/admin/v1/requests', 2);
    const { rows } = await t.gw.store.query<{ request_id: string }>('SELECT request_id FROM usage_events ORDER BY occurred_at DESC, request_id DESC');
    expect(every.map((r) => r.request_id)).toEqual(rows.map((r) => r.request_id));
    const globex = await all('/admin/v1/requests?organization=globex', 1);
    expect(globex).toHaveLength(3);
    expect(globex.every((r) => r.organization === 'globex' && r.project === 'research')).toBe(true);
    expect((await call('GET', '/admin/v1/requests?project=nope')).body.data).toEqual([]);
    expect((await call('GET', '/admin/v1/requests?status=200&limit=500')).body.data).toHaveLength(rows.length);
    expect((await call('GET', '/admin/v1/requests?cursor=garbage')).status).toBe(400);
    expect((await call('GET', '/admin/v1/requests?limit=501')).status).toBe(400);
  });

  it('lists, creates and patches organizations, projects and keys, with 404, 409 and 422', async () => {
    const orgs = await all('/admin/v1/organizations', 1);
    expect(orgs.map((o) => o.id)).toEqual(['acme', 'globex', 'initech']);
    expect(orgs[0]).toMatchObject({ id: 'acme', models: ['*'], discount: '0.9' });
    expect((await call('POST', '/admin/v1/organizations', { body: { id: 'acme' } })).status).toBe(409);
    expect((await call('GET', '/admin/v1/organizations/nope')).status).toBe(404);
    const patched = await call('PATCH', '/admin/v1/organizations/initech', { body: { budget: { month: '12.5' }, limits: { rpm: 60 } } });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ id: 'initech', budget: { month: '12.5' }, limits: { rpm: 60 } });
    expect((await call('PATCH', '/admin/v1/organizations/initech', { body: { limits: null } })).body.limits).toBeUndefined();
    // What is left of its budget now, as the key's own limits report shows it.
    const withSpend = await call('GET', '/admin/v1/organizations/initech');
    expect(withSpend.body.spend.budgets).toEqual([expect.objectContaining({ scope: 'organization', owner: 'initech', period: 'month', points: '12.5', spent: '0', remaining: '12.5' })]);
    const project = await call('PATCH', '/admin/v1/projects/initech/labs', { body: { budget: { day: '1' } } });
    expect(project.body).toMatchObject({ id: 'labs', organization: 'initech', budget: { day: '1' }, keys: 0 });
    expect((await call('GET', '/admin/v1/projects?organization=initech')).body.data.map((p: Json) => p.id)).toEqual(['labs']);
    expect(project.body.spend.budgets).toEqual([expect.objectContaining({ scope: 'project', owner: 'labs', period: 'day', points: '1', remaining: '1' })]);
    const bad = await call('PATCH', '/admin/v1/organizations/initech', { body: { limits: { rpm: -1 } } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details[0].location).toMatch(/^body\.limits/);
    expect((await call('PATCH', '/admin/v1/organizations/initech', { body: { unknown: 1 } })).status).toBe(400);
    expect((await call('POST', '/admin/v1/keys', { body: { organization: 'nope', project: 'x' } })).status).toBe(404);
    const key = (await call('POST', '/admin/v1/keys', { body: { organization: 'initech', project: 'labs' } })).body.key;
    const renamed = await call('PATCH', `/admin/v1/keys/${key.id}`, { body: { name: 'renamed', expiresAt: '2020-01-01T00:00:00Z' } });
    expect(renamed.body).toMatchObject({ name: 'renamed', state: 'expired' });
    expect((await call('PATCH', `/admin/v1/keys/${key.id}`, { body: { expiresAt: null } })).body.state).toBe('active');
    // A key shows only its own budget's spend (its organization's and project's show on those), and none without one.
    expect((await call('GET', `/admin/v1/keys/${key.id}`)).body.spend).toBeUndefined();
    await call('PATCH', `/admin/v1/keys/${key.id}`, { body: { budget: { day: '2' } } });
    const keySpend = await call('GET', `/admin/v1/keys/${key.id}`);
    expect(keySpend.body.spend.budgets).toEqual([expect.objectContaining({ scope: 'key', owner: key.id, period: 'day', points: '2', spent: '0', remaining: '2' })]);
    expect(keySpend.body.spend.limits).toEqual([]);
    // A key created between two pages neither repeats an item nor skips one (keyset cursors).
    const first = await call('GET', '/admin/v1/keys?limit=2');
    await call('POST', '/admin/v1/keys', { body: { organization: 'initech', project: 'labs' } });
    const rest: Json[] = [];
    for (let cursor = first.body.next_cursor; cursor; ) {
      const next = await call('GET', `/admin/v1/keys?limit=2&cursor=${encodeURIComponent(cursor)}`);
      rest.push(...next.body.data);
      cursor = next.body.next_cursor;
    }
    const seen = [...first.body.data, ...rest].map((k: Json) => k.id);
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen).toEqual([...seen].sort());
    const keys = await all('/admin/v1/keys', 2);
    expect(keys.map((k) => k.id).filter((id) => id > first.body.data[1].id)).toEqual(rest.map((k: Json) => k.id));
    expect(keys.map((k) => k.id)).toEqual([...keys.map((k) => k.id)].sort());
    expect(JSON.stringify(keys)).not.toMatch(/sha256:|sk_live_[A-Za-z0-9]{20}/);
  });

  it('shows models, pricing groups, providers and upstreams, never a credential', async () => {
    const models = await all('/admin/v1/models', 500);
    expect(models.find((m) => m.id === 'openai/gpt-4o-mini')).toMatchObject({ pricingGroup: 'mini', providers: ['fake-openai'], public: true });
    const groups = (await call('GET', '/admin/v1/pricing-groups')).body.data;
    expect(groups.find((g: Json) => g.id === 'mini')).toMatchObject({ mode: 'flat_tokens', discount: '1', prices: { input: '0.15', output: '0.6', cacheRead: '0.075', cacheWrite: '0' } });
    const providers = await call('GET', '/admin/v1/providers');
    expect(providers.body.data.find((p: Json) => p.id === 'fake-openai')).toMatchObject({ credential: { env: null, present: true } });
    const ups = await call('GET', '/admin/v1/upstreams');
    expect(ups.body.targets.some((u: Json) => u.provider === 'fake-openai' && u.state === 'healthy')).toBe(true);
    for (const r of [providers, ups]) expect(JSON.stringify(r.body)).not.toContain(PROVIDER_SECRET);
  });

  it('keeps two organizations\' projects of the same name apart when grouping by project', async () => {
    // acme already has a project "web"; globex gets one too.
    const made = await call('POST', '/admin/v1/keys', { body: { organization: 'globex', project: 'web', name: 'same project name' } });
    expect(made.status).toBe(201);
    const client = new OpenAI({ baseURL: `${t.url}/api/v1`, apiKey: made.body.secret, maxRetries: 0 });
    await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'globex web' }] });
    await t.gw.ledger.flush();
    const from = new Date(Date.now() - 3 * 3600_000).toISOString();
    const to = new Date(Date.now() + 60_000).toISOString();
    const { rows } = await t.gw.store.query<{ organization: string; project: string; cost: string; n: string }>(
      "SELECT organization, project, sum(cost_points)::text AS cost, count(*)::text AS n FROM usage_events WHERE project = 'web' GROUP BY 1, 2 ORDER BY 1",
    );
    expect(rows.map((r) => r.organization)).toEqual(['acme', 'globex']);
    const byProject = await call('GET', `/admin/v1/usage?from=${from}&to=${to}&group_by=project`);
    expect(byProject.status).toBe(200);
    const web = byProject.body.totals.filter((x: Json) => x.group === 'web');
    expect(web.map((x: Json) => x.organization).sort()).toEqual(['acme', 'globex']);
    for (const r of rows) expect(web.find((x: Json) => x.organization === r.organization)).toMatchObject({ requests: Number(r.n), cost_points: sumDecimals([r.cost]) });
    for (const s of byProject.body.series) for (const g of s.groups) expect(typeof g.organization).toBe('string');
    // Other groupings name no organization.
    const byModel = await call('GET', `/admin/v1/usage?from=${from}&to=${to}&group_by=model`);
    expect(byModel.body.totals.every((x: Json) => !('organization' in x))).toBe(true);
  });
});

describe('admin API without tokens, and on Kubernetes', () => {
  let t: TestGateway;
  beforeAll(async () => {
    t = await startTestGateway({ backend: 'pglite', gateway: { adminPort: 0 } });
  });
  afterAll(async () => t?.close());

  it('answers 503 admin_disabled when no token is configured', async () => {
    const res = await fetch(`${t.gw.adminUrl}/admin/v1/session`, { headers: { authorization: `Bearer ${WRITE}` } });
    expect(res.status).toBe(503);
    expect(((await res.json()) as Json).error.code).toBe('admin_disabled');
  });

  it('reads but never writes in Kubernetes mode (405 read_only)', async () => {
    const gw = t.gw;
    const server = await startAdminServer({
      port: 0,
      prometheus: gw.telemetry.prometheus,
      admin: { tokens: TOKENS, holder: gw.holder, ledger: gw.ledger, mode: 'kubernetes', upstreams: () => ({ generation: null, upstreams: [] }) },
    });
    try {
      const h = { authorization: `Bearer ${WRITE}`, 'content-type': 'application/json' };
      expect(await (await fetch(`${server!.url}/admin/v1/session`, { headers: h })).json()).toEqual({ name: 'ops', role: 'write', mode: 'kubernetes', writable: false });
      expect((await fetch(`${server!.url}/admin/v1/keys`, { headers: h })).status).toBe(200);
      for (const [method, path, body] of [['POST', '/admin/v1/keys', { organization: 'acme', project: 'web' }], ['POST', '/admin/v1/keys/acme/revoke', undefined], ['PATCH', '/admin/v1/organizations/acme', { models: [] }]] as const) {
        const res = await fetch(`${server!.url}${path}`, { method, headers: h, body: body && JSON.stringify(body) });
        expect(res.status).toBe(405);
        expect(((await res.json()) as Json).error).toMatchObject({ code: 'read_only', message: expect.stringContaining('kubectl') });
      }
    } finally {
      await server?.close();
    }
  });
});

describe('console files on the admin port', () => {
  it('serves index.html and hashed assets with the strict CSP, and nothing outside its directory', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tg-admin-console-'));
    mkdirSync(join(dir, 'assets'));
    writeFileSync(join(dir, 'index.html'), '<!doctype html><script src="/console/app-1234.js"></script>');
    writeFileSync(join(dir, 'app-1234.js'), 'console.log(1)');
    writeFileSync(join(dir, 'assets', 'a.css'), 'body{}');
    const outside = `${dir}-secret.txt`;
    writeFileSync(outside, 'secret');
    const telemetry = await createTelemetry({ env: {} });
    const server = await startAdminServer({ port: 0, prometheus: telemetry.prometheus, consoleDir: dir, openapi: () => ({ openapi: '3.1.0', paths: {} }) });
    try {
      const index = await fetch(`${server!.url}/`);
      expect(index.status).toBe(200);
      expect(index.headers.get('content-type')).toContain('text/html');
      expect(index.headers.get('content-security-policy')).toBe("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'");
      expect(index.headers.get('x-content-type-options')).toBe('nosniff');
      expect(index.headers.get('referrer-policy')).toBe('no-referrer');
      expect(await index.text()).toContain('app-1234.js');
      const js = await fetch(`${server!.url}/console/app-1234.js`);
      expect(js.headers.get('content-type')).toContain('text/javascript');
      expect(js.headers.get('cache-control')).toContain('immutable');
      expect(await js.text()).toBe('console.log(1)');
      expect((await fetch(`${server!.url}/console/assets/a.css`)).headers.get('content-type')).toContain('text/css');
      expect((await fetch(`${server!.url}/console/missing.js`)).status).toBe(404);
      for (const evil of ['/console/..%2f' + encodeURIComponent(outside.split('/').pop()!), '/console/%2e%2e/%2e%2e/etc/passwd']) {
        const res = await fetch(`${server!.url}${evil}`);
        expect(res.status).toBe(404);
        expect(await res.text()).not.toContain('secret');
      }
      // The OpenAPI hook: served as given, without a token.
      const doc = await fetch(`${server!.url}/openapi.json`);
      expect(doc.status).toBe(200);
      expect(await doc.json()).toEqual({ openapi: '3.1.0', paths: {} });
      expect(server!.listRoutes()).toEqual(expect.arrayContaining([{ method: 'GET', path: '/openapi.json' }, { method: 'GET', path: '/' }, { method: 'GET', path: '/console/*' }]));
      // No admin API configured on this server: its paths are plain 404s in the admin error shape.
      expect((await fetch(`${server!.url}/admin/v1/session`)).status).toBe(404);
    } finally {
      await server?.close();
      await telemetry.shutdown();
      rmSync(dir, { recursive: true, force: true });
      rmSync(outside, { force: true });
    }
  });
});
