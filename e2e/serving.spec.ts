import { expect, test } from '@playwright/test';

// How the service serves the dashboard, as a browser sees it.
test('a conversation path opens the app directly: index.html, never cached', async ({ page, request }) => {
  const path = '/dashboard/conversations/0192f3c4-5d6e-7f80-9a1b-2c3d4e5f6a7b';
  const response = await request.get(path);
  expect(response.status()).toBe(200);
  expect(response.headers()['content-type']).toMatch(/^text\/html/);
  expect(response.headers()['cache-control']).toBe('no-cache');
  expect(await response.text()).toContain('<div id="root"></div>');

  // Signed out, the app sends the visitor to the sign-in page.
  await page.goto(path);
  await expect(page).toHaveURL(/\/dashboard\/login$/);
  await expect(page.getByRole('heading', { name: 'Sign in' })).toBeVisible();
});

test('the app loads its hashed assets cached for good, compressed', async ({ page }) => {
  const assets: { url: string; cacheControl: string; encoding?: string }[] = [];
  page.on('response', (response) => {
    if (response.url().includes('/dashboard/assets/'))
      assets.push({
        url: response.url(),
        cacheControl: response.headers()['cache-control'],
        encoding: response.headers()['content-encoding'],
      });
  });
  await page.goto('/dashboard/login');
  await expect(page.getByRole('button', { name: 'Sign in' })).toBeVisible();
  expect(assets.length).toBeGreaterThan(0);
  for (const asset of assets) {
    expect(asset.cacheControl, asset.url).toBe('public, max-age=31536000, immutable');
    if (/\.js$/.test(asset.url)) expect(asset.encoding, asset.url).toBe('br');
  }
});

test('an unknown session API path answers 404 with the error body, not the app', async ({ request }) => {
  const response = await request.get('/dashboard/api/no-such-thing');
  expect(response.status()).toBe(404);
  expect((await response.json()).error.code).toBe('not_found');
});
