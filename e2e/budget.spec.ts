import { expect, test } from '@playwright/test';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createUser, demoBusinessId, signIn } from './service.ts';

const ASSETS = join(import.meta.dirname, '..', 'web', 'dist', 'assets');
const BUDGET = 300 * 1024;

// The dashboard stays light: the scripts that a first load of the inbox runs, gzipped, weigh under
// 300 KB. The entry point holds the shell and the inbox; other pages load when opened.
test('the first load of the inbox takes under 300 KB of gzipped script', async ({ page, context }) => {
  await signIn(page, await createUser(await demoBusinessId(), 'agent', { name: 'Budget' }));
  await expect(page.getByRole('heading', { name: 'Inbox' })).toBeVisible();
  // A new load of the dashboard, with the session's cookie: every script it runs is counted.
  const tab = await context.newPage();
  const scripts = new Set<string>();
  tab.on('response', (response) => {
    const name = /\/dashboard\/assets\/([^/?]+\.js)$/.exec(response.url())?.[1];
    if (name) scripts.add(name);
  });
  await tab.goto('/dashboard');
  await expect(tab.getByRole('heading', { name: 'Inbox' })).toBeVisible();
  expect(scripts.size).toBeGreaterThan(0);
  let total = 0;
  for (const name of scripts) total += (await readFile(join(ASSETS, `${name}.gz`))).length;
  console.log(`first load: ${scripts.size} scripts, ${(total / 1024).toFixed(1)} KB gzipped`);
  expect(total).toBeLessThan(BUDGET);
});
