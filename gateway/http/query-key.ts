// google-genai clients may send the key as `?key=`: it is taken out of the URL before routing, so no log line,
// error message or request object downstream ever holds it (docs/contract.md, keys).
import type { IncomingMessage } from 'node:http';

const GEMINI_PREFIX = '/api/v1/gemini/';
const QUERY_KEY = Symbol('tollgate.queryKey');

type WithKey = IncomingMessage & { [QUERY_KEY]?: string };

/** fastify's rewriteUrl hook: returns the URL without any `key` query parameter, keeping the key on the raw request. */
export function stripQueryKey(raw: IncomingMessage): string {
  const url = raw.url ?? '/';
  const q = url.indexOf('?');
  if (q < 0 || !url.startsWith(GEMINI_PREFIX) || !url.includes('key=', q)) return url;
  const kept: string[] = [];
  for (const pair of url.slice(q + 1).split('&')) {
    const eq = pair.indexOf('=');
    const name = eq < 0 ? pair : pair.slice(0, eq);
    if (name !== 'key') {
      kept.push(pair);
      continue;
    }
    if ((raw as WithKey)[QUERY_KEY] !== undefined) continue;
    try {
      (raw as WithKey)[QUERY_KEY] = decodeURIComponent(pair.slice(eq + 1).replaceAll('+', ' '));
    } catch {
      // A malformed escape is an unusable key: authentication will report it as missing.
    }
  }
  const stripped = kept.length > 0 ? `${url.slice(0, q)}?${kept.join('&')}` : url.slice(0, q);
  // fastify keeps the pre-rewrite URL here for reference; it must not keep the key either.
  (raw as IncomingMessage & { originalUrl?: string }).originalUrl = stripped;
  return stripped;
}

/** The key a client put in the query string, if any. */
export function queryKeyOf(raw: IncomingMessage): string | undefined {
  return (raw as WithKey)[QUERY_KEY];
}
