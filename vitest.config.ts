import { defineConfig } from 'vitest/config';

// The 50,000-ApiKey scale test runs on its own (`npm run test:scale`, vitest.scale.config.ts): it intermittently
// stalls (an open defect, see the closing note of the session that found it) and must not hold the suite hostage.
export const SCALE_TESTS = ['operator/scale.test.ts'];

export default defineConfig({
  test: {
    include: ['gateway/**/*.test.ts', 'operator/**/*.test.ts', 'test/**/*.test.ts'],
    exclude: ['**/node_modules/**', ...SCALE_TESTS],
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
  },
});
