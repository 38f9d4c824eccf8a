// The console in a real browser: Debian's chromium driven by playwright-core against a real gateway (admin port on,
// admin tokens set, the fake upstream). Signs in, creates a key and reads its secret off the page, calls with it
// through the official openai SDK, finds the request and its exact cost in the console, the spend in the chart's
// data, revokes the key and sees the SDK refused; a read token sees no write control. No console error, no CSP
// violation. Screenshots of every page go to test-artifacts/console/ (look at them). Chromium that cannot launch
// fails the test: it is never skipped.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import OpenAI from 'openai';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAdminServer } from '../../gateway/admin/server.ts';
import { parseAdminTokens } from '../../gateway/admin/tokens.ts';
import { add, parseDecimal, toPlainString } from '../../gateway/billing/decimal.ts';
import { buildConsole } from '../../scripts/build-console.ts';
import type { TestGateway } from '../support/gateway.ts';
import { startTestGateway } from '../support/gateway.ts';

const WRITE_TOKEN = 'tga_console_write_0123456789abcdef0123456789abcdef';
const READ_TOKEN = 'tga_console_read_fedcba9876543210fedcba9876543210';
const ARTIFACTS = resolve(import.meta.dirname, '..', '..', 'test-artifacts', 'console');
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

let t: TestGateway;
let admin: string;
let browser: Browser;
let consoleDir: string;
let adminTokens: ReturnType<typeof parseAdminTokens>;
const problems: string[] = [];

async function newPage(scheme: 'light' | 'dark' = 'light', origin?: string): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, colorScheme: scheme });
  // The copy button writes the clipboard; the test reads it back.
  if (origin) await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin });
  const page = await context.newPage();
  // Every error or warning the page logs (a CSP violation is one) and every uncaught exception fails the run.
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') problems.push(`${m.type()}: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  page.on('requestfailed', (r) => problems.push(`requestfailed: ${r.url()} ${r.failure()?.errorText ?? ''}`));
  // The answer behind a "Failed to load resource" line, so a failure names its URL and the API's message.
  page.on('response', async (r) => {
    if (r.status() >= 400) problems.push(`http ${r.status()} ${r.request().method()} ${new URL(r.url()).pathname}${new URL(r.url()).search}: ${(await r.text().catch(() => '')).slice(0, 300)}`);
  });
  return { context, page };
}

async function signIn(page: Page, token: string): Promise<void> {
  await page.goto(`${admin}/`);
  await page.fill('input[name=token]', token);
  await page.click('form[aria-label="Sign in"] button[type=submit]');
  await page.waitForSelector('nav.top');
}

/** Navigates by the console's own links (the token lives in memory: a reload would sign out). */
async function open(page: Page, label: string): Promise<void> {
  await page.click(`nav.top a:text-is("${label}")`);
  await page.waitForSelector(`nav.top a.active:text-is("${label}")`);
  // (A locator, not waitForFunction: the page's CSP forbids the eval that a function string needs.)
  await expect.poll(() => page.locator('text=Loading…').count()).toBe(0);
}

async function shot(page: Page, name: string): Promise<void> {
  // uPlot draws on a resize frame; let it settle before the picture.
  await page.waitForTimeout(150);
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
}

async function ledgerRow(requestId: string): Promise<{ cost_points: string; model: string }> {
  for (let i = 0; i < 100; i++) {
    const { rows } = await t.gw.store.query<{ cost_points: string; model: string }>('SELECT cost_points::text, client_model AS model FROM usage_events WHERE request_id = $1', [requestId]);
    if (rows[0]) return rows[0];
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`no ledger row for ${requestId}`);
}

beforeAll(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  consoleDir = mkdtempSync(join(tmpdir(), 'tg-console-dist-'));
  await buildConsole({ outDir: consoleDir });
  // The same text TOLLGATE_ADMIN_TOKENS holds, parsed as the CLI parses it.
  adminTokens = parseAdminTokens(`ops:write:${WRITE_TOKEN},viewer:read:${READ_TOKEN}`, 'TOLLGATE_ADMIN_TOKENS');
  t = await startTestGateway({ gateway: { adminPort: 0, adminHost: '127.0.0.1', adminConsoleDir: consoleDir, adminTokens } });
  admin = t.gw.adminUrl!;
  browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
}, 90_000);

afterAll(async () => {
  await browser?.close();
  await t?.close();
  if (consoleDir) rmSync(consoleDir, { recursive: true, force: true });
});

describe('console', () => {
  it('serves the page under a strict CSP with its hashed assets', async () => {
    const res = await fetch(`${admin}/`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(res.headers.get('content-security-policy')).toBe(CSP);
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('referrer-policy')).toBe('no-referrer');
    const html = await res.text();
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/); // no inline script
    expect(html).not.toMatch(/<style|style=/); // no inline style
    const script = /src="(\/console\/[^"]+\.js)"/.exec(html)![1];
    const js = await fetch(`${admin}${script}`);
    expect(js.status).toBe(200);
    expect(js.headers.get('content-type')).toMatch(/javascript/);
  });

  it('signs in, creates a key, bills its call exactly, charts it, revokes it', { timeout: 120_000 }, async () => {
    const { context, page } = await newPage('light', admin);
    try {
      // A wrong token is refused on the page.
      await page.goto(`${admin}/`);
      await shot(page, '01-sign-in');
      await page.fill('input[name=token]', 'tga_wrong');
      await page.click('form[aria-label="Sign in"] button[type=submit]');
      await expect.poll(() => page.textContent('[role=alert]')).toContain('not valid');
      // That refusal is the one error the page may log.
      await expect.poll(() => problems.filter((p) => p.includes('401')).length).toBe(2);
      expect(problems.every((p) => p.includes('401') && !p.includes('tga_wrong'))).toBe(true);
      problems.length = 0;

      await signIn(page, WRITE_TOKEN);
      expect(await page.textContent('[data-testid=who]')).toContain('read-write');
      // The token is nowhere but in memory: not in the URL, storage or a cookie.
      expect(page.url()).not.toContain(WRITE_TOKEN);
      expect(await page.evaluate<string>('JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage }) + document.cookie')).not.toContain(WRITE_TOKEN);
      expect(await context.cookies()).toEqual([]);

      // Create a key on the keys page; the secret is on the page once.
      await open(page, 'Keys');
      await page.selectOption('form[aria-label="Create a key"] select[name=organization]', 'acme');
      await page.fill('form[aria-label="Create a key"] input[name=project]', 'web');
      await page.fill('form[aria-label="Create a key"] input[name=name]', 'console-e2e');
      await page.click('[data-action=create-key]');
      const secret = (await page.locator('[data-testid=new-secret]').textContent())!.trim();
      expect(secret).toMatch(/^sk_live_/);
      await page.click('[data-testid=new-key] button:text-is("Copy")');
      await page.waitForSelector('[data-testid=new-key] :text("Copied.")');
      expect(await page.evaluate<string>('navigator.clipboard.readText()')).toBe(secret);
      await shot(page, '03-keys-created');

      // The key works with the official SDK against the API port.
      const client = new OpenAI({ baseURL: `${t.url}/api/v1`, apiKey: secret, maxRetries: 0 });
      const { data, response } = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hello from the console test' }] }).withResponse();
      expect(data.choices[0].message.content).toBeTruthy();
      const requestId = response.headers.get('x-tollgate-request-id')!;
      // Other traffic on other models (the chart stacks them; the new key's model keeps only its own request).
      const acme = new OpenAI({ baseURL: `${t.url}/api/v1`, apiKey: t.keys.acme, maxRetries: 0 });
      for (const model of ['openai/tiered', 'openai/tiered', 'openai/legacy']) await acme.chat.completions.create({ model, messages: [{ role: 'user', content: `Some traffic on ${model}` }] });
      // Every row in the database before any page or query below reads it (the ledger flushes in the background).
      await expect.poll(async () => (await t.gw.store.query<{ n: string }>('SELECT count(*)::text AS n FROM usage_events')).rows[0].n).toBe('4');
      const row = await ledgerRow(requestId);
      expect(response.headers.get('x-tollgate-cost-points')).toBe(row.cost_points);

      // Recent requests: the request with the ledger's cost string, character for character.
      await open(page, 'Requests');
      const line = page.locator(`tr[data-request-id="${requestId}"]`);
      await expect.poll(async () => (await line.count()) || (await page.click('[data-action=refresh]'), 0), { timeout: 10_000 }).toBe(1);
      expect((await line.locator('td[data-cost]').getAttribute('data-cost'))!).toBe(row.cost_points);
      expect((await line.locator('td[data-cost]').textContent())!.trim()).toBe(row.cost_points);
      await shot(page, '04-requests');
      // Filtered by model: only that model's rows.
      await page.fill('form[aria-label="Filter requests"] input[name=model]', 'openai/tiered');
      await page.click('form[aria-label="Filter requests"] button[type=submit]');
      await expect.poll(() => page.locator('[data-testid=requests-table] tbody tr').count()).toBe(2);
      expect(await page.locator(`tr[data-request-id="${requestId}"]`).count()).toBe(0);

      // The overview chart's data: the model's spend in this range is the ledger's, as an exact string.
      await open(page, 'Overview');
      const table = page.locator('[data-testid=chart-data]');
      await table.waitFor({ state: 'attached' });
      const series = JSON.parse((await table.getAttribute('data-series'))!) as { start: string; groups: { group: string; requests: number; cost_points: string }[] }[];
      const groups = series.flatMap((b) => b.groups);
      const mine = groups.filter((g) => g.group === row.model);
      expect(mine).toHaveLength(1);
      expect(mine[0].requests).toBe(1);
      expect(mine[0].cost_points).toBe(row.cost_points);
      expect(groups.reduce((n, g) => n + g.requests, 0)).toBe(4);
      // The cell the table prints for it is the same string.
      expect((await table.locator('tr', { hasText: row.model }).locator('td[data-cost]').textContent())!.trim()).toBe(row.cost_points);
      // And the total the page prints is what the admin API answers, and the ledger's sum, as exact strings.
      const query = new URLSearchParams({ group_by: 'model', bucket: 'hour', from: series[0].start, to: new Date(Date.now() + 3_600_000).toISOString() });
      const usage = (await (await fetch(`${admin}/admin/v1/usage?${query}`, { headers: { authorization: `Bearer ${WRITE_TOKEN}` } })).json()) as { total: { cost_points: string } };
      const { rows: ledgerSum } = await t.gw.store.query<{ total: string }>('SELECT sum(cost_points)::text AS total FROM usage_events');
      expect(usage.total.cost_points).toBe(ledgerSum[0].total);
      expect(await table.getAttribute('data-total')).toBe(usage.total.cost_points);
      expect((await page.locator('[data-testid=total-spend]').getAttribute('data-value'))!).toBe(usage.total.cost_points);
      // The cursor on the latest bucket: the legend prints each model's exact spend there.
      const plot = (await page.locator('.u-over').boundingBox())!;
      await page.mouse.move(plot.x + plot.width - 12, plot.y + plot.height - 8);
      await expect.poll(() => page.locator('.u-legend').textContent()).toContain(row.cost_points);
      await shot(page, '02-overview');

      // The project page: usage, limits and budget left, its keys. A budget set through the admin API first.
      const patched = await fetch(`${admin}/admin/v1/projects/acme/web`, {
        method: 'PATCH',
        headers: { authorization: `Bearer ${WRITE_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ limits: { rpm: 600 }, budget: { day: '5', month: '100.25' } }),
      });
      expect(patched.status).toBe(200);
      await page.click('[data-testid=top-projects] a');
      await page.waitForSelector('h2:has-text("acme / web")');
      await page.waitForSelector('[data-testid=keys-table]');
      // The governor's own counters (what admission checks), which start from the ledger's spend for the period.
      expect(await page.locator('[data-testid=budget-table]').getAttribute('data-source')).toBe('governor');
      expect(await page.locator('[data-testid=limits-left]').textContent()).toContain('rpm');
      const today = page.locator('[data-testid=budget-table] tr[data-window=day]');
      await expect.poll(() => today.locator('td[data-spent]').getAttribute('data-spent')).toBe(ledgerSum[0].total);
      const spent = parseDecimal(ledgerSum[0].total);
      expect(await today.locator('td[data-left]').getAttribute('data-left')).toBe(toPlainString(add(parseDecimal('5'), { units: -spent.units, scale: spent.scale })));
      expect(await page.textContent('.panel:has-text("Limits and budget")')).toContain('600 rpm');
      await shot(page, '05-project');

      await open(page, 'Projects');
      await page.waitForSelector('[data-testid=organizations-table] tbody tr');
      expect(await page.locator('[data-testid=projects-table] tr', { hasText: 'web' }).textContent()).toContain('of 5 left');
      expect(await page.locator('[data-testid=organizations-table] tr', { hasText: 'acme' }).textContent()).toContain('0.9');
      await shot(page, '06-projects');
      await open(page, 'Models');
      await page.waitForSelector('[data-testid=models-table] tbody tr');
      await shot(page, '07-models');
      await open(page, 'Upstreams');
      await page.waitForSelector('[data-testid=upstreams-table]');
      await shot(page, '08-upstreams');

      // Paging: 25 a page, then the older ones after them, none twice.
      await Promise.all(Array.from({ length: 24 }, (_, i) => acme.chat.completions.create({ model: 'openai/legacy', messages: [{ role: 'user', content: `page filler ${i}` }] })));
      await expect.poll(async () => (await t.gw.store.query<{ n: string }>('SELECT count(*)::text AS n FROM usage_events')).rows[0].n).toBe('28');
      await open(page, 'Requests');
      await page.selectOption('form[aria-label="Filter requests"] select', '25');
      const rows = page.locator('[data-testid=requests-table] tbody tr');
      await expect.poll(() => rows.count()).toBe(25);
      await page.click('[data-action=more]');
      await expect.poll(() => rows.count()).toBe(28);
      const ids = await rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-request-id')));
      expect(new Set(ids).size).toBe(28);
      expect(await page.locator('[data-action=more]').count()).toBe(0);

      // Revoke with a confirm; the SDK is refused at once.
      await open(page, 'Keys');
      const keyRow = page.locator('tr', { hasText: 'console-e2e' });
      await keyRow.locator('[data-action=revoke]').click();
      await keyRow.locator('[data-action=confirm-revoke]').click();
      await keyRow.locator('.badge.revoked').waitFor();
      const refused = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'still there?' }] }).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(OpenAI.AuthenticationError);
      await shot(page, '09-keys-revoked');
    } finally {
      await context.close();
    }
  });

  it('shows a read token no write control, in dark mode too', { timeout: 60_000 }, async () => {
    const { context, page } = await newPage('dark');
    try {
      await signIn(page, READ_TOKEN);
      expect(await page.textContent('[data-testid=who]')).toContain('read-only');
      await open(page, 'Keys');
      await page.waitForSelector('[data-testid=keys-table]');
      expect(await page.textContent('[data-testid=read-only-note]')).toContain('read role');
      expect(await page.locator('form[aria-label="Create a key"]').count()).toBe(0);
      expect(await page.locator('[data-action=revoke]').count()).toBe(0);
      await shot(page, '10-keys-read-only-dark');
      await open(page, 'Overview');
      // Stacked by organization instead of model: every request so far is acme's.
      await page.selectOption('select[aria-label="Stack by"]', 'organization');
      const groupsNow = async () => {
        const series = JSON.parse((await page.locator('[data-testid=chart-data]').getAttribute('data-series')) ?? '[]') as { groups: { group: string }[] }[];
        return [...new Set(series.flatMap((b) => b.groups.map((g) => g.group)))];
      };
      await expect.poll(groupsNow).toEqual(['acme']);
      await shot(page, '11-overview-dark');
    } finally {
      await context.close();
    }
  });

  it('is read-only on Kubernetes, even for a write token, says to use kubectl, and signs out when the token is withdrawn', { timeout: 60_000 }, async () => {
    // An admin server in Kubernetes mode over the same gateway state (the custom resources are the write path there).
    const kubeTokens = [...adminTokens];
    const kube = await startAdminServer({
      port: 0,
      host: '127.0.0.1',
      prometheus: t.gw.telemetry.prometheus,
      admin: { tokens: kubeTokens, holder: t.gw.holder, ledger: t.gw.ledger, mode: 'kubernetes', upstreams: () => ({ generation: null, upstreams: [] }) },
      consoleDir,
    });
    const { context, page } = await newPage();
    try {
      await page.goto(`${kube!.url}/`);
      await page.fill('input[name=token]', WRITE_TOKEN);
      await page.click('form[aria-label="Sign in"] button[type=submit]');
      await page.waitForSelector('nav.top');
      expect(await page.textContent('[data-testid=who]')).toContain('kubernetes');
      await open(page, 'Keys');
      await page.waitForSelector('[data-testid=keys-table]');
      expect(await page.textContent('[data-testid=read-only-note]')).toContain('kubectl');
      expect(await page.locator('form[aria-label="Create a key"]').count()).toBe(0);
      expect(await page.locator('[data-action=revoke]').count()).toBe(0);
      await shot(page, '13-keys-kubernetes');
      // The token withdrawn on the server (this server reads its list on each call): the page signs out and says why.
      kubeTokens.splice(kubeTokens.findIndex((k) => k.name === 'ops'), 1);
      await page.click('nav.top a:text-is("Models")');
      await page.waitForSelector('form[aria-label="Sign in"]');
      expect(await page.textContent('[role=alert]')).toContain('no longer accepts');
      expect(problems.filter((p) => !p.includes('401'))).toEqual([]);
      problems.length = 0;
    } finally {
      await context.close();
      await kube?.close();
    }
  });

  it('tells how to turn the admin API on when no token is configured', { timeout: 120_000 }, async () => {
    const bare = await startTestGateway({ gateway: { adminPort: 0, adminHost: '127.0.0.1', adminConsoleDir: consoleDir } });
    const { context, page } = await newPage();
    try {
      await page.goto(`${bare.gw.adminUrl}/`);
      await page.fill('input[name=token]', 'tga_anything_at_all_here');
      await page.click('form[aria-label="Sign in"] button[type=submit]');
      expect(await page.locator('[data-testid=admin-disabled]').textContent()).toContain('TOLLGATE_ADMIN_TOKENS');
      await shot(page, '12-admin-disabled');
      // The 503 it got is the expected one; nothing else may be logged.
      expect(problems.filter((p) => !p.includes('503'))).toEqual([]);
      problems.length = 0;
    } finally {
      await context.close();
      await bare.close();
    }
  });

  it('logged no error, warning or CSP violation', () => {
    expect(problems).toEqual([]);
  });
});
