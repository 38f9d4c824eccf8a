// Builds the console (console/src, Preact + uPlot) into console/dist: content-hashed JS and CSS under dist/ and an
// index.html naming them, which the admin server serves at / and /console/*. No inline script or style anywhere,
// so the page runs under a CSP of 'self' only. Run by `npm run build:console` and by `prepare` (so `npm ci` builds it).
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const CONSOLE_SRC = join(ROOT, 'console', 'src');
export const CONSOLE_DIST = join(ROOT, 'console', 'dist');
/** The URL path the admin server serves the built assets under. */
export const ASSET_BASE = '/console/';

export interface BuiltConsole {
  outDir: string;
  /** File names (relative to outDir) of the entry script and stylesheet. */
  script: string;
  stylesheet: string;
  files: string[];
}

// A small icon as its own file: without one the browser asks for /favicon.ico and logs a 404.
const ICON = '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="6" fill="#2f6fde"/><path d="M8 10h16v3h-6.5v11h-3V13H8z" fill="#fff"/></svg>\n';

function indexHtml(script: string, stylesheet: string, icon: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<meta name="referrer" content="no-referrer">
<title>tollgate console</title>
<link rel="icon" type="image/svg+xml" href="${ASSET_BASE}${icon}">
<link rel="stylesheet" href="${ASSET_BASE}${stylesheet}">
<script type="module" src="${ASSET_BASE}${script}"></script>
</head>
<body>
<div id="app"><noscript>The tollgate console needs JavaScript.</noscript></div>
</body>
</html>
`;
}

/** Bundles console/src into outDir (emptied first). Throws on any build error. */
export async function buildConsole(opts: { outDir?: string; minify?: boolean } = {}): Promise<BuiltConsole> {
  const { build } = await import('esbuild');
  const outDir = opts.outDir ?? CONSOLE_DIST;
  rmSync(outDir, { recursive: true, force: true });
  mkdirSync(outDir, { recursive: true });
  const result = await build({
    entryPoints: [join(CONSOLE_SRC, 'main.tsx')],
    outdir: outDir,
    entryNames: '[name]-[hash]',
    assetNames: '[name]-[hash]',
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: ['chrome120', 'firefox120', 'safari17'],
    minify: opts.minify ?? true,
    sourcemap: false,
    jsx: 'automatic',
    jsxImportSource: 'preact',
    metafile: true,
    legalComments: 'none',
    logLevel: 'silent',
    define: { 'process.env.NODE_ENV': '"production"' },
  });
  const files = Object.keys(result.metafile.outputs).map((p) => basename(p));
  const script = files.find((f) => f.endsWith('.js'));
  const stylesheet = files.find((f) => f.endsWith('.css'));
  if (!script || !stylesheet) throw new Error(`console build produced no ${script ? 'stylesheet' : 'script'}: ${files.join(', ')}`);
  const { createHash } = await import('node:crypto');
  const icon = `icon-${createHash('sha256').update(ICON).digest('hex').slice(0, 8)}.svg`;
  writeFileSync(join(outDir, icon), ICON);
  writeFileSync(join(outDir, 'index.html'), indexHtml(script, stylesheet, icon));
  return { outDir, script, stylesheet, files: readdirSync(outDir).sort() };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const prepare = process.argv.includes('--prepare');
  try {
    await import('esbuild');
  } catch {
    // `npm ci --omit=dev` (a production install) runs `prepare` too, without the dev dependencies that build the
    // console; the image builds it in its own stage. Anywhere else a missing esbuild is an error.
    if (prepare) {
      console.log('console not built: esbuild (a dev dependency) is not installed; run `npm run build:console` after a full install');
      process.exit(0);
    }
    throw new Error('esbuild is not installed: run `npm ci` first');
  }
  const started = performance.now();
  const built = await buildConsole();
  console.log(`console built into ${built.outDir} in ${Math.round(performance.now() - started)} ms: ${built.files.join(', ')}`);
}
