// bin/tollgate.js (what `npm start` runs) turns on Node's compile cache before the first .ts file loads: a second
// run finds the stripped, compiled sources there, and the directory is handed to child processes.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const dir = mkdtempSync(join(tmpdir(), 'tollgate-cc-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function run(args: string[]) {
  const env: NodeJS.ProcessEnv = { ...process.env, TMPDIR: dir, NODE_DEBUG_NATIVE: 'COMPILE_CACHE' };
  delete env.NODE_COMPILE_CACHE;
  delete env.NODE_DISABLE_COMPILE_CACHE;
  return spawnSync(process.execPath, args, { env, encoding: 'utf8', timeout: 60_000 });
}

describe('bin/tollgate.js', () => {
  it('caches the compiled sources under the temp dir and reads them back on the next run', () => {
    const first = run(['bin/tollgate.js', '--help']);
    expect(first.status).toBe(0);
    expect(first.stdout).toContain('usage:');
    const cache = join(dir, 'node-compile-cache');
    expect(readdirSync(cache).length).toBeGreaterThan(0);
    const second = run(['bin/tollgate.js', '--help']);
    expect(second.status).toBe(0);
    // Node's compile-cache debug log: the type-stripped cli.ts came from the cache (no stripping on this run).
    expect(second.stderr).toMatch(/retrieving transpile cache for StrippedTypeScript \S*gateway\/cli\.ts\.\.\.success/);
  });

  it('exports the cache directory to child processes', () => {
    // Loading the entry runs the CLI with no command (usage), then the variable is read in the same process.
    const probe = run(['--input-type=module', '-e', "await import(process.cwd() + '/bin/tollgate.js'); console.log(JSON.stringify(process.env.NODE_COMPILE_CACHE ?? null));"]);
    expect(probe.stdout.trim().split('\n').at(-1)).toBe(JSON.stringify(join(dir, 'node-compile-cache')));
  });
});
