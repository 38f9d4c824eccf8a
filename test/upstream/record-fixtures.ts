// Regenerates test/fixtures/<protocol>/* from the fake upstream (fixed clock, fresh server per fixture).
// Usage: node test/upstream/record-fixtures.ts
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { FIXTURES, fixtureFile, fixtureRequestFile, renderFixture } from './fixtures.ts';

for (const def of FIXTURES) {
  const { status, bytes } = await renderFixture(def);
  await mkdir(dirname(fixtureFile(def)), { recursive: true });
  await writeFile(fixtureFile(def), bytes);
  const request = { method: 'POST', path: def.path, status, ...(def.warmups ? { warmups: def.warmups } : {}), body: def.body };
  await writeFile(fixtureRequestFile(def), JSON.stringify(request, null, 2) + '\n');
  console.log(`${status} ${def.name}.${def.ext} (${bytes.length} bytes)`);
}
