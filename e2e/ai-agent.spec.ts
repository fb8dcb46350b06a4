import { expect, test, type Page } from '@playwright/test';
import { randomBytes } from 'node:crypto';
import {
  inboundMessage,
  metaNotification,
  signedNotification,
  startFakeGraphApi,
  type FakeGraphApi,
} from '../test/helpers/fake-graph-api.ts';
import { createUser, expectAccessible, operator, serviceUrl, signIn, type Account } from './service.ts';

// The AI agent in the dashboard: an owner edits an agent's activation rules, and a conversation shows the
// agent's runs. The runs are the service's own: a contact writes on a channel whose default agent
// answers through the scripted model the global setup gives the service (LLM_URL), and the reply leaves
// through a fake Graph API on loopback.
const DESKTOP = { width: 1280, height: 800 };
const PHONE = { width: 390, height: 844 };

let graph: FakeGraphApi;
let businessId: string;
let owner: Account;
let channel: { id: string; phoneNumberId: string; appSecret: string; identifier: string };
let runsBot: string;
let rulesBot: string;

test.beforeAll(async () => {
  graph = await startFakeGraphApi();
  ({
    business: { id: businessId },
  } = await operator<{ business: { id: string } }>('POST', '/businesses', { name: 'AI shop' }));
  owner = await createUser(businessId, 'owner', { name: 'Alma Owner' });
  const identifier = `1555${String(Math.floor(Math.random() * 1e7)).padStart(7, '0')}`;
  const phoneNumberId = String(100_000_000_000_000n + BigInt(`0x${randomBytes(5).toString('hex')}`));
  const appSecret = randomBytes(16).toString('hex');
  const created = await operator<{ channel: { id: string } }>('POST', `/businesses/${businessId}/channels`, {
    type: 'whatsapp',
    identifier,
    name: 'Shop line',
    provider: {
      kind: 'whatsapp_cloud',
      phone_number_id: phoneNumberId,
      access_token: graph.accessToken,
      app_secret: appSecret,
      verify_token: 'e2e-ai-verify-token',
      api_base_url: graph.baseUrl,
    },
  });
  channel = { id: created.channel.id, phoneNumberId, appSecret, identifier };
  const agent = async (body: object) =>
    (await operator<{ agent: { id: string } }>('POST', `/businesses/${businessId}/agents`, body)).agent.id;
  // No wait before answering, so that the run ends within the test.
  runsBot = await agent({ name: 'Runs bot', model: 'e2e-model', activation_rules: { debounce_seconds: 0 } });
  rulesBot = await agent({ name: 'Rules bot' });
  await operator('PATCH', `/businesses/${businessId}/channels/${channel.id}`, { agent_id: runsBot });
});

test.afterAll(async () => {
  await graph.close();
});

/**
 * What the page's scripts log to the console or throw: nothing is expected. The browser's own line for
 * each answer of 400 or more is left out: the sign-in page's read of the session answers 401, and a
 * refusal the page shows answers 400.
 */
function consoleOf(page: Page): string[] {
  const logged: string[] = [];
  page.on('console', (message) => {
    if (!message.text().startsWith('Failed to load resource')) logged.push(`${message.type()}: ${message.text()}`);
  });
  page.on('pageerror', (error) => logged.push(`error: ${error.message}`));
  return logged;
}

/** No serious accessibility violation, and nothing wider than the screen. */
async function expectFits(page: Page): Promise<void> {
  await expectAccessible(page);
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  expect(overflow).toBeLessThanOrEqual(0);
}

test("an owner edits an agent's activation rules; a bad time zone is refused beside the form", async ({ page }) => {
  const logged = consoleOf(page);
  const stored = async () =>
    (
      (await (await page.request.get(`/dashboard/api/agents/${rulesBot}`)).json()) as {
        agent: { activation_rules: object };
      }
    ).agent.activation_rules;
  await signIn(page, owner);
  await expect(page.getByRole('heading', { level: 1, name: 'Inbox' })).toBeVisible();
  await page.goto('/dashboard/settings/agents');
  await page.getByRole('button', { name: 'Configure Rules bot' }).click();
  const form = page.locator('form').filter({ has: page.getByRole('button', { name: 'Save rules' }) });
  await expect(page.getByRole('heading', { level: 2, name: 'When Rules bot answers' })).toBeVisible();

  await form.getByRole('checkbox', { name: `Shop line (${channel.identifier})` }).check();
  await form.getByLabel('Only contacts with any of these tags').fill('vip, wholesale, vip');
  await form.getByLabel('No contact with any of these tags').fill('no_ai');
  await form.getByRole('checkbox', { name: 'Answer only within opening hours' }).check();
  await form.getByLabel('Time zone').fill('Mars/Olympus');
  const weekdays = form.getByRole('group', { name: 'Window 1' });
  await weekdays.getByRole('checkbox', { name: 'Sat' }).check();
  await weekdays.getByLabel('From').fill('08:30');
  await form.getByRole('button', { name: 'Add window' }).click();
  const nights = form.getByRole('group', { name: 'Window 2' });
  await nights.getByRole('checkbox', { name: 'Sat' }).uncheck();
  await nights.getByRole('checkbox', { name: 'Sun' }).check();
  await nights.getByLabel('From').fill('22:00');
  await nights.getByLabel('To').fill('02:00');
  await form.getByLabel('Wait before answering (seconds)').fill('1.5');
  await form.getByRole('button', { name: 'Save rules' }).click();

  // The service's refusal, beside the form and on the field it names; nothing is stored.
  await expect(form.getByRole('alert')).toContainText('not an IANA time zone');
  await expect(form.getByLabel('Time zone')).toHaveAttribute('aria-invalid', 'true');
  expect(await stored()).toEqual({});
  await expectAccessible(page);

  await form.getByLabel('Time zone').fill('Europe/Madrid');
  await form.getByRole('button', { name: 'Save rules' }).click();
  await expect(form.getByRole('status')).toHaveText('Saved');
  await expect(form.getByRole('alert')).toHaveCount(0);
  await expect(form.getByLabel('Time zone')).not.toHaveAttribute('aria-invalid');
  expect(await stored()).toEqual({
    enabled: true,
    channels: [channel.id],
    contact_tags: { any: ['vip', 'wholesale'], none: ['no_ai'] },
    opening_hours: {
      enabled: true,
      time_zone: 'Europe/Madrid',
      windows: [
        { days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat'], from: '08:30', to: '18:00' },
        { days: ['sun'], from: '22:00', to: '02:00' },
      ],
    },
    debounce_seconds: 1.5,
  });

  // Turned off, the agent says why it does not answer; the rest is merged into what was stored.
  await form.getByRole('checkbox', { name: 'Answers messages' }).uncheck();
  await form.getByRole('checkbox', { name: 'Answer only within opening hours' }).uncheck();
  await form.getByRole('button', { name: 'Save rules' }).click();
  await expect(form.getByRole('status')).toHaveText('Saved');
  await expect(page.getByRole('row', { name: /Rules bot/ })).toContainText('activation_rules.enabled is false');
  expect(await stored()).toMatchObject({
    enabled: false,
    opening_hours: { enabled: false, time_zone: 'Europe/Madrid' },
    debounce_seconds: 1.5,
  });

  // Opened again, the form shows what is stored.
  await page.reload();
  await page.getByRole('button', { name: 'Configure Rules bot' }).click();
  await expect(form.getByRole('checkbox', { name: 'Answers messages' })).not.toBeChecked();
  await expect(form.getByLabel('Only contacts with any of these tags')).toHaveValue('vip, wholesale');
  await form.getByRole('checkbox', { name: 'Answer only within opening hours' }).check();
  await expect(form.getByLabel('Time zone')).toHaveValue('Europe/Madrid');
  await expect(form.getByRole('group', { name: 'Window 2' }).getByLabel('To')).toHaveValue('02:00');
  for (const viewport of [DESKTOP, PHONE]) {
    await page.setViewportSize(viewport);
    await expectFits(page);
  }
  expect(logged).toEqual([]);
});

test("a conversation shows its AI agent's runs, paged and live, and why the agent does not answer once turned off", async ({
  page,
}) => {
  const logged = consoleOf(page);
  const from = `54911${String(Math.floor(Math.random() * 1e8)).padStart(8, '0')}`;
  const repliesTo = () =>
    graph
      .sends()
      .filter((send) => (send.body as { to?: string }).to === from)
      .map((send) => (send.body as { text?: { body?: string } }).text?.body);
  // The contact writes `text`; the channel's agent answers it through the model, and the reply leaves
  // through the Graph API.
  const exchange = async (text: string) => {
    const before = repliesTo().length;
    const notification = metaNotification({
      phoneNumberId: channel.phoneNumberId,
      displayPhoneNumber: channel.identifier,
      contacts: [{ waId: from, name: 'Rita Runs' }],
      messages: [inboundMessage(from, 'text', { body: text })],
    });
    const { payload, headers } = signedNotification(notification, channel.appSecret);
    const posted = await fetch(`${serviceUrl()}/channels/whatsapp/webhook`, { method: 'POST', headers, body: payload });
    expect(posted.status).toBe(200);
    await expect.poll(() => repliesTo().slice(before)).toEqual([`Reply to: ${text}`]);
  };
  const text = 'Hola, ¿llegó mi pedido?';
  await exchange(text);

  await signIn(page, owner);
  await page.getByRole('searchbox', { name: 'Search' }).fill(from);
  await page
    .getByRole('list', { name: 'Conversations' })
    .getByRole('link', { name: /Rita Runs/ })
    .click();
  await expect(page.getByRole('list', { name: 'Messages' })).toContainText(`Reply to: ${text}`);
  const open = page.getByRole('button', { name: 'AI runs' });
  await open.click();
  const dialog = page.getByRole('dialog', { name: 'AI agent runs' });
  const runs = dialog.getByRole('list', { name: 'Runs, newest first' }).getByRole('article');
  await expect(runs).toHaveCount(1);
  const run = runs.first();
  await expect(run.getByRole('heading', { level: 3 })).toContainText('Replied');
  await expect(run).toContainText('Outcome');
  await expect(run.getByRole('heading', { name: 'Messages answered' })).toBeVisible();
  await expect(run).toContainText(text);
  await expect(run).toContainText(/e2e-model · \d+ tokens in, 7 out · \d+ ms/);
  await expect(run).toContainText(`Reply to: ${text}`);
  await expect(run).toContainText("bot_start: the agent's first reply in the conversation");
  await expect(run.locator('dd time')).toHaveCount(2);
  await expect(dialog.getByRole('button', { name: 'Load older runs' })).toHaveCount(0);
  await expectFits(page);
  await page.keyboard.press('Escape');
  await expect(dialog).toBeHidden();
  await expect(open).toBeFocused();

  // Ten more runs: the dialog shows the newest ten, and the first on asking.
  for (let n = 2; n <= 11; n++) await exchange(`Pregunta ${n}`);
  await open.click();
  await expect(runs).toHaveCount(10);
  await expect(runs.first()).toContainText('Reply to: Pregunta 11');
  await expect(runs.first()).not.toContainText('bot_start');
  await dialog.getByRole('button', { name: 'Load older runs' }).click();
  await expect(runs).toHaveCount(11);
  await expect(runs.last()).toContainText(`Reply to: ${text}`);
  await expect(dialog.getByRole('button', { name: 'Load older runs' })).toHaveCount(0);
  // A run made while the dialog is open appears in it, above the others.
  await exchange('¿Y el envío?');
  await expect(runs).toHaveCount(12);
  await expect(runs.first()).toContainText('Reply to: ¿Y el envío?');
  await page.keyboard.press('Escape');

  // Turned off through the session API, the agent's reason shows on the conversation and in its runs.
  const session = (await (await page.request.get('/dashboard/api/session')).json()) as { csrf_token: string };
  const patched = await page.request.patch(`/dashboard/api/agents/${runsBot}`, {
    headers: { 'x-csrf-token': session.csrf_token },
    data: { agent: { activation_rules: { enabled: false } } },
  });
  expect(patched.status()).toBe(200);
  await page.reload();
  const reason = 'Runs bot does not answer: activation_rules.enabled is false.';
  await expect(page.getByText(reason)).toBeVisible();
  await page.setViewportSize(PHONE);
  await page.getByRole('button', { name: 'AI runs' }).click();
  await expect(dialog).toContainText(reason);
  await expect(runs).toHaveCount(10);
  await expectFits(page);
  await dialog.getByRole('button', { name: 'Close' }).click();
  await expect(dialog).toBeHidden();
  expect(logged).toEqual([]);
});
