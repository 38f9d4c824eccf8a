// Admin tokens: `name:role:token` entries from TOLLGATE_ADMIN_TOKENS (comma-separated) and TOLLGATE_ADMIN_TOKENS_FILE
// (one per line, for a mounted Secret). Only sha256 digests are kept; a presented token is compared with every one
// in constant time, so neither the match nor its position leaks through timing.
import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';

export type AdminRole = 'read' | 'write';

export interface AdminToken {
  name: string;
  role: AdminRole;
  digest: Buffer;
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;
/** Long enough that guessing is hopeless; a shorter token is refused at start, not accepted quietly. */
export const MIN_TOKEN_LENGTH = 16;

function digest(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}

/** Parses entries separated by commas or newlines; blank lines and `#` comments are skipped. Throws naming the entry. */
export function parseAdminTokens(text: string, source: string): AdminToken[] {
  const out: AdminToken[] = [];
  for (const [i, raw] of text.split(/[,\n]/).entries()) {
    const entry = raw.trim();
    if (entry === '' || entry.startsWith('#')) continue;
    const a = entry.indexOf(':');
    const b = a < 0 ? -1 : entry.indexOf(':', a + 1);
    // Never echo the entry: it holds the token.
    if (b < 0) throw new Error(`${source}: entry ${i + 1} is not name:role:token`);
    const name = entry.slice(0, a);
    const role = entry.slice(a + 1, b);
    const token = entry.slice(b + 1);
    if (!NAME.test(name)) throw new Error(`${source}: entry ${i + 1}: the name must be letters, digits, ".", "_" or "-"`);
    if (role !== 'read' && role !== 'write') throw new Error(`${source}: token "${name}": the role must be read or write`);
    if (token.length < MIN_TOKEN_LENGTH) throw new Error(`${source}: token "${name}" is shorter than ${MIN_TOKEN_LENGTH} characters`);
    // An API key must never work as an admin token, so none may look like one.
    if (token.startsWith('sk_')) throw new Error(`${source}: token "${name}" looks like an API key (sk_…); admin tokens are separate secrets`);
    if (out.some((t) => t.name === name)) throw new Error(`${source}: token name "${name}" appears twice`);
    out.push({ name, role, digest: digest(token) });
  }
  return out;
}

/** Tokens from the environment (and the file it names); none configured → empty (the admin API answers 503). */
export function loadAdminTokens(env: NodeJS.ProcessEnv = process.env): AdminToken[] {
  const tokens = env.TOLLGATE_ADMIN_TOKENS ? parseAdminTokens(env.TOLLGATE_ADMIN_TOKENS, 'TOLLGATE_ADMIN_TOKENS') : [];
  const file = env.TOLLGATE_ADMIN_TOKENS_FILE;
  if (file) {
    for (const t of parseAdminTokens(readFileSync(file, 'utf8'), file)) {
      if (tokens.some((x) => x.name === t.name)) throw new Error(`${file}: token name "${t.name}" is also in TOLLGATE_ADMIN_TOKENS`);
      tokens.push(t);
    }
  }
  return tokens;
}

/** The token `presented` is, or undefined; every configured token is compared, whatever matched. */
export function matchAdminToken(tokens: readonly AdminToken[], presented: string): AdminToken | undefined {
  const d = digest(presented);
  let found: AdminToken | undefined;
  for (const t of tokens) if (timingSafeEqual(t.digest, d) && found === undefined) found = t;
  return found;
}
