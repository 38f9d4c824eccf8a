// Writes docs/snapshot.schema.json and docs/configuration.md from the zod schema.
import { writeFileSync } from 'node:fs';
import { configurationReference, snapshotJsonSchema } from '../gateway/snapshot/json-schema.ts';

writeFileSync('docs/snapshot.schema.json', JSON.stringify(snapshotJsonSchema(), null, 2) + '\n');
writeFileSync('docs/configuration.md', configurationReference() + '\n');
console.log('wrote docs/snapshot.schema.json and docs/configuration.md');
