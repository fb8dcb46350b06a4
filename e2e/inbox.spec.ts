import { expect, test, type Page } from '@playwright/test';
import { randomBytes } from 'node:crypto';
import {
  inboundMessage,
  metaNotification,
  signedNotification,
  startFakeGraphApi,
  type FakeGraphApi,
} from '../test/helpers/fake-graph-api.ts';
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
} from './service.ts';

// The inbox and a conversation against the real service: the demo's conversations, a WhatsApp channel
// whose Graph API is a fake on this machine, replies, live updates, manual control and isolation.
let graph: FakeGraphApi;
let owner: Account;
let channel: { phoneNumberId: string; appSecret: string; identifier: string };

test.beforeAll(async () => {
  graph = await startFakeGraphApi();
  const demo = await demoBusinessId();
  owner = await createUser(demo, 'owner', { name: 'Inés Romero' });
  channel = {
    phoneNumberId: String(100_000_000_000_000n + BigInt(`0x${randomBytes(5).toString('hex')}`)),
    appSecret: randomBytes(16).toString('hex'),
    identifier: `1555${String(Math.floor(Math.random() * 1e7)).padStart(7, '0')}`,
  };
  await operator('POST', `/businesses/${demo}/channels`, {
    type: 'whatsapp',
    identifier: channel.identifier,
    provider: {
      kind: 'whatsapp_cloud',
      phone_number_id: channel.phoneNumberId,
      access_token: graph.accessToken,
      app_secret: channel.appSecret,
      verify_token: 'e2e-verify-token',
      api_base_url: graph.baseUrl,
    },
  });
});

test.afterAll(async () => {
  await graph.close();
});

/** A contact writes on the channel: a notification signed as Meta signs it, posted to the service's webhook. */
async function contactWrites(from: string, name: string, text: string, atSeconds?: number): Promise<void> {
  const message = inboundMessage(from, 'text', { body: text });
  if (atSeconds !== undefined) message.timestamp = String(atSeconds);
  const body = metaNotification({
    phoneNumberId: channel.phoneNumberId,
    displayPhoneNumber: channel.identifier,
    contacts: [{ waId: from, name }],
    messages: [message],
  });
  const { payload, headers } = signedNotification(body, channel.appSecret);
  const response = await fetch(`${serviceUrl()}/channels/whatsapp/webhook`, { method: 'POST', headers, body: payload });
  expect(response.status).toBe(200);
}

const conversations = (page: Page) => page.getByRole('list', { name: 'Conversations' });
const phone = () => `54911${String(Math.floor(Math.random() * 1e8)).padStart(8, '0')}`;

test('the demo inbox lists conversations; one opens beside the list; axe finds nothing grave', async ({ page }) => {
  await signIn(page, owner);
  await expect(conversations(page).getByRole('link').first()).toBeVisible();
  expect(await conversations(page).getByRole('link').count()).toBeGreaterThan(3);
  await expectAccessible(page);
  await screenshot(page, 'inbox');

  // The keyboard: j moves to the first row, Enter opens it.
  await conversations(page).getByRole('link').first().focus();
  await page.keyboard.press('j');
  await page.keyboard.press('Enter');
  await expect(page).toHaveURL(/\/dashboard\/conversations\/[0-9a-f-]{36}$/);
  await expect(page.getByRole('list', { name: 'Messages' }).getByRole('listitem').first()).toBeVisible();
  await expect(conversations(page)).toBeVisible();
  await expectAccessible(page);
});

test('a reply goes to the Graph API, and a message arriving appears without a reload', async ({ page }) => {
  const from = phone();
  await contactWrites(from, 'Lucía Gómez', 'Hola, ¿tienen envío?');
  await signIn(page, owner);
  await page.getByRole('searchbox', { name: 'Search' }).fill(from);
  await expect(conversations(page).getByRole('link')).toHaveCount(1);
  await conversations(page)
    .getByRole('link', { name: /Lucía Gómez/ })
    .click();
  await expect(page.getByRole('list', { name: 'Messages' })).toContainText('Hola, ¿tienen envío?');

  const sendsBefore = graph.sends().length;
  const box = page.getByRole('textbox', { name: 'Message' });
  await box.fill('Sí, a todo el país');
  await box.press('Shift+Enter');
  await box.pressSequentially('Llega en 48 h');
  await box.press('Enter');
  await expect(box).toHaveValue('');
  await expect.poll(() => graph.sends().length).toBe(sendsBefore + 1);
  const sent = graph.sends().at(-1)!.body as { to: string; text: { body: string } };
  expect(sent.to).toBe(from);
  expect(sent.text.body).toBe('Sí, a todo el país\nLlega en 48 h');
  await expect(page.getByRole('list', { name: 'Messages' })).toContainText('Llega en 48 h');

  // The contact answers while the page is open. Meta stamps a message to the whole second, so an answer within
  // the reply's second would be stored before it: the answer is stamped the second after.
  await contactWrites(from, 'Lucía Gómez', '¡Genial, gracias!', Math.floor(Date.now() / 1000) + 1);
  await expect(page.getByRole('list', { name: 'Messages' })).toContainText('¡Genial, gracias!', { timeout: 5_000 });
  await expect(conversations(page).getByRole('link', { name: /Lucía Gómez/ })).toContainText('¡Genial, gracias!');
  // With the search cleared, the conversation leads the list.
  await page.getByRole('searchbox', { name: 'Search' }).fill('');
  await expect(conversations(page).getByRole('link').first()).toContainText('Lucía Gómez');
  await expect(conversations(page).getByRole('link').nth(1)).toBeVisible();
  await screenshot(page, 'conversation');
});

test('a reply from the dashboard fires no message_created webhook, while a message from the contact does', async ({
  page,
}) => {
  // A receiver on loopback for the business's message_created webhook: every body it is sent.
  const receiver = await startReceiver();
  const demo = await demoBusinessId();
  const { webhook } = await operator<{ webhook: { id: string } }>('POST', `/businesses/${demo}/webhooks`, {
    event: 'message_created',
    url: `${receiver.url}/hook`,
  });
  try {
    const from = phone();
    const ofThisContact = () => receiver.requests.map((r) => r.body).filter((body) => body.includes(from));
    await contactWrites(from, 'Ana Webhook', 'Hola, ¿abren el sábado?');
    await expect.poll(() => ofThisContact().length).toBe(1);

    await signIn(page, owner);
    await page.getByRole('searchbox', { name: 'Search' }).fill(from);
    await conversations(page)
      .getByRole('link', { name: /Ana Webhook/ })
      .click();
    const sendsBefore = graph.sends().length;
    const box = page.getByRole('textbox', { name: 'Message' });
    await box.fill('Sí, de 10 a 14');
    await box.press('Enter');
    await expect.poll(() => graph.sends().length).toBe(sendsBefore + 1);
    expect((graph.sends().at(-1)!.body as { to: string }).to).toBe(from);
    await expect(page.getByRole('list', { name: 'Messages' })).toContainText('Sí, de 10 a 14');

    // A conversation's deliveries go out in the order its messages were written: once the contact's next
    // message has arrived, a delivery of the reply, written before it, would have too.
    await contactWrites(from, 'Ana Webhook', 'Perfecto, gracias');
    await expect.poll(() => ofThisContact().some((body) => body.includes('Perfecto, gracias'))).toBe(true);
    await page.waitForTimeout(1_000);
    const texts = ofThisContact().map(
      (body) => (JSON.parse(body) as { payload: { text: string | null } }).payload.text,
    );
    expect(texts).toEqual(['Hola, ¿abren el sábado?', 'Perfecto, gracias']);
  } finally {
    await operator('DELETE', `/businesses/${demo}/webhooks/${webhook.id}`);
    await receiver.close();
  }
});

test('taking manual control is an event of the public API', async ({ page }) => {
  const from = phone();
  await contactWrites(from, 'Pablo Ruiz', 'Quiero hablar con una persona');
  await signIn(page, owner);
  await page.getByRole('searchbox', { name: 'Search' }).fill(from);
  await expect(conversations(page).getByRole('link')).toHaveCount(1);
  await conversations(page)
    .getByRole('link', { name: /Pablo Ruiz/ })
    .click();
  const id = /conversations\/([0-9a-f-]{36})/.exec(page.url())?.[1] ?? 'no id';
  await page.getByRole('button', { name: 'Take over' }).click();
  await expect(page.getByRole('button', { name: 'Hand back to AI' })).toBeVisible();
  await expect(page.getByRole('list', { name: 'Messages' })).toContainText('took over from the AI');

  const key = /X-API-Key: (\S+?)'?$/m.exec(process.env.E2E_SERVICE_OUTPUT ?? '')?.[1];
  expect(key).toBeTruthy();
  const since = new Date(Date.now() - 3_600_000).toISOString();
  const events = `${serviceUrl()}/external/v2/events?since=${since}&types=manual_control_activated`;
  const response = await fetch(events, {
    headers: { 'x-api-key': key! },
  });
  const text = await response.text();
  expect(response.status, text).toBe(200);
  expect(text).toContain(id);
  expect(text).toContain('manual_control_activated');
});

test('a conversation gets a team and a user together, and the inbox filters by team', async ({ page }) => {
  const demo = await demoBusinessId();
  const name = `Facturación ${randomBytes(3).toString('hex')}`;
  const { team } = await operator<{ team: { id: string } }>('POST', `/businesses/${demo}/teams`, { name });
  const from = phone();
  await contactWrites(from, 'Marta Díaz', 'Tengo una duda con la factura');
  await signIn(page, owner);
  await page.getByRole('searchbox', { name: 'Search' }).fill(from);
  await expect(conversations(page).getByRole('link')).toHaveCount(1);
  await conversations(page)
    .getByRole('link', { name: /Marta Díaz/ })
    .click();

  const assignment = page.getByRole('group', { name: 'Assignment' });
  await assignment.getByRole('combobox', { name: 'Team' }).selectOption({ label: name });
  await expect(assignment.getByRole('combobox', { name: 'Team' })).toHaveValue(team.id);
  await assignment.getByRole('button', { name: 'Assign to me' }).click();
  // The team stays when the user is set: a queue and the person working it.
  await expect(assignment.getByRole('combobox', { name: 'Assignee' }).locator('option:checked')).toHaveText(
    'Inés Romero',
  );
  await expect(assignment.getByRole('button', { name: 'Assign to me' })).toHaveCount(0);
  await expect(assignment.getByRole('combobox', { name: 'Team' })).toHaveValue(team.id);
  await page.reload();
  await expect(assignment.getByRole('combobox', { name: 'Team' })).toHaveValue(team.id);
  await expect(assignment.getByRole('combobox', { name: 'Assignee' }).locator('option:checked')).toHaveText(
    'Inés Romero',
  );

  // The inbox's team filter, kept in the address.
  await page.goto('/dashboard');
  const filter = page.getByRole('search').getByRole('combobox', { name: 'Team' });
  await filter.selectOption({ label: name });
  await expect(page).toHaveURL(new RegExp(`[?&]team=${team.id}`));
  await expect(conversations(page).getByRole('link')).toHaveCount(1);
  await expect(conversations(page).getByRole('link')).toContainText('Marta Díaz');
  await page.reload();
  await expect(filter).toHaveValue(team.id);
  await expect(conversations(page).getByRole('link')).toHaveCount(1);
  await page.getByRole('search').getByRole('combobox', { name: 'Assignee' }).selectOption('unassigned');
  await expect(page.getByText('No conversations match.')).toBeVisible();
});

test("another business's session never sees this business's conversation, by its address either", async ({ page }) => {
  await signIn(page, owner);
  await conversations(page).getByRole('link').first().click();
  const url = page.url();
  const first = await conversations(page).getByRole('link').first().innerText();

  const { business } = await operator<{ business: { id: string } }>('POST', '/businesses', { name: 'Other shop' });
  const stranger = await createUser(business.id, 'owner', { name: 'Otro Dueño' });
  await page.getByRole('button', { name: 'Sign out' }).click();
  await signIn(page, stranger);
  await expect(page.getByText('No conversations match.')).toBeVisible();
  await page.goto(url);
  await expect(page.getByRole('heading', { name: 'Conversation not found' })).toBeVisible();
  await expect(page.getByText(first.split('\n')[0] ?? first)).toHaveCount(0);
});

test('on a phone the list and a conversation each take the screen', async ({ page }) => {
  await page.setViewportSize({ width: 390, height: 844 });
  await signIn(page, owner);
  await conversations(page).getByRole('link').first().click();
  await expect(conversations(page)).toBeHidden();
  await expect(page.getByRole('textbox', { name: 'Message' })).toBeVisible();
  await page.getByRole('link', { name: '← Inbox' }).click();
  await expect(conversations(page)).toBeVisible();
  const width = await page.evaluate(() => document.documentElement.scrollWidth);
  expect(width).toBeLessThanOrEqual(390);
});
