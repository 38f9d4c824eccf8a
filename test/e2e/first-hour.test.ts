// The first hour of a new user, through the real command line: a busy port, a config of their own, flag mistakes,
// missing provider credentials. Each runs `tollgate` (and `npm run demo`) as child processes.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import type { Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { freePort } from '../support/child-gateway.ts';

// Child processes start slowly on a loaded machine (each loads its TypeScript sources, `start` opens PGlite).
vi.setConfig({ testTimeout: 180_000 });

const ROOT = new URL('../../', import.meta.url).pathname;
const CLI = join(ROOT, 'gateway/cli.ts');
const EXAMPLE = join(ROOT, 'examples/tollgate.yaml');
const NO_CREDENTIALS = { OPENAI_API_KEY: '', ANTHROPIC_API_KEY: '', GEMINI_API_KEY: '', TOLLGATE_CONFIG: '', DATABASE_URL: '', TOLLGATE_ADMIN_PORT: 'off', LOG_LEVEL: 'info' };

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(args: string[], opts: { cwd: string; env?: Record<string, string> }): Promise<Run> {
  const proc = spawn(process.execPath, args, { cwd: opts.cwd, env: { ...process.env, ...NO_CREDENTIALS, ...opts.env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  proc.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  proc.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) => proc.once('close', (code) => resolve({ code, stdout, stderr })));
}

const sha = (p: string) => createHash('sha256').update(readFileSync(p)).digest('hex');

let dir: string;
let busy: Server;
let busyPort: number;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tg-first-hour-'));
  busy = createServer();
  busy.listen(0, '127.0.0.1');
  await once(busy, 'listening');
  busyPort = (busy.address() as { port: number }).port;
});
afterAll(async () => {
  busy?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('a busy port', () => {
  it('`tollgate start` prints one EADDRINUSE line naming the port and how to choose another, and exits 1', async () => {
    const r = await run([CLI, 'start', '--config', EXAMPLE, '--port', String(busyPort)], { cwd: dir, env: { TOLLGATE_DATA_DIR: join(dir, 'data-start') } });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`tollgate: EADDRINUSE: port ${busyPort} on 127.0.0.1 is already in use; choose another with --port N (or PORT=N).`);
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });

  it('`npm run demo` does the same instead of a stack', async () => {
    const r = await run([join(ROOT, 'examples/demo.ts')], { cwd: ROOT, env: { PORT: String(busyPort), TOLLGATE_DATA_DIR: join(dir, 'data-demo') } });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`EADDRINUSE: port ${busyPort}`);
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });
});

describe('keys and the user config', () => {
  it('the first command without --config copies the example to ./tollgate.yaml and edits only that', async () => {
    const before = sha(EXAMPLE);
    const r = await run([CLI, 'keys', 'create', '--org', 'acme', '--project', 'web', '--expires', '2099-01-01'], { cwd: dir });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^sk_live_[A-Za-z0-9]+\n$/);
    expect(r.stderr).toContain(`created ${join(dir, 'tollgate.yaml')} from examples/tollgate.yaml`);
    expect(sha(EXAMPLE)).toBe(before);
    expect(readFileSync(join(dir, 'tollgate.yaml'), 'utf8')).toContain('expiresAt: 2099-01-01T00:00:00.000Z');
    const id = /created key (key-[0-9a-f]+)/.exec(r.stderr)![1];
    const list = await run([CLI, 'keys', 'list'], { cwd: dir });
    expect(list.stdout.split('\n').find((l) => l.startsWith(`${id}\t`))).toContain('\tacme\tweb\tactive');
  });

  it.each([
    [['--expires', 'tomorrow'], '--expires "tomorrow" is not an RFC 3339 timestamp or date'],
    [['--expires', '2020-01-01T00:00:00Z'], '--expires 2020-01-01T00:00:00Z is in the past'],
    [['--frobnicate'], "Unknown option '--frobnicate'"],
  ])('flag error %j: exit 2 naming the flag, the file untouched', async (flags, message) => {
    const before = sha(join(dir, 'tollgate.yaml'));
    const r = await run([CLI, 'keys', 'create', '--org', 'acme', '--project', 'web', ...flags], { cwd: dir });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(message);
    expect(r.stderr).toContain('usage:');
    expect(sha(join(dir, 'tollgate.yaml'))).toBe(before);
  });
});

describe('start without provider credentials', () => {
  it('prints which variables to set and that the demo runs offline; the 502 names the variable', async () => {
    const key = (await run([CLI, 'keys', 'create', '--org', 'acme', '--project', 'web'], { cwd: dir })).stdout.trim();
    const port = await freePort();
    const proc = spawn(process.execPath, [CLI, 'start', '--port', String(port)], { cwd: dir, env: { ...process.env, ...NO_CREDENTIALS, TOLLGATE_DATA_DIR: join(dir, 'data-run'), OPENAI_API_KEY: '' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    proc.stdout.on('data', (d: Buffer) => (out += d.toString()));
    proc.stderr.on('data', (d: Buffer) => (out += d.toString()));
    try {
      await new Promise<void>((resolve, reject) => {
        const check = () => (out.includes('npm run demo') && out.includes('tollgate listening') ? resolve() : undefined);
        proc.stdout.on('data', check);
        proc.stderr.on('data', check);
        proc.once('exit', (code) => reject(new Error(`exited ${code}: ${out}`)));
      });
      expect(out).toMatch(/OPENAI_API_KEY\s+providers openai, openai-images/);
      expect(out).toMatch(/ANTHROPIC_API_KEY\s+provider anthropic/);
      expect(out).toMatch(/GEMINI_API_KEY\s+provider google/);
      expect(out, out).toContain(`"listening":"127.0.0.1:${port}"`);
      const res = await fetch(`http://127.0.0.1:${port}/api/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }),
      });
      expect(res.status).toBe(502);
      const body = (await res.json()) as { error: { message: string } };
      expect(body.error.message).toContain('environment variable OPENAI_API_KEY');
    } finally {
      const exited = once(proc, 'exit');
      proc.kill('SIGTERM');
      const [code] = await exited;
      expect(code).toBe(0);
    }
  });
});

describe('logs', () => {
  it('are human-readable on a terminal (pino-pretty), JSON lines otherwise', async () => {
    const port = await freePort();
    // `script` gives the gateway a pseudo-terminal as stdout; `timeout` bounds it whatever happens to the test.
    const inner = `timeout -s TERM 170 ${process.execPath} ${CLI} start --config ${EXAMPLE} --port ${port}`;
    const proc = spawn('script', ['-qefc', inner, '/dev/null'], { cwd: dir, env: { ...process.env, ...NO_CREDENTIALS, TOLLGATE_DATA_DIR: join(dir, 'data-tty') }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    proc.stdout.on('data', (d: Buffer) => (out += d.toString()));
    try {
      await new Promise<void>((resolve, reject) => {
        proc.stdout.on('data', () => (out.includes('tollgate listening') ? resolve() : undefined));
        proc.once('exit', (code) => reject(new Error(`exited ${code}: ${out}`)));
      });
      const line = out.split('\n').find((l) => l.includes('tollgate listening'))!;
      expect(line).toMatch(/INFO/);
      expect(line).not.toMatch(/^\{"level"/);
    } finally {
      const exited = once(proc, 'exit');
      proc.kill('SIGTERM');
      await exited;
    }
  });
});
