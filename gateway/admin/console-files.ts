// The console's static files: `/` is <dir>/index.html, `/console/<file>` is <dir>/<file> (hashed assets, cached for
// good). Every answer carries the strict Content-Security-Policy: the page loads only its own scripts and styles.
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { extname, resolve, sep } from 'node:path';
import type { FastifyInstance, FastifyReply } from 'fastify';

export const CONSOLE_CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.map': 'application/json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8',
};

function secure(reply: FastifyReply): FastifyReply {
  return reply
    .header('content-security-policy', CONSOLE_CSP)
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'no-referrer')
    .header('x-frame-options', 'DENY');
}

async function sendFile(reply: FastifyReply, path: string, cache: string): Promise<FastifyReply | undefined> {
  let size: number;
  try {
    const st = await stat(path);
    if (!st.isFile()) return undefined;
    size = st.size;
  } catch {
    return undefined;
  }
  return secure(reply)
    .header('content-type', TYPES[extname(path)] ?? 'application/octet-stream')
    .header('content-length', size)
    .header('cache-control', cache)
    .send(createReadStream(path));
}

export function registerConsole(app: FastifyInstance, dir: string): void {
  const root = resolve(dir);
  const missing = (reply: FastifyReply) =>
    secure(reply).code(404).header('content-type', 'text/plain; charset=utf-8').send(`The console is not built (no ${root}/index.html); npm run build:console builds it.\n`);
  app.get('/', async (_req, reply) => (await sendFile(reply, resolve(root, 'index.html'), 'no-cache')) ?? missing(reply));
  app.get('/console/*', async (req, reply) => {
    const rel = (req.params as { '*': string })['*'];
    const path = resolve(root, rel);
    // Only files inside the directory: no "..", no absolute paths, no NUL.
    if (rel.includes('\u0000') || !path.startsWith(root + sep)) return secure(reply).code(404).header('content-type', 'text/plain').send('not found\n');
    return (await sendFile(reply, path, 'public, max-age=31536000, immutable')) ?? secure(reply).code(404).header('content-type', 'text/plain').send('not found\n');
  });
}
