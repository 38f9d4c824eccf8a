// Every curl in the README's example block, copy-pasted as a reader would, against `npm run demo` (in its own
// process): each must answer 2xx with a body. Only the port differs (tests never bind fixed ports).
import { execFile, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { ChildProcess } from 'node:child_process';
import { freePort } from '../support/child-gateway.ts';

vi.setConfig({ testTimeout: 60_000, hookTimeout: 180_000 });
const ROOT = new URL('../../', import.meta.url).pathname;
const exec = promisify(execFile);

/** The commands of the README's first ```sh block holding curls, continuation lines joined. */
function readmeCurls(readme: string): string[] {
  const block = /```sh\n((?:(?!```)[\s\S])*?curl -s localhost:8080[\s\S]*?)```/.exec(readme);
  if (!block) throw new Error('no curl block in README.md');
  return block[1]
    .replace(/\\\n\s*/g, '')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.startsWith('curl '));
}

const curls = readmeCurls(readFileSync(join(ROOT, 'README.md'), 'utf8'));
let demo: ChildProcess;
let cwd: string;
let port: number;
let key: string;
let output = '';

beforeAll(async () => {
  cwd = mkdtempSync(join(tmpdir(), 'tg-readme-'));
  // The reader runs the demo from the clone: its data (and the edit example's images) land in ./.tollgate/demo.
  const dataDir = join(cwd, '.tollgate', 'demo');
  mkdirSync(dataDir, { recursive: true });
  port = await freePort();
  demo = spawn(process.execPath, [join(ROOT, 'examples/demo.ts')], { cwd: ROOT, env: { ...process.env, PORT: String(port), TOLLGATE_DATA_DIR: dataDir, DATABASE_URL: '' }, stdio: ['ignore', 'pipe', 'pipe'] });
  demo.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  demo.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  await new Promise<void>((resolve, reject) => {
    demo.stdout!.on('data', () => (output.includes('Ctrl-C stops both') ? resolve() : undefined));
    demo.once('exit', (code) => reject(new Error(`demo exited ${code}: ${output}`)));
  });
  key = /export TOLLGATE_KEY=(\S+)/.exec(output)![1];
});

afterAll(async () => {
  if (demo && demo.exitCode === null) {
    const exited = new Promise((r) => demo.once('exit', r));
    demo.kill('SIGTERM');
    await exited;
  }
  rmSync(cwd, { recursive: true, force: true });
});

describe('the README curls against npm run demo', () => {
  it('finds the whole block', () => {
    expect(curls.length).toBeGreaterThanOrEqual(11);
    for (const c of curls) expect(c).toContain('localhost:8080');
  });

  it.each(curls.map((c) => [c.slice(0, 110), c]))('%s', async (_label, command) => {
    // --fail-with-body: a 4xx/5xx makes curl exit non-zero, with the body in the error.
    const cmd = command.replace(/^curl /, 'curl --fail-with-body --max-time 30 ').replaceAll('localhost:8080', `127.0.0.1:${port}`);
    const { stdout } = await exec('bash', ['-c', cmd], { cwd, env: { ...process.env, TOLLGATE_KEY: key } });
    expect(stdout.length).toBeGreaterThan(0);
    expect(stdout).not.toMatch(/"error"\s*:\s*\{/);
  });
});
