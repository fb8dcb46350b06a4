import { expect, test } from '@playwright/test';
import { expectAccessible, screenshot } from './service.ts';

test.describe('the sign-in page', () => {
  for (const viewport of [
    { width: 1280, height: 800 },
    { width: 390, height: 844 },
  ])
    test(`has no serious or critical accessibility violation at ${viewport.width} px`, async ({ page }) => {
      await page.setViewportSize(viewport);
      await page.goto('/dashboard/login');
      await expect(page.getByLabel('Email')).toBeFocused();
      await expectAccessible(page);
      await screenshot(page, `login-${viewport.width}`);
    });

  test('is used with the keyboard alone, its focus visible', async ({ page }) => {
    await page.goto('/dashboard/login');
    await expect(page.getByLabel('Email')).toBeFocused();
    await page.keyboard.type('nobody@example.com');
    await page.keyboard.press('Tab');
    await expect(page.getByLabel('Password')).toBeFocused();
    await page.keyboard.press('Tab');
    const button = page.getByRole('button', { name: 'Sign in' });
    await expect(button).toBeFocused();
    const outline = await button.evaluate((element) => getComputedStyle(element).outlineStyle);
    expect(outline).toBe('solid');
  });

  test('a wrong password is refused, the error announced', async ({ page }) => {
    await page.goto('/dashboard/login');
    await page.getByLabel('Email').fill('nobody@example.com');
    await page.getByLabel('Password').fill('not the password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect(page.getByRole('alert')).toHaveText('The email or password is incorrect.');
    await expect(page).toHaveURL(/\/dashboard\/login$/);
    await expectAccessible(page);
  });

  test('an account locked out after repeated failures is told for how long', async ({ page }) => {
    await page.goto('/dashboard/login');
    // The service locks an account at its third failure (e2e/global-setup.ts).
    await page.getByLabel('Email').fill(`locked.${Date.now()}@example.com`);
    await page.getByLabel('Password').fill('not the password');
    const attempt = async () => {
      const answered = page.waitForResponse((response) => response.url().endsWith('/dashboard/api/session'));
      await page.getByRole('button', { name: 'Sign in' }).click();
      return (await answered).status();
    };
    for (let failure = 1; failure <= 3; failure++) expect(await attempt()).toBe(401);
    expect(await attempt()).toBe(429);
    await expect(page.getByRole('alert')).toHaveText(
      'Too many failed attempts. You are locked out: try again in 15 minutes.',
    );
  });
});
