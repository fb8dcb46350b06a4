import { expect, test, type Page } from '@playwright/test';
import { randomInt } from 'node:crypto';
import {
  createUser,
  demoBusinessId,
  expectAccessible,
  operator,
  screenshot,
  serviceUrl,
  signIn,
  startReceiver,
  type Account,
  type Receiver,
} from './service.ts';

// Dev Tools: API keys used on the public API, and an event trigger that fires on a message sent
// through it, to a receiver on loopback (the service runs with ALLOW_PRIVATE_WEBHOOK_TARGETS=true).

let admin: Account;
let agent: Account;
let receiver: Receiver;
let businessId: string;

const hooks = () => receiver.requests.filter((request) => request.path === '/hook').length;

test.beforeAll(async () => {
  businessId = await demoBusinessId();
  admin = await createUser(businessId, 'admin', { name: 'Dev Admin' });
  agent = await createUser(businessId, 'agent', { name: 'Dev Agent' });
  // Answers every call 200: the trigger's calls, and the sends of the channel made below.
  receiver = await startReceiver('{"messages":[{"id":"wamid.e2e"}]}');
});
test.afterAll(() => receiver.close());

function demoKey(): string {
  const key = /X-API-Key: (mk_live_\w+)/.exec(process.env.E2E_SERVICE_OUTPUT ?? '')?.[1];
  if (!key) throw new Error('the first start printed no API key');
  return key;
}

const contacts = (key: string) =>
  fetch(`${serviceUrl()}/external/v2/contacts?phone=5491100000000`, { headers: { 'x-api-key': key } });

async function openDevTools(page: Page, account: Account) {
  await signIn(page, account);
  await expect(page.getByRole('heading', { name: 'Inbox' })).toBeVisible();
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Dev Tools' }).click();
  await expect(page.getByRole('heading', { level: 1, name: 'Dev Tools' })).toBeVisible();
}

test('an admin creates an API key shown once, uses it on the public API, and revokes it', async ({ page }) => {
  await openDevTools(page, admin);
  await page.getByLabel('Key name').fill('E2E key');
  await page.getByRole('button', { name: 'Create API key' }).click();
  const shown = page.getByLabel('New API key: E2E key');
  await expect(shown).toHaveValue(/^mk_live_/);
  const key = await shown.inputValue();
  expect((await contacts(key)).status).not.toBe(401);
  expect((await contacts(key)).status).toBe(200);
  await page.getByRole('button', { name: 'Done' }).click();
  await expect(page.getByLabel('New API key: E2E key')).toHaveCount(0);

  await page.getByRole('button', { name: 'Revoke E2E key' }).click();
  await page.getByRole('button', { name: 'Confirm revoke' }).click();
  await expect(page.getByText(/Revoked/).first()).toBeVisible();
  expect((await contacts(key)).status).toBe(401);
});

test('a trigger fires on a message sent with the demo key; its attempt is logged and sent again', async ({ page }) => {
  const identifier = `1555${randomInt(1_000_000, 9_999_999)}`;
  const { channel } = await operator<{ channel: { id: string } }>('POST', `/businesses/${businessId}/channels`, {
    type: 'whatsapp',
    identifier,
    provider: {
      kind: 'whatsapp_cloud',
      phone_number_id: String(randomInt(100_000_000, 999_999_999)),
      access_token: 'EAAGe2e',
      app_secret: 'e2e-app-secret',
      verify_token: 'e2e-verify',
      api_base_url: receiver.url,
    },
  });

  await openDevTools(page, admin);
  await page.getByLabel('Endpoint URL').fill(`${receiver.url}/hook`);
  await page.getByRole('button', { name: 'Add header' }).click();
  await page.getByLabel('Header name 1').fill('X-Shop');
  await page.getByLabel('Header value 1').fill('shop-secret-1234');
  await page.getByRole('button', { name: 'Create trigger' }).click();
  await expect(page.getByLabel('Signing secret')).toHaveValue(/^whsec_/);
  await expect(page.getByLabel('Endpoint URL')).toHaveValue('');
  const trigger = page.getByRole('listitem', { name: `Trigger ${receiver.url}/hook` });
  await expect(trigger).toBeVisible();

  // Outside a conversation's 24-hour window a send is a template's.
  const { template } = await operator<{ template: { id: string } }>('POST', `/businesses/${businessId}/templates`, {
    name: `order_shipped_${randomInt(1_000_000)}`,
    language: 'en_US',
    body: 'Your order shipped',
  });
  const sent = await fetch(`${serviceUrl()}/external/v2/messages/send`, {
    method: 'POST',
    headers: { 'x-api-key': demoKey(), 'content-type': 'application/json' },
    body: JSON.stringify({
      to: '5491123456789',
      from: 'whatsapp',
      type: 'template',
      content: {},
      template_uuid: template.id,
      channel_uuid: channel.id,
    }),
  });
  expect(sent.status, await sent.text()).toBeLessThan(300);
  await expect.poll(() => hooks()).toBe(1);

  await trigger.getByRole('button', { name: 'Delivery log' }).click();
  const rows = trigger.getByRole('table').getByRole('row');
  await expect(async () => {
    await trigger.getByRole('button', { name: 'Refresh log' }).click();
    await expect(rows).toHaveCount(2, { timeout: 1000 });
  }).toPass();
  await expect(rows.nth(1).getByRole('cell').nth(2)).toHaveText('200');
  await expectAccessible(page);
  await page.getByRole('button', { name: 'Done' }).click();
  await screenshot(page, 'dev-tools');

  await rows
    .nth(1)
    .getByRole('button', { name: /^Send again/ })
    .click();
  await expect.poll(() => hooks()).toBe(2);
  await expect(async () => {
    await trigger.getByRole('button', { name: 'Refresh log' }).click();
    await expect(rows).toHaveCount(3, { timeout: 1000 });
  }).toPass();
  await expect(rows.nth(1).getByRole('cell').nth(1)).toHaveText('2');

  await page.setViewportSize({ width: 390, height: 844 });
  await expectAccessible(page);
});

test('an agent does not see Dev Tools, and is told so at its address', async ({ page }) => {
  await signIn(page, agent);
  await expect(page.getByRole('heading', { name: 'Inbox' })).toBeVisible();
  await expect(page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Dev Tools' })).toHaveCount(0);
  await page.goto('/dashboard/dev-tools');
  await expect(page.getByRole('heading', { name: 'No access' })).toBeVisible();
});
