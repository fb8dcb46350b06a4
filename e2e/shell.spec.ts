import { expect, test, type Page } from '@playwright/test';
import {
  createUser,
  demoBusinessId,
  demoOwner,
  expectAccessible,
  operator,
  screenshot,
  signIn,
  type Account,
} from './service.ts';

// The signed-in shell: the sidebar by role, the pages' paths, the business switcher, sign-out, at a
// desktop's width and a phone's.
const DESKTOP = { width: 1280, height: 800 };
const PHONE = { width: 390, height: 844 };

let owner: Account;
let agent: Account;
let secondBusiness: { id: string; name: string };

test.beforeAll(async () => {
  const demo = await demoBusinessId();
  owner = await createUser(demo, 'owner', { name: 'Marta Díaz' });
  agent = await createUser(demo, 'agent', { name: 'Tomás Pereyra' });
  // The owner is an admin of a second business too, with the same email and password.
  ({ business: secondBusiness } = await operator<{ business: { id: string; name: string } }>('POST', '/businesses', {
    name: 'Second shop',
  }));
  await createUser(secondBusiness.id, 'admin', { name: 'Marta Díaz', account: owner });
});

const sidebar = (page: Page) => page.getByRole('navigation', { name: 'Main' });

test('the demo owner signs in and lands on the inbox; sign-out returns to sign-in', async ({ page }) => {
  await signIn(page, demoOwner());
  await expect(page).toHaveURL(/\/dashboard$/);
  await expect(page.getByRole('heading', { level: 1, name: 'Inbox' })).toBeVisible();
  await expect(page.getByRole('banner')).toContainText('Demo business');
  await page.getByRole('button', { name: 'Sign out' }).click();
  await expect(page).toHaveURL(/\/dashboard\/login$/);
  await expect(page.getByRole('button', { name: 'Sign in' })).toBeVisible();
});

test('a signed-out visitor of a conversation signs in and comes back to it; sign-out returns to sign-in', async ({
  page,
}) => {
  const conversation = '/dashboard/conversations/0192f3c4-5d6e-7f80-9a1b-2c3d4e5f6a7b';
  await page.goto(conversation);
  await expect(page).toHaveURL(/\/dashboard\/login$/);
  await signIn(page, owner);
  await expect(page).toHaveURL(new RegExp(`${conversation}$`));
  await expect(page.getByRole('heading', { name: 'Inbox' })).toBeVisible();
  await expect(sidebar(page).getByRole('link', { name: 'Inbox' })).toHaveAttribute('aria-current', 'page');

  await page.getByRole('button', { name: 'Sign out' }).click();
  await expect(page).toHaveURL(/\/dashboard\/login$/);
  // The session is over: the inbox sends back to sign-in.
  await page.goto('/dashboard');
  await expect(page).toHaveURL(/\/dashboard\/login$/);
});

test('an owner sees every page in the sidebar, and each opens, with nothing logged to the console', async ({
  page,
}) => {
  await signIn(page, owner);
  await expect(page).toHaveURL(/\/dashboard$/);
  await expect(page.getByRole('heading', { name: 'Inbox' })).toBeVisible();
  // Once signed in (the sign-in page's first read of the session is a 401, which the browser logs).
  const logged: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error' || message.type() === 'warning') logged.push(`${message.type()}: ${message.text()}`);
  });
  page.on('pageerror', (error) => logged.push(`uncaught: ${error.message}`));
  await expectAccessible(page);
  await screenshot(page, 'inbox-1280');
  for (const [link, heading, path] of [
    ['Contacts', 'Contacts', '/dashboard/contacts'],
    ['Reports', 'Reports', '/dashboard/reports'],
    ['Dev Tools', 'Dev Tools', '/dashboard/dev-tools'],
    ['Channels', 'Channels', '/dashboard/settings/channels'],
    ['Templates', 'Templates', '/dashboard/settings/templates'],
    ['AI agents', 'AI agents', '/dashboard/settings/agents'],
    ['Team', 'Team', '/dashboard/settings/team'],
    ['Inbox', 'Inbox', '/dashboard'],
  ]) {
    await sidebar(page).getByRole('link', { name: link }).click();
    await expect(page).toHaveURL(new RegExp(`${path}$`));
    await expect(page.getByRole('heading', { level: 1, name: heading })).toBeVisible();
    await expect(sidebar(page).getByRole('link', { name: link })).toHaveAttribute('aria-current', 'page');
  }
  // A page whose code loads when first opened, opened by its address.
  await page.goto('/dashboard/settings/team');
  await expect(page.getByRole('heading', { level: 1, name: 'Team' })).toBeVisible();
  await page.goto('/dashboard/no-such-page');
  await expect(page.getByRole('heading', { level: 1, name: 'Page not found' })).toBeVisible();
  expect(logged).toEqual([]);
});

test('an agent sees the inbox and contacts only, and is told so at an admin page', async ({ page }) => {
  await signIn(page, agent);
  await expect(page.getByRole('heading', { name: 'Inbox' })).toBeVisible();
  await expect(sidebar(page).getByRole('link')).toHaveText([/^Inbox\d*$/, 'Contacts']);
  await expect(page.getByLabel('Business')).toHaveCount(0);
  await page.goto('/dashboard/settings/team');
  await expect(page.getByRole('heading', { name: 'No access' })).toBeVisible();
});

/** Chooses the business the session does not act for now, and answers its id. */
async function switchToTheOther(page: Page): Promise<string> {
  const switcher = page.getByLabel('Business');
  const current = await switcher.inputValue();
  const other = await switcher
    .locator('option')
    .evaluateAll(
      (options, now) => (options as HTMLOptionElement[]).map((option) => option.value).find((id) => id !== now),
      current,
    );
  if (!other) throw new Error('the switcher lists one business');
  await switcher.selectOption(other);
  return other;
}

test('a user of two businesses switches between them', async ({ page }) => {
  await signIn(page, owner);
  await expect(page.getByRole('heading', { name: 'Inbox' })).toBeVisible();
  const switcher = page.getByLabel('Business');
  await expect(switcher.locator('option')).toHaveText(['Demo business', secondBusiness.name], { useInnerText: true });
  await page.getByRole('link', { name: 'Contacts' }).click();
  const chosen = await switchToTheOther(page);
  // A switch starts again at the inbox of the business chosen, and the session keeps it.
  await expect(page).toHaveURL(/\/dashboard$/);
  await expect(switcher).toHaveValue(chosen);
  await page.reload();
  await expect(page.getByLabel('Business')).toHaveValue(chosen);
});

test('a session that ended elsewhere sends the visitor to sign-in at the next call', async ({ page }) => {
  await signIn(page, owner);
  await expect(page.getByRole('heading', { name: 'Inbox' })).toBeVisible();
  // Signed out from another tab: the browser still holds the page, and the cookie no longer opens a session.
  const session = (await (await page.request.get('/dashboard/api/session')).json()) as { csrf_token: string };
  const ended = await page.request.delete('/dashboard/api/session', {
    headers: { 'x-csrf-token': session.csrf_token },
  });
  expect(ended.status()).toBe(204);
  // The next call is the switch, unless the page's own (its live updates reconnecting) comes first and
  // takes the switcher away.
  await Promise.race([switchToTheOther(page).catch(() => undefined), page.waitForURL(/\/dashboard\/login$/)]);
  await expect(page).toHaveURL(/\/dashboard\/login$/);
});

test.describe('on a phone', () => {
  test.use({ viewport: PHONE });

  test('the menu opens from a button, lists the pages, and closes when one is chosen or on Escape', async ({
    page,
  }) => {
    await signIn(page, owner);
    await expect(page.getByRole('heading', { name: 'Inbox' })).toBeVisible();
    await expectAccessible(page);
    await screenshot(page, 'inbox-390');
    const menu = page.getByRole('button', { name: 'Menu' });
    await expect(menu).toHaveAttribute('aria-expanded', 'false');
    await expect(sidebar(page)).toBeHidden();
    await menu.focus();
    await page.keyboard.press('Enter');
    await expect(menu).toHaveAttribute('aria-expanded', 'true');
    await expect(sidebar(page)).toBeVisible();
    await expectAccessible(page);
    await screenshot(page, 'menu-390');
    await sidebar(page).getByRole('link', { name: 'Contacts' }).click();
    await expect(page.getByRole('heading', { name: 'Contacts' })).toBeVisible();
    await expect(sidebar(page)).toBeHidden();

    // Escape closes it from the keyboard, the focus back on its button.
    await menu.click();
    await sidebar(page).getByRole('link', { name: 'Inbox' }).focus();
    await page.keyboard.press('Escape');
    await expect(sidebar(page)).toBeHidden();
    await expect(menu).toBeFocused();
  });
});

test('the shell is used with the keyboard: a skip link first, then the sidebar, focus visible', async ({ page }) => {
  await page.setViewportSize(DESKTOP);
  await signIn(page, owner);
  await expect(page.getByRole('heading', { name: 'Inbox' })).toBeVisible();
  await page.keyboard.press('Tab');
  const skip = page.getByRole('link', { name: 'Skip to content' });
  await expect(skip).toBeFocused();
  await expect(skip).toBeInViewport();
  await page.keyboard.press('Tab');
  const inbox = sidebar(page).getByRole('link', { name: 'Inbox' });
  await expect(inbox).toBeFocused();
  expect(await inbox.evaluate((element) => getComputedStyle(element).outlineStyle)).toBe('solid');
  await page.keyboard.press('Tab');
  await expect(sidebar(page).getByRole('link', { name: 'Contacts' })).toBeFocused();
  await page.keyboard.press('Enter');
  await expect(page).toHaveURL(/\/dashboard\/contacts$/);
});
