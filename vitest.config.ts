import { defineConfig } from 'vitest/config';

const INCLUDE = ['gateway/**/*.test.ts', 'operator/**/*.test.ts', 'test/**/*.test.ts'];
// The 50,000-ApiKey scale test measures the operator and a gateway under real load of their own; beside the rest of
// the suite on two cores it starves and its figures mean nothing. It runs alone, after everything else.
const ALONE = ['operator/scale.test.ts'];

export default defineConfig({
  test: {
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    projects: [
      { extends: true, test: { name: 'suite', include: INCLUDE, exclude: ALONE, sequence: { groupOrder: 0 } } },
      { extends: true, test: { name: 'scale', include: ALONE, sequence: { groupOrder: 1 } } },
    ],
  },
});
