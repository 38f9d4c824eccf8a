import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readSnapshotFile, watchSnapshotFile } from './file-source.ts';
import { SnapshotHolder } from './holder.ts';
import { configurationReference, snapshotJsonSchema } from './json-schema.ts';
import { compileSnapshot, orgAllows, snapshotVersion } from './runtime.ts';
import { parseSnapshot } from './validate.ts';

const base = () => ({
  providers: [{ id: 'p', baseUrl: 'http://127.0.0.1:1/v1', apiKey: { fromEnv: 'TG_TEST_KEY' } }],
  pricingGroups: [{ id: 'g', mode: 'flat_tokens', prices: { input: '1', output: '2' } }],
  models: [{ id: 'vendor/m-1', alias: 'm1', pricingGroup: 'g', protocols: { openai: [{ provider: 'p', model: 'up-1' }] } }],
  organizations: [{ id: 'o', models: ['vendor/*'] }],
  apiKeys: [],
});

function issues(input: unknown): string[] {
  try {
    parseSnapshot(input, 'test');
  } catch (err) {
    return (err as { issues: string[] }).issues;
  }
  return [];
}

describe('snapshot schema', () => {
  it('accepts the shipped example', () => {
    const snap = readSnapshotFile('examples/tollgate.yaml');
    expect(snap.models.length).toBeGreaterThanOrEqual(4);
    expect(new Set(snap.pricingGroups.map((g) => g.mode))).toEqual(new Set(['flat_tokens', 'input_tokens_tiers']));
  });

  it('names the exact path of a dangling reference', () => {
    const s = base();
    s.models[0].pricingGroup = 'nope';
    expect(issues(s)).toEqual(['models[0].pricingGroup: unknown pricing group "nope"']);
  });

  it('names the exact path of a bad nested field', () => {
    const s = base() as ReturnType<typeof base> & { providers: { timeouts?: unknown }[] };
    s.providers[0].timeouts = { connectMs: -5 };
    expect(issues(s)[0]).toMatch(/^providers\[0\]\.timeouts\.connectMs: /);
  });

  it('rejects tiers that are not strictly ascending or not closed by an unbounded tier', () => {
    const s = base();
    s.pricingGroups = [
      { id: 'g', mode: 'input_tokens_tiers', tiers: [{ upTo: 10, input: '1', output: '1' }, { upTo: 5, input: '1', output: '1' }, { upTo: null, input: '1', output: '1' }] } as never,
    ];
    expect(issues(s)).toContain('pricingGroups[0].tiers[1].upTo: tiers must be strictly ascending');
    s.pricingGroups = [{ id: 'g', mode: 'input_tokens_tiers', tiers: [{ upTo: 10, input: '1', output: '1' }] } as never];
    expect(issues(s)).toContain('pricingGroups[0].tiers[0].upTo: the last tier is unbounded (null)');
  });

  it('rejects two models answering to the same name, case-insensitively', () => {
    const s = base();
    s.models.push({ id: 'M1', pricingGroup: 'g', protocols: { openai: [{ provider: 'p', model: 'x' }] } } as never);
    expect(issues(s)).toEqual(['models[1].id: "m1" already names models[0]']);
  });

  it('rejects literal floats that are negative and unknown fields', () => {
    const s = base() as Record<string, unknown>;
    s.extra = true;
    expect(issues(s)[0]).toMatch(/Unrecognized key/);
  });
});

describe('compiled snapshot', () => {
  it('resolves ids and aliases case-insensitively and credentials from the environment', () => {
    const warnings: string[] = [];
    const rt = compileSnapshot(parseSnapshot(base(), 't'), { env: {}, warn: (m) => warnings.push(m) });
    expect(rt.byName.get('m1')?.id).toBe('vendor/m-1');
    expect(rt.byName.get('vendor/m-1')?.id).toBe('vendor/m-1');
    expect(rt.providers.get('p')?.missingCredential).toBe('TG_TEST_KEY');
    expect(warnings[0]).toContain('TG_TEST_KEY');
    const withKey = compileSnapshot(parseSnapshot(base(), 't'), { env: { TG_TEST_KEY: 'sk-upstream' } });
    expect(withKey.providers.get('p')?.credential).toBe('sk-upstream');
  });

  it('matches organization permissions by id, prefix and star', () => {
    const rt = compileSnapshot(parseSnapshot(base(), 't'), { env: {} });
    const org = rt.organizations.get('o')!;
    expect(orgAllows(org, 'vendor/m-1')).toBe(true);
    expect(orgAllows(org, 'other/m')).toBe(false);
  });

  it('versions by content: equal content, equal version; any change, a new one', () => {
    const a = parseSnapshot(base(), 't');
    const b = parseSnapshot(base(), 't');
    expect(snapshotVersion(a)).toBe(snapshotVersion(b));
    b.models[0].public = true;
    expect(snapshotVersion(a)).not.toBe(snapshotVersion(b));
  });
});

describe('file source', () => {
  it('hot-reloads a good edit and keeps serving the last good snapshot after a bad one', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tg-snap-'));
    const file = join(dir, 'config.json');
    writeFileSync(file, JSON.stringify(base()));
    const holder = new SnapshotHolder();
    const logs: { level: string; obj: Record<string, unknown> }[] = [];
    const log = {
      info: (obj: object) => logs.push({ level: 'info', obj: obj as Record<string, unknown> }),
      warn: (obj: object) => logs.push({ level: 'warn', obj: obj as Record<string, unknown> }),
      error: (obj: object) => logs.push({ level: 'error', obj: obj as Record<string, unknown> }),
    };
    const w = watchSnapshotFile(file, holder, log);
    try {
      const first = holder.current!.version;
      const good = base();
      good.models[0].alias = 'm2';
      writeFileSync(file, JSON.stringify(good));
      await expect.poll(() => holder.current!.version, { timeout: 3000 }).not.toBe(first);
      expect(holder.current!.byName.has('m2')).toBe(true);
      const second = holder.current!.version;
      const bad = base();
      bad.models[0].pricingGroup = 'missing';
      writeFileSync(file, JSON.stringify(bad));
      await expect.poll(() => logs.some((l) => l.level === 'error'), { timeout: 3000 }).toBe(true);
      const err = logs.find((l) => l.level === 'error')!;
      expect(String(err.obj.err)).toContain('models[0].pricingGroup: unknown pricing group "missing"');
      expect(holder.current!.version).toBe(second);
    } finally {
      w.close();
    }
  });
});

describe('generated documents', () => {
  it('docs/snapshot.schema.json is current (run npm run schema)', () => {
    expect(JSON.parse(readFileSync('docs/snapshot.schema.json', 'utf8'))).toEqual(snapshotJsonSchema());
  });
  it('docs/configuration.md is current (run npm run schema)', () => {
    expect(readFileSync('docs/configuration.md', 'utf8')).toBe(configurationReference() + '\n');
  });
});
