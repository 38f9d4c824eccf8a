// What `tollgate start` tells a person at the terminal beyond the log lines.
import type { RuntimeProvider } from './snapshot/runtime.ts';

/** One block naming each provider without a credential and the variable to set; undefined when none is missing. */
export function missingCredentialsBlock(providers: Iterable<RuntimeProvider>): string | undefined {
  const byVar = new Map<string, string[]>();
  for (const p of providers) {
    if (!p.missingCredential) continue;
    const ids = byVar.get(p.missingCredential) ?? [];
    ids.push(p.id);
    byVar.set(p.missingCredential, ids);
  }
  if (byVar.size === 0) return undefined;
  const lines = [...byVar].map(([v, ids]) => `  ${v.padEnd(20)} provider${ids.length > 1 ? 's' : ''} ${ids.join(', ')}`);
  return [
    '',
    'tollgate: some providers have no credential; their models answer 502 until you set:',
    ...lines,
    'then restart. Everything else keeps working.',
    'To try tollgate without any provider account: `npm run demo` runs fully offline (a local example upstream).',
    '',
  ].join('\n');
}
