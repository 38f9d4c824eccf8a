import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['gateway/**/*.test.ts', 'operator/**/*.test.ts', 'kube/**/*.test.ts', 'test/**/*.test.ts'],
    exclude: ['**/node_modules/**'],
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
  },
});
