#!/usr/bin/env node
// Runs the TypeScript sources directly: Node 24 strips types natively (the project pins node@24).
await import('../gateway/cli.ts');
