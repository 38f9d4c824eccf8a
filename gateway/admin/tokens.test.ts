import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadAdminTokens, matchAdminToken, parseAdminTokens } from './tokens.ts';

describe('admin tokens', () => {
  it('parses name:role:token entries separated by commas or lines, tokens may hold colons', () => {
    const t = parseAdminTokens('ops:write:aaaaaaaaaaaaaaaa:b, grafana:read:cccccccccccccccc\n# comment\n\n', 'env');
    expect(t.map((x) => [x.name, x.role])).toEqual([['ops', 'write'], ['grafana', 'read']]);
    expect(matchAdminToken(t, 'aaaaaaaaaaaaaaaa:b')?.name).toBe('ops');
    expect(matchAdminToken(t, 'cccccccccccccccc')?.name).toBe('grafana');
    expect(matchAdminToken(t, 'cccccccccccccccd')).toBeUndefined();
    expect(matchAdminToken(t, '')).toBeUndefined();
  });

  it('refuses bad entries without echoing the token', () => {
    for (const [text, msg] of [
      ['ops', /not name:role:token/],
      ['ops:admin:aaaaaaaaaaaaaaaa', /role must be read or write/],
      ['ops:read:short', /shorter than 16/],
      ['ops:read:sk_live_aaaaaaaaaaaaaaaa', /looks like an API key/],
      ['ops:read:aaaaaaaaaaaaaaaa,ops:write:bbbbbbbbbbbbbbbb', /appears twice/],
      ['b@d:read:aaaaaaaaaaaaaaaa', /name must be/],
    ] as const) {
      let err: Error | undefined;
      try {
        parseAdminTokens(text, 'TOLLGATE_ADMIN_TOKENS');
      } catch (e) {
        err = e as Error;
      }
      expect(err?.message).toMatch(msg);
      expect(err?.message).not.toContain('aaaaaaaaaaaaaaaa');
    }
  });

  it('reads TOLLGATE_ADMIN_TOKENS_FILE beside the variable', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tg-admin-tokens-'));
    try {
      const file = join(dir, 'tokens');
      writeFileSync(file, 'grafana:read:cccccccccccccccc\n');
      const t = loadAdminTokens({ TOLLGATE_ADMIN_TOKENS: 'ops:write:aaaaaaaaaaaaaaaa', TOLLGATE_ADMIN_TOKENS_FILE: file });
      expect(t.map((x) => x.name)).toEqual(['ops', 'grafana']);
      expect(loadAdminTokens({})).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
