// The browser tests (e2e/): Debian's Chromium against the built service, which e2e/global-setup.ts
// starts over a new embedded database with the demo business.
import { defineConfig } from '@playwright/test';

export default defineConfig({
  testDir: 'e2e',
  globalSetup: './e2e/global-setup.ts',
  // The tests share one service, and in `npm test` a core with the type-check and the lint.
  workers: 1,
  // Generous: beside the type-check and the lint, the machine is busy.
  timeout: 60_000,
  expect: { timeout: 15_000 },
  forbidOnly: !!process.env.CI,
  reporter: [['list']],
  outputDir: 'test-results',
  use: {
    baseURL: process.env.E2E_BASE_URL,
    viewport: { width: 1280, height: 800 },
    launchOptions: { executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium' },
    trace: 'retain-on-failure',
  },
});
