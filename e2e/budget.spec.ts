import { expect, test } from '@playwright/test';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

const ASSETS = join(import.meta.dirname, '..', 'web', 'dist', 'assets');
const BUDGET = 300 * 1024;

// The dashboard stays light: the scripts of a first visit, gzipped, weigh under 300 KB. The entry point
// holds the shell and the inbox; other pages load when opened.
test('the first load of the dashboard takes under 300 KB of gzipped script', async ({ page }) => {
  const scripts = new Set<string>();
  page.on('response', (response) => {
    const name = /\/dashboard\/assets\/([^/?]+\.js)$/.exec(response.url())?.[1];
    if (name) scripts.add(name);
  });
  await page.goto('/dashboard');
  await expect(page.getByRole('button', { name: 'Sign in' })).toBeVisible();
  expect(scripts.size).toBeGreaterThan(0);
  let total = 0;
  for (const name of scripts) total += (await readFile(join(ASSETS, `${name}.gz`))).length;
  console.log(`first load: ${scripts.size} scripts, ${(total / 1024).toFixed(1)} KB gzipped`);
  expect(total).toBeLessThan(BUDGET);
});
