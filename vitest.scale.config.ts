import { defineConfig } from 'vitest/config';
import { SCALE_TESTS } from './vitest.config.ts';

export default defineConfig({
  test: {
    include: SCALE_TESTS,
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    pool: 'forks',
  },
});
