import { expect, test, type Browser, type Page } from '@playwright/test';
import { createHmac, randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  createUser,
  demoBusinessId,
  expectAccessible,
  operator,
  serviceUrl,
  signIn,
  startReceiver,
  type Account,
  type Receiver,
} from './service.ts';

// The website widget on a sample shop page this test serves on loopback (another origin than the
// service's): a visitor writes, the dashboard and the message_created webhook see it, each side sees
// the other typing, the team's reply appears in the widget without a reload; a visitor sends a picture
// and leaves an email address; a signed-in customer keeps one history across devices; a wrong HMAC is
// refused.
const SECRET = randomBytes(16).toString('hex');
let site: Server;
let siteUrl: string;
let widgetId: string;
let owner: Account;
let receiver: Receiver;
let webhookId: string;
let demo: string;

/** The shop's page: one script tag, with the customer's identity and its server's HMAC when signed in. */
function shopPage(identity?: { externalId: string; name: string; hash: string }): string {
  const signed = identity
    ? ` data-external-id="${identity.externalId}" data-name="${identity.name}" data-identity-hash="${identity.hash}"`
    : '';
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Shop</title>
<style>* { color: red !important; font-size: 40px !important; }</style></head>
<body><main><h1>The shop</h1></main>
<script src="${serviceUrl()}/widget.js" data-channel="${widgetId}"${signed}></script></body></html>`;
}

test.beforeAll(async () => {
  demo = await demoBusinessId();
  owner = await createUser(demo, 'owner', { name: 'Widget Owner' });
  site = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://shop');
    const externalId = url.searchParams.get('customer');
    const hash = url.searchParams.get('hash');
    const identity = externalId && hash ? { externalId, name: 'Ana Lima', hash } : undefined;
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(shopPage(identity));
  });
  await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
  siteUrl = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
  widgetId = `shop_${randomBytes(6).toString('hex')}`;
  await operator('POST', `/businesses/${demo}/channels`, {
    type: 'web_embed',
    identifier: widgetId,
    provider: { kind: 'web_embed', widget_id: widgetId, allowed_origins: [siteUrl], identity_secret: SECRET },
  });
  receiver = await startReceiver();
  ({
    webhook: { id: webhookId },
  } = await operator<{ webhook: { id: string } }>('POST', `/businesses/${demo}/webhooks`, {
    event: 'message_created',
    url: `${receiver.url}/hook`,
  }));
});

test.afterAll(async () => {
  await operator('DELETE', `/businesses/${demo}/webhooks/${webhookId}`);
  await receiver.close();
  await new Promise((resolve) => site.close(resolve));
});

const panelLog = (page: Page) => page.getByRole('log', { name: 'Messages' });

async function visit(browser: Browser, path = '/', sessionDelayMs = 0): Promise<Page> {
  const page = await (await browser.newContext()).newPage();
  if (sessionDelayMs > 0)
    await page.route('**/sessions', async (route) => {
      await new Promise((resolve) => setTimeout(resolve, sessionDelayMs));
      await route.continue();
    });
  await page.goto(`${siteUrl}${path}`);
  return page;
}

async function write(page: Page, text: string): Promise<void> {
  const box = page.getByRole('textbox', { name: 'Your message' });
  await box.fill(text);
  await box.press('Enter');
  await expect(box).toHaveValue('');
}

test('a visitor writes; the dashboard and the webhook see it; the reply appears in the widget without a reload', async ({
  page,
  browser,
}) => {
  const visitor = await visit(browser);
  await visitor.getByRole('button', { name: 'Open chat' }).click();
  await expect(visitor.getByRole('dialog', { name: 'Chat' })).toBeVisible();
  // The host page's styles do not reach the widget (shadow root).
  const size = await visitor
    .getByRole('textbox', { name: 'Your message' })
    .evaluate((e) => getComputedStyle(e).fontSize);
  expect(size).toBe('16px');
  await expectAccessible(visitor);
  const question = `Do you ship to Lisbon? ${randomBytes(3).toString('hex')}`;
  await write(visitor, question);
  await expect(panelLog(visitor)).toContainText(question);
  await expect.poll(() => receiver.requests.some((r) => r.body.includes(question))).toBe(true);

  await signIn(page, owner);
  const conversations = page.getByRole('list', { name: 'Conversations' });
  await conversations.getByRole('link', { name: new RegExp(question.slice(-6)) }).click();
  await expect(page.getByRole('list', { name: 'Messages' })).toContainText(question);
  // Each side sees the other writing.
  await visitor.getByRole('textbox', { name: 'Your message' }).pressSequentially('And to Porto');
  await expect(page.getByText('The customer is typing…')).toBeVisible();
  const box = page.getByRole('textbox', { name: 'Message' });
  await box.pressSequentially('Yes');
  await expect(visitor.getByText('Widget Owner is typing…')).toBeVisible();
  await box.fill('Yes, in 3 days');
  await box.press('Enter');
  await expect(panelLog(visitor)).toContainText('Yes, in 3 days');

  // The session survives a reload: the history is there.
  await visitor.reload();
  await visitor.getByRole('button', { name: 'Open chat' }).click();
  await expect(panelLog(visitor)).toContainText(question);
  await expect(panelLog(visitor)).toContainText('Yes, in 3 days');
});

test('a signed-in customer keeps one history on two devices; a wrong HMAC is refused', async ({ browser }) => {
  const customer = `cust-${randomBytes(4).toString('hex')}`;
  const hash = createHmac('sha256', SECRET).update(customer).digest('hex');
  const phone = await visit(browser, `/?customer=${customer}&hash=${hash}`);
  await phone.getByRole('button', { name: 'Open chat' }).click();
  await write(phone, 'Written on my phone');
  await expect(panelLog(phone)).toContainText('Written on my phone');
  await expect.poll(() => receiver.requests.some((r) => r.body.includes('Written on my phone'))).toBe(true);

  const laptop = await visit(browser, `/?customer=${customer}&hash=${hash}`);
  await laptop.getByRole('button', { name: 'Open chat' }).click();
  await expect(panelLog(laptop)).toContainText('Written on my phone');

  // Signed out on the phone: the page has no identity, and the customer's conversation is not shown.
  const anonymous = phone.waitForResponse((r) => r.url().endsWith('/sessions') && r.request().method() === 'POST');
  await phone.goto(`${siteUrl}/`);
  const answer = (await (await anonymous).json()) as { verified: boolean; messages: unknown[] };
  expect(answer).toMatchObject({ verified: false, messages: [] });

  const forged = await (await browser.newContext()).newPage();
  const refused = forged.waitForResponse((r) => r.url().endsWith('/sessions') && r.request().method() === 'POST');
  await forged.goto(`${siteUrl}/?customer=${customer}&hash=${'0'.repeat(64)}`);
  expect((await refused).status()).toBe(401);
});

test('a visitor sends a picture, and leaves an email address when leaving unanswered', async ({ browser }) => {
  // The widget's session answers late: a file chosen before it is sent once it comes.
  const visitor = await visit(browser, '/', 1500);
  await visitor.getByRole('button', { name: 'Open chat' }).click();
  const pixel = Buffer.from(
    'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==',
    'base64',
  );
  await visitor.getByLabel('Send a file').setInputFiles({ name: 'pixel.png', mimeType: 'image/png', buffer: pixel });
  await expect(panelLog(visitor).getByRole('img', { name: 'pixel.png' })).toBeVisible();
  await expect.poll(() => receiver.requests.some((r) => r.body.includes('"type":"image"'))).toBe(true);

  // Closed with the picture unanswered: on the next look the widget asks for an address.
  await visitor.getByRole('dialog', { name: 'Chat' }).getByRole('button', { name: 'Close chat' }).click();
  await visitor.getByRole('button', { name: 'Open chat' }).click();
  const email = visitor.getByRole('textbox', { name: /email address/ });
  await expect(email).toBeVisible();
  await expectAccessible(visitor);
  const address = `visitor-${randomBytes(3).toString('hex')}@example.com`;
  await email.fill(address);
  await visitor.getByRole('button', { name: 'Save' }).click();
  await expect(email).toBeHidden();
  const { key } = await operator<{ key: string }>('POST', `/businesses/${demo}/api-keys`, {});
  const found = await fetch(`${serviceUrl()}/external/v2/contacts?email=${encodeURIComponent(address)}`, {
    headers: { 'x-api-key': key },
  });
  expect(((await found.json()) as { results: unknown[] }).results).toHaveLength(1);
});
