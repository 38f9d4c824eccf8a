// Writes crds/*.yaml and the identical copies the tollgate-crds chart installs (test/k8s/crds.test.ts checks both).
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { generateCrds } from '../crds/src/index.ts';

const targets = ['crds', 'charts/tollgate-crds/templates'];
const files = generateCrds();
for (const dir of targets) {
  mkdirSync(dir, { recursive: true });
  // Drop CRDs of kinds that no longer exist, so a rename cannot leave a stale file behind.
  for (const f of readdirSync(dir)) if (f.endsWith('.yaml') && !files.has(f)) rmSync(join(dir, f));
  for (const [name, text] of files) writeFileSync(join(dir, name), text);
}
console.log(`wrote ${files.size} CRDs to ${targets.join(' and ')}`);
