#!/usr/bin/env node
// Runs the TypeScript sources directly: Node 24 strips types natively (the project pins node@24).
// This entry is plain JavaScript so it can turn on Node's compile cache before the first .ts file loads: a cached
// start skips type stripping (its WebAssembly compiler stays unloaded, ~17 MB of RSS) and JavaScript compilation.
// The directory is NODE_COMPILE_CACHE when set, else Node's default under the temp dir; children (the embedded
// store's process) inherit it through the environment. A cache that cannot be written only costs the saving.
import { constants, enableCompileCache } from 'node:module';

if (!process.env.NODE_COMPILE_CACHE) {
  const cache = enableCompileCache();
  if (cache.directory && cache.status === constants.compileCacheStatus.ENABLED) process.env.NODE_COMPILE_CACHE = cache.directory;
}
await import('../gateway/cli.ts');
