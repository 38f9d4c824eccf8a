// The Dockerfile, checked statically (no Docker engine runs here): stages, non-root user, health check, what it
// copies, and that the runtime sources need nothing `npm ci --omit=dev` leaves out.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';

interface Instruction { op: string; args: string }

function instructions(text: string): Instruction[] {
  return text
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'))
    .map((l) => {
      const [op, ...rest] = l.split(/\s+/);
      return { op: op.toUpperCase(), args: rest.join(' ') };
    });
}

const all = instructions(readFileSync('Dockerfile', 'utf8'));
const args = Object.fromEntries(all.filter((i) => i.op === 'ARG').map((i) => i.args.split('=')));
const stages: { from: string; name: string; body: Instruction[] }[] = [];
for (const i of all) {
  if (i.op === 'FROM') {
    const [image, , name] = i.args.split(/\s+/);
    stages.push({ from: image.replace(/\$\{(\w+)\}/g, (_, k: string) => args[k]), name, body: [] });
  } else stages.at(-1)?.body.push(i);
}
const runtime = stages.at(-1)!;
const build = stages[0];

/** Docker's .dockerignore rules: later patterns win, `!` re-includes, `**` spans directories. */
function ignored(path: string): boolean {
  let out = false;
  for (const raw of readFileSync('.dockerignore', 'utf8').split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'))) {
    const negate = raw.startsWith('!');
    const pattern = (negate ? raw.slice(1) : raw).replace(/\/$/, '');
    const re = new RegExp(`^${pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*\*\/?/g, '§').replace(/\*/g, '[^/]*').replace(/§/g, '.*')}(/.*)?$`);
    if (re.test(path)) out = !negate;
  }
  return out;
}

function sourceFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? sourceFiles(p) : p.endsWith('.ts') && !p.endsWith('.test.ts') ? [p] : [];
  });
}

describe('Dockerfile', () => {
  it('is multi-stage on node:24-slim: a build stage with npm ci --omit=dev, a runtime stage copying from it', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    for (const s of stages) expect(s.from).toBe('node:24-slim');
    expect(build.body.some((i) => i.op === 'RUN' && /\bnpm ci\b.*--omit=dev/.test(i.args))).toBe(true);
    expect(runtime.body.some((i) => i.op === 'COPY' && i.args.includes(`--from=${build.name}`))).toBe(true);
    expect(runtime.body.some((i) => i.op === 'RUN' && /npm (ci|install)/.test(i.args))).toBe(false);
  });

  it('builds the console in a stage of its own and ships only its built files', () => {
    const stage = stages.find((s) => s.name === 'console')!;
    expect(stage.body.some((i) => i.op === 'RUN' && /^node scripts\/build-console\.ts$/.test(i.args))).toBe(true);
    expect(runtime.body.some((i) => i.op === 'COPY' && i.args === '--from=console /app/console/dist ./console/dist')).toBe(true);
    // The gateway finds it where it looks by default (the repository's console/dist).
    expect(readFileSync('gateway/gateway.ts', 'utf8')).toContain("new URL('../console/dist/', import.meta.url)");
  });

  it('runs as a numeric non-root user, the same the chart sets', () => {
    const user = runtime.body.filter((i) => i.op === 'USER').at(-1)!.args;
    expect(user).toMatch(/^\d+(:\d+)?$/);
    expect(Number(user.split(':')[0])).toBeGreaterThan(0);
    expect(readFileSync('charts/tollgate/templates/_helpers.tpl', 'utf8')).toContain(`runAsUser: ${user.split(':')[0]}`);
  });

  it('has a HEALTHCHECK on /healthz, exposes the traffic and metrics ports, keeps the journal on a volume', () => {
    const health = runtime.body.find((i) => i.op === 'HEALTHCHECK')!;
    expect(health.args).toContain('/healthz');
    expect(runtime.body.find((i) => i.op === 'EXPOSE')!.args.split(/\s+/)).toEqual(['8080', '9464']);
    const dataDir = /TOLLGATE_DATA_DIR=(\S+)/.exec(runtime.body.filter((i) => i.op === 'ENV').map((i) => i.args).join(' '))![1];
    expect(runtime.body.find((i) => i.op === 'VOLUME')!.args).toContain(dataDir);
    expect(readFileSync('charts/tollgate/templates/gateway-deployment.yaml', 'utf8')).toContain(`mountPath: ${dataDir}`);
  });

  it('starts the gateway the way the chart does: node gateway/cli.ts start', () => {
    const cmd = JSON.parse(runtime.body.find((i) => i.op === 'CMD')!.args) as string[];
    expect(cmd.slice(0, 3)).toEqual(['node', 'gateway/cli.ts', 'start']);
    // A container is reached from outside: both servers listen on all addresses there (standalone: loopback).
    expect(cmd.slice(3)).toEqual(['--host', '0.0.0.0', '--admin-host', '0.0.0.0']);
    const chart = parseAllDocuments(readFileSync('charts/tollgate/templates/gateway-deployment.yaml', 'utf8').replace(/\{\{[^}]*\}\}/g, 'x'));
    expect(JSON.stringify(chart.map((d) => d.toJS()))).toContain(JSON.stringify(cmd));
  });

  it('copies only paths that exist and that .dockerignore lets through; tests, .git and node_modules stay out', () => {
    const copies = stages.flatMap((s) => s.body).filter((i) => i.op === 'COPY' && !i.args.includes('--from='));
    expect(copies.length).toBeGreaterThan(0);
    for (const c of copies) {
      for (const src of c.args.split(/\s+/).slice(0, -1)) {
        expect(existsSync(src), src).toBe(true);
        expect(ignored(src), `${src} reaches the build context`).toBe(false);
      }
    }
    for (const p of ['node_modules', '.git', 'test', '.tollgate', 'charts', 'gateway/server.test.ts', 'gateway/billing/pricing.test.ts']) expect(ignored(p), p).toBe(true);
    for (const p of ['package.json', 'package-lock.json', 'gateway/cli.ts', 'gateway/billing/pricing.ts', 'bin/tollgate.js']) expect(ignored(p), p).toBe(false);
  });

  it('the runtime sources import only Node built-ins and production dependencies (what npm ci --omit=dev installs)', () => {
    const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { dependencies: Record<string, string> };
    const allowed = new Set([...Object.keys(pkg.dependencies), ...builtinModules]);
    const files = [...sourceFiles('gateway'), ...sourceFiles('operator'), ...sourceFiles('kube')];
    expect(files.length).toBeGreaterThan(20);
    const missing: string[] = [];
    for (const f of files) {
      for (const m of readFileSync(f, 'utf8').matchAll(/^\s*(?:import|export)\s(?!type\b)[^'"]*?from\s+['"]([^'"./][^'"]*)['"]|import\(\s*['"]([^'"./][^'"]*)['"]\s*\)/gm)) {
        const spec = (m[1] ?? m[2]).replace(/^node:/, '');
        const name = spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0];
        if (!allowed.has(name) && !allowed.has(spec)) missing.push(`${f}: ${spec}`);
      }
    }
    expect(missing).toEqual([]);
  });
});
