// Every curl in docs/admin-api.md's examples, run with the real curl binary against a real gateway's admin port, as
// a reader would paste them (the key id placeholder replaced by the key the second command creates).
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAdminTokens } from '../../gateway/admin/tokens.ts';
import type { TestGateway } from '../support/gateway.ts';
import { startTestGateway } from '../support/gateway.ts';

// Async: the gateway answering curl runs in this process.
const run = promisify(execFile);
const TOKEN = 'tga_docs_0123456789abcdef';

function docCommands(): string[] {
  const doc = readFileSync(new URL('../../docs/admin-api.md', import.meta.url), 'utf8');
  const block = /## Examples\n\n```sh\n([\s\S]*?)```/.exec(doc);
  if (!block) throw new Error('no example block in docs/admin-api.md');
  return block[1].split('\n').filter((l) => l.startsWith('curl '));
}

describe('docs/admin-api.md examples', () => {
  let t: TestGateway;
  beforeAll(async () => {
    t = await startTestGateway({ backend: 'pglite', gateway: { adminPort: 0, adminTokens: parseAdminTokens(`ops:write:${TOKEN}`, 'test') } });
  });
  afterAll(async () => t?.close());

  it('every curl answers JSON without an error', async () => {
    const commands = docCommands();
    expect(commands.length).toBeGreaterThanOrEqual(7);
    let keyId = '';
    for (const raw of commands) {
      const cmd = keyId ? raw.replaceAll('key-1a2b3c4d', keyId) : raw;
      const { stdout: out } = await run('bash', ['-c', `A=${t.gw.adminUrl} T="Authorization: Bearer $ADMIN_TOKEN"\n${cmd} --max-time 20 -w '\\n%{http_code}'`], { env: { ...process.env, ADMIN_TOKEN: TOKEN }, encoding: 'utf8', timeout: 30_000 });
      const [body, code] = [out.slice(0, out.lastIndexOf('\n')), out.slice(out.lastIndexOf('\n') + 1)];
      expect(code, `${cmd}: ${body}`).toMatch(/^20[01]$/);
      const json = JSON.parse(body) as { error?: unknown; key?: { id: string } };
      expect(json.error).toBeUndefined();
      if (json.key) keyId = json.key.id;
    }
    expect(keyId).not.toBe('');
  });
});
