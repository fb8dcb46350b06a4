import { defineConfig } from 'vitest/config';

// The suite runs on the embedded engine always, and once more on PostgreSQL when
// TEST_DATABASE_URL is set.
const engines = ['pglite', ...(process.env.TEST_DATABASE_URL ? ['postgres'] : [])];

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    projects: engines.map((engine) => ({
      test: {
        name: engine,
        include: ['test/**/*.test.ts'],
        env: { TEST_ENGINE: engine },
        // The embedded engine's files start their databases from one migrated copy.
        globalSetup: engine === 'pglite' ? ['test/global-setup.ts'] : [],
        testTimeout: 30_000,
        hookTimeout: 60_000,
      },
    })),
  },
});
