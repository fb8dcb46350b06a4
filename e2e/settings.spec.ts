import { expect, test, type Page } from '@playwright/test';
import { createUser, expectAccessible, operator, signIn, type Account } from './service.ts';

// The settings pages of admins and owners: connecting a channel, inviting a user who then signs in
// through the link, and each page's accessibility at a desktop's width and a phone's.
const DESKTOP = { width: 1280, height: 800 };
const PHONE = { width: 390, height: 844 };

let businessId: string;
let owner: Account;

test.beforeAll(async () => {
  ({
    business: { id: businessId },
  } = await operator<{ business: { id: string } }>('POST', '/businesses', {
    name: 'Settings shop',
  }));
  owner = await createUser(businessId, 'owner', { name: 'Olga Owner' });
  await operator('POST', `/businesses/${businessId}/agents`, {
    name: 'Helper bot',
    tools: { lookup: { enabled: true } },
  });
});

const settingsLink = (page: Page, name: string) =>
  page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name });

/** Invites a new agent from the team page, open; answers the invitation link it shows. */
async function invite(page: Page, name: string): Promise<string> {
  const form = page.locator('form').filter({ has: page.getByRole('button', { name: 'Invite' }) });
  const email = `${name.split(' ')[0].toLowerCase()}.${Math.random().toString(36).slice(2, 10)}@example.com`;
  await form.getByLabel('Email', { exact: true }).fill(email);
  await form.getByLabel('Name', { exact: true }).fill(name);
  await form.getByLabel('Role', { exact: true }).selectOption('agent');
  await form.getByRole('button', { name: 'Invite' }).click();
  const link = await page.getByLabel('Invitation link', { exact: true }).inputValue();
  expect(link).toMatch(/\/dashboard\/invitations\/\S+$/);
  await expect(page.getByRole('row', { name: new RegExp(name) })).toContainText('Invited: the link works until');
  return link;
}

test('an owner connects a WhatsApp number and sees the webhook URL and verify token to paste into Meta', async ({
  page,
}) => {
  await signIn(page, owner);
  await settingsLink(page, 'Channels').click();
  await expect(page.getByRole('heading', { level: 1, name: 'Channels' })).toBeVisible();
  // One form per kind of channel, each named by its kind.
  const form = page.getByRole('form', { name: 'WhatsApp (Meta Cloud API)' });
  await form.getByLabel('Business number').fill('+15557654321');
  await form.getByLabel('Phone number ID', { exact: true }).fill('777000111');
  await form.getByLabel('Access token', { exact: true }).fill('EAAexampletoken');
  await form.getByLabel('App secret', { exact: true }).fill('app-secret-value');
  await form.getByRole('button', { name: 'Connect channel' }).click();

  const result = page.getByRole('status').filter({ hasText: 'is connected' });
  await expect(result).toBeVisible();
  await expect(result.getByLabel('Webhook URL', { exact: true })).toHaveValue(/\/channels\/whatsapp_cloud\/webhook$/);
  const token = await result.getByLabel('Verify token', { exact: true }).inputValue();
  expect(token).toMatch(/^[A-Za-z0-9_-]{32}$/);
  // The channel is listed with its secrets masked.
  const row = page.getByRole('row', { name: /15557654321/ });
  await expect(row).toContainText('••••••••');
  await expect(page.getByText('app-secret-value')).toHaveCount(0);
  // Meta's handshake with that token is answered.
  const handshake = await page.request.get(
    `/channels/whatsapp_cloud/webhook?hub.mode=subscribe&hub.verify_token=${token}&hub.challenge=hello`,
  );
  expect(await handshake.text()).toBe('hello');

  await row.getByLabel(/Pace of/).fill('25');
  await row.getByRole('button', { name: 'Save' }).click();
  await expect(row.getByRole('status')).toHaveText('Saved');
  // The AI agent every new conversation of the channel gets.
  await row.getByLabel(/AI agent of/).selectOption({ label: 'Helper bot' });
  await row.getByRole('button', { name: 'Apply' }).click();
  await expect(row.getByRole('status')).toHaveCount(2);
  const { channels } = await operator<{ channels: { identifier: string; agent_id: string | null }[] }>(
    'GET',
    `/businesses/${businessId}/channels`,
  );
  expect(channels.find((c) => c.identifier === '15557654321')?.agent_id).toMatch(/^[0-9a-f-]{36}$/);
  await expectAccessible(page);
});

test('an owner connects an email mailbox with the SMTP and IMAP settings of its form', async ({ page }) => {
  await signIn(page, owner);
  await settingsLink(page, 'Channels').click();
  const form = page.getByRole('form', { name: 'Email' });
  const address = 'hello@settings-shop.example';
  await form.getByLabel('Email address', { exact: true }).fill(address);
  await form.getByLabel('Address', { exact: true }).fill(address);
  for (const [server, port] of [
    ['SMTP', '465'],
    ['IMAP', '993'],
  ]) {
    await form.getByLabel(`${server} host`, { exact: true }).fill(`${server.toLowerCase()}.settings-shop.example`);
    await form.getByLabel(`${server} port`, { exact: true }).fill(port);
    await form.getByLabel(`${server} secure`, { exact: true }).check();
    await form.getByLabel(`${server} user`, { exact: true }).fill(address);
    await form.getByLabel(`${server} password`, { exact: true }).fill('mail-app-password');
  }
  await form.getByRole('button', { name: 'Connect channel' }).click();
  await expect(page.getByRole('status').filter({ hasText: 'is connected' })).toBeVisible();
  const row = page.getByRole('row', { name: /hello@settings-shop\.example/ });
  await expect(row).toContainText('SMTP password ••••••••');
  await expect(page.getByText('mail-app-password')).toHaveCount(0);
  const { channels } = await operator<{ channels: { identifier: string; provider: unknown }[] }>(
    'GET',
    `/businesses/${businessId}/channels`,
  );
  expect(channels.find((c) => c.identifier === address)?.provider).toEqual({ kind: 'email', account: address });
});

test("an owner connects a Messenger page by its page id, and Meta's handshake is answered at its webhook", async ({
  page,
}) => {
  await signIn(page, owner);
  await settingsLink(page, 'Channels').click();
  const form = page.getByRole('form', { name: 'Messenger (Facebook page)' });
  // A page is named by its id: there is no other identifier to give.
  await expect(form.getByLabel('Identifier', { exact: true })).toHaveCount(0);
  await form.getByLabel('Page ID', { exact: true }).fill('104000200300400');
  await form.getByLabel('Access token', { exact: true }).fill('EAAGpagetoken');
  await form.getByLabel('App secret', { exact: true }).fill('page-app-secret');
  await form.getByRole('button', { name: 'Connect channel' }).click();

  const result = page.getByRole('status').filter({ hasText: 'is connected' });
  await expect(result.getByLabel('Webhook URL', { exact: true })).toHaveValue(/\/channels\/messenger\/webhook$/);
  const token = await result.getByLabel('Verify token', { exact: true }).inputValue();
  await expect(page.getByRole('row', { name: /104000200300400/ })).toContainText('••••••••');
  const handshake = await page.request.get(
    `/channels/messenger/webhook?hub.mode=subscribe&hub.verify_token=${token}&hub.challenge=meta`,
  );
  expect(await handshake.text()).toBe('meta');
});

test('an invited agent opens the link in another browser, sets a password, lands signed in, and sees no Settings', async ({
  page,
  browser,
}) => {
  await signIn(page, owner);
  await settingsLink(page, 'Team').click();
  await expect(page.getByRole('heading', { level: 1, name: 'Team' })).toBeVisible();
  const link = await invite(page, 'Ivan Invited');

  const context = await browser.newContext();
  const invited = await context.newPage();
  await invited.goto(link);
  await expect(invited.getByRole('heading', { name: 'Join your team' })).toBeVisible();
  await expectAccessible(invited);
  await invited.getByLabel('Password', { exact: true }).fill('my chosen password');
  await invited.getByRole('button', { name: 'Set password and sign in' }).click();
  await expect(invited).toHaveURL(/\/dashboard\/?$/);
  await expect(invited.getByRole('heading', { level: 1, name: 'Inbox' })).toBeVisible();
  const nav = invited.getByRole('navigation', { name: 'Main' });
  await expect(nav.getByText('Settings')).toHaveCount(0);
  await expect(nav.getByRole('link', { name: 'Channels' })).toHaveCount(0);
  // Opened by its address, a settings page tells an agent it is not theirs.
  await invited.goto('/dashboard/settings/team');
  await expect(invited.getByRole('heading', { name: 'No access' })).toBeVisible();
  await context.close();
});

test('an owner deletes a channel after a confirmation that names it; Escape leaves it', async ({ page }) => {
  const identifier = `1555${String(Math.floor(Math.random() * 1e7)).padStart(7, '0')}`;
  await operator('POST', `/businesses/${businessId}/channels`, {
    type: 'whatsapp',
    identifier,
    name: 'Old line',
    provider: {
      kind: 'whatsapp_cloud',
      phone_number_id: String(Math.floor(Math.random() * 1e12)),
      access_token: 'EAAold',
      app_secret: 'old-app-secret',
      verify_token: 'old-verify-token',
    },
  });
  await signIn(page, owner);
  await settingsLink(page, 'Channels').click();
  const row = page.getByRole('row', { name: /Old line/ });
  const open = row.getByRole('button', { name: 'Delete Old line' });
  await open.click();
  const dialog = page.getByRole('dialog', { name: 'Delete the channel Old line?' });
  await expect(dialog).toContainText(identifier);
  await expectAccessible(page);
  await page.keyboard.press('Escape');
  await expect(dialog).toBeHidden();
  await expect(open).toBeFocused();
  await expect(row).toBeVisible();

  await open.click();
  await dialog.getByRole('button', { name: 'Delete channel' }).click();
  await expect(dialog).toBeHidden();
  await expect(page.getByRole('row', { name: /Old line/ })).toHaveCount(0);
  const { channels } = await operator<{ channels: { identifier: string }[] }>(
    'GET',
    `/businesses/${businessId}/channels`,
  );
  expect(channels.map((channel) => channel.identifier)).not.toContain(identifier);
});

test('a pending invitation is sent again with a new link, or withdrawn; an old link no longer works', async ({
  page,
  browser,
}) => {
  await signIn(page, owner);
  await settingsLink(page, 'Team').click();
  const context = await browser.newContext();
  const invited = await context.newPage();
  const join = async (link: string) => {
    await invited.goto(link);
    await invited.getByLabel('Password', { exact: true }).fill('my chosen password');
    await invited.getByRole('button', { name: 'Set password and sign in' }).click();
  };

  const first = await invite(page, 'Rosa Resent');
  const rosa = page.getByRole('row', { name: /Rosa Resent/ });
  await rosa.getByRole('button', { name: 'Resend invitation to Rosa Resent' }).click();
  const second = await page.getByLabel('Invitation link for Rosa Resent', { exact: true }).inputValue();
  expect(second).toMatch(/\/dashboard\/invitations\/\S+$/);
  expect(second).not.toBe(first);
  await expectAccessible(page);
  await join(first);
  await expect(invited.getByRole('alert')).toHaveText('This invitation link is not valid any more: ask for a new one.');
  await join(second);
  await expect(invited.getByRole('heading', { level: 1, name: 'Inbox' })).toBeVisible();
  await page.reload();
  await expect(rosa).toBeVisible();
  await expect(rosa).not.toContainText('Invited');
  await expect(rosa.getByRole('button', { name: /Resend invitation/ })).toHaveCount(0);

  const link = await invite(page, 'Walt Withdrawn');
  const walt = page.getByRole('row', { name: /Walt Withdrawn/ });
  await walt.getByRole('button', { name: 'Withdraw invitation of Walt Withdrawn' }).click();
  const dialog = page.getByRole('dialog', { name: 'Withdraw the invitation of Walt Withdrawn?' });
  await expect(dialog).toContainText('stops working');
  await expectAccessible(page);
  await dialog.getByRole('button', { name: 'Withdraw invitation' }).click();
  await expect(dialog).toBeHidden();
  await expect(walt).toContainText('the link has expired or was withdrawn');
  await expect(walt.getByRole('button', { name: /Withdraw invitation/ })).toHaveCount(0);
  await invited.context().clearCookies();
  await join(link);
  await expect(invited.getByRole('alert')).toHaveText('This invitation link is not valid any more: ask for a new one.');
  await context.close();
});

for (const viewport of [DESKTOP, PHONE]) {
  test(`each settings page is accessible at ${viewport.width} px`, async ({ page }) => {
    await page.setViewportSize(viewport);
    await signIn(page, owner);
    await expect(page.getByRole('heading', { level: 1, name: 'Inbox' })).toBeVisible();
    for (const [path, heading] of [
      ['/dashboard/settings/channels', 'Channels'],
      ['/dashboard/settings/templates', 'Templates'],
      ['/dashboard/settings/agents', 'AI agents'],
      ['/dashboard/settings/team', 'Team'],
    ]) {
      await page.goto(path);
      await expect(page.getByRole('heading', { level: 1, name: heading })).toBeVisible();
      await expect(page.getByRole('heading', { level: 2 }).first()).toBeVisible();
      await expectAccessible(page);
      // Nothing is wider than the screen.
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      expect(overflow, path).toBeLessThanOrEqual(0);
    }
  });
}

test('a template is created and an agent configured with the keyboard', async ({ page }) => {
  await signIn(page, owner);
  await expect(page.getByRole('heading', { level: 1, name: 'Inbox' })).toBeVisible();
  await page.goto('/dashboard/settings/templates');
  await page.getByLabel('Name', { exact: true }).fill('order_ready');
  await page.getByLabel('Body').fill('Hello {{1}}, your order is ready');
  await page.getByLabel('Body').press('Tab');
  await page.getByRole('button', { name: 'Create template' }).focus();
  await page.keyboard.press('Enter');
  await expect(page.getByRole('row', { name: /order_ready/ })).toBeVisible();

  await page.goto('/dashboard/settings/agents');
  await page.getByRole('button', { name: 'Configure Helper bot' }).click();
  await page.getByLabel('System prompt').fill('Answer briefly.');
  await page.getByRole('checkbox', { name: 'lookup' }).uncheck();
  await page.getByRole('button', { name: 'Save agent' }).click();
  await expect(page.getByRole('status')).toHaveText('Saved');
  const { agents } = await operator<{ agents: { id: string; name: string }[] }>(
    'GET',
    `/businesses/${businessId}/agents`,
  );
  expect(agents.map((agent) => agent.name)).toContain('Helper bot');
});
