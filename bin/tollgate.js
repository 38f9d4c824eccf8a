#!/usr/bin/env -S node --max-semi-space-size=8
// Runs the TypeScript sources directly: Node 24 strips types natively (the project pins node@24).
// This entry is plain JavaScript so it can turn on Node's compile cache before the first .ts file loads: a cached
// start skips type stripping (its WebAssembly compiler stays unloaded, ~17 MB of RSS) and JavaScript compilation.
// The directory is NODE_COMPILE_CACHE when set, else Node's default under the temp dir; children (the embedded
// store's process) inherit it through the environment. A cache that cannot be written only costs the saving.
// --max-semi-space-size=8 (here, in `npm start` and in the image's NODE_OPTIONS): without a bound V8 sizes the young
// generation from the host's memory (128 MB committed on a 24 GB machine), not from what the gateway holds.
import { constants, enableCompileCache } from 'node:module';

if (!process.env.NODE_COMPILE_CACHE) {
  const cache = enableCompileCache();
  if (cache.directory && cache.status === constants.compileCacheStatus.ENABLED) process.env.NODE_COMPILE_CACHE = cache.directory;
}
await import('../gateway/cli.ts');
