// Golden files: compare with the stored expected output, or rewrite it when UPDATE_GOLDENS=1 (then review the diff).
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';

export const FIXTURES = new URL('../fixtures/', import.meta.url).pathname;

/** Names of the `<name>.in.<ext>` inputs in a fixture folder. */
export function goldenInputs(dir: string, ext: string): string[] {
  return readdirSync(join(FIXTURES, dir))
    .filter((f) => f.endsWith(`.in.${ext}`))
    .map((f) => f.slice(0, -`.in.${ext}`.length))
    .sort();
}

export function readFixture(dir: string, file: string): string {
  return readFileSync(join(FIXTURES, dir, file), 'utf8');
}

export function expectGolden(dir: string, file: string, actual: string): void {
  const path = join(FIXTURES, dir, file);
  if (process.env.UPDATE_GOLDENS === '1') {
    writeFileSync(path, actual);
    return;
  }
  if (!existsSync(path)) throw new Error(`missing golden file ${dir}/${file}: run with UPDATE_GOLDENS=1 and review it`);
  expect(actual).toBe(readFileSync(path, 'utf8'));
}
