import { expect, test, type Page } from '@playwright/test';
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { ADMIN_TOKEN, createUser, expectAccessible, operator, serviceUrl, signIn, type Account } from './service.ts';

// The Reports page over a business whose history the test imports: the figures in its tables, a
// channel filter kept in the address, the CSV of a table, the empty period, and an agent kept out.

let businessId: string;
let owner: Account;
let agent: Account;

/** A day `back` days before today (UTC, the business's zone), at `time`, as the import writes it. */
function at(back: number, time: string): string {
  const day = new Date(Date.now() - back * 86_400_000).toISOString().slice(0, 10);
  return `${day}T${time}:00Z`;
}

const WEEKDAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
const weekdayOf = (timestamp: string) => WEEKDAYS[new Date(timestamp).getUTCDay()];

/** Two WhatsApp conversations and an email one, two and one days ago. */
function history(): object[] {
  const records: object[] = [];
  const conversation = (channel: string, createdAt: string, messages: [string, string, string][]) => {
    const contactId = randomUUID();
    const conversationId = randomUUID();
    records.push({ type: 'contact', id: contactId, first_name: 'Customer', created_at: createdAt });
    records.push({ type: 'conversation', id: conversationId, contact_id: contactId, channel, created_at: createdAt });
    for (const [direction, sender, time] of messages)
      records.push({
        type: 'message',
        id: randomUUID(),
        conversation_id: conversationId,
        direction,
        sender_type: sender,
        text: `${direction} message`,
        status: direction === 'inbound' ? 'RECEIVED' : 'DELIVERED',
        created_at: time,
      });
  };
  conversation('whatsapp', at(2, '10:00'), [
    ['inbound', 'contact', at(2, '10:00')],
    ['outbound', 'ai_agent', at(2, '10:01')],
    ['inbound', 'contact', at(2, '10:05')],
  ]);
  conversation('whatsapp', at(1, '09:00'), [['inbound', 'contact', at(1, '09:00')]]);
  conversation('email', at(1, '15:00'), [
    ['inbound', 'contact', at(1, '15:00')],
    ['outbound', 'human', at(1, '15:30')],
  ]);
  return records;
}

test.beforeAll(async () => {
  ({
    business: { id: businessId },
  } = await operator<{ business: { id: string } }>('POST', '/businesses', { name: 'Reports shop' }));
  owner = await createUser(businessId, 'owner', { name: 'Rita Owner' });
  agent = await createUser(businessId, 'agent', { name: 'Rafa Agent' });
  const response = await fetch(`${serviceUrl()}/admin/v1/businesses/${businessId}/import`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/x-ndjson' },
    body: history()
      .map((record) => JSON.stringify(record))
      .join('\n'),
  });
  const answer = (await response.json()) as { error_count?: number };
  expect(response.status, JSON.stringify(answer)).toBe(200);
  expect(answer.error_count ?? 0, JSON.stringify(answer)).toBe(0);
});

const byChannel = (page: Page) => page.getByRole('table', { name: 'Conversations and messages per channel' });

test('an owner reads the volume report, filters it by channel, and downloads its rows as CSV', async ({ page }) => {
  await signIn(page, owner);
  await expect(page.getByRole('heading', { name: 'Inbox' })).toBeVisible();
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Reports' }).click();
  await expect(page.getByRole('heading', { level: 1, name: 'Reports' })).toBeVisible();
  await expect(page).toHaveURL(/\/dashboard\/reports$/);

  // Conversations opened, messages received, messages sent.
  await expect(byChannel(page).getByRole('row', { name: /WhatsApp/ })).toHaveText(/WhatsApp\s*2\s*3\s*1/);
  await expect(byChannel(page).getByRole('row', { name: /Email/ })).toHaveText(/Email\s*1\s*1\s*1/);
  // The heat map counts the two messages received at 10 two days ago in their cell.
  await expect(page.getByTitle(`${weekdayOf(at(2, '10:00'))} 10:00: 2`)).toHaveText('2');
  await expectAccessible(page);
  // On a phone the charts and tables fit its width, the wide ones scrolling in their own box.
  await page.setViewportSize({ width: 390, height: 844 });
  await expect
    .poll(() => page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth))
    .toBeLessThanOrEqual(0);
  await page.setViewportSize({ width: 1280, height: 800 });

  // Only email: the filter goes into the address and survives a reload.
  await page.getByText('All channels').click();
  await page.getByRole('checkbox', { name: 'Email' }).check();
  await page.getByRole('button', { name: 'Apply' }).click();
  await expect(page).toHaveURL(/[?&]channel=email(&|$)/);
  await expect(byChannel(page).getByRole('row')).toHaveCount(2);
  await expect(byChannel(page).getByRole('row', { name: /Email/ })).toHaveText(/Email\s*1\s*1\s*1/);
  await page.reload();
  await expect(byChannel(page).getByRole('row', { name: /Email/ })).toHaveText(/Email\s*1\s*1\s*1/);
  await expect(byChannel(page).getByRole('row', { name: /WhatsApp/ })).toHaveCount(0);

  // The CSV of the same table, downloaded through the session, holds the same row.
  const downloading = page.waitForEvent('download');
  await page.getByRole('link', { name: 'Download CSV: By channel' }).click();
  const csv = await readFile(await (await downloading).path(), 'utf8');
  expect(csv).toBe('channel,conversations_opened,messages_in,messages_out\r\nemail,1,1,1\r\n');

  // The other reports open with the same period and filter.
  await page.getByRole('navigation', { name: 'Reports' }).getByRole('link', { name: 'Response times' }).click();
  await expect(page).toHaveURL(/\/dashboard\/reports\/speed\?.*channel=email/);
  // The email was answered by a person after 30 minutes; durations read in minutes and hours.
  const summary = page.getByRole('table', { name: 'Response and resolution times, by who answered first' });
  await expect(summary.getByRole('row', { name: /Person/ })).toHaveText(/Person\s*1\s*30 min\s*30 min/);
  await expectAccessible(page);
});

test('a period with nothing to report says so', async ({ page }) => {
  await signIn(page, owner);
  await expect(page.getByRole('heading', { name: 'Inbox' })).toBeVisible();
  await page.goto('/dashboard/reports/volume?since=2020-01-01&until=2020-01-07');
  await expect(page.getByText('Nothing to report in this period.')).toBeVisible();
  await expect(page.getByLabel('From')).toHaveValue('2020-01-01');
  await expect(page.getByLabel('Period')).toHaveValue('custom');
});

test.describe("in a browser whose day is not the business's", () => {
  // Fourteen hours ahead of UTC from 10:00 UTC, eleven behind before: another day than the business's (UTC).
  test.use({ timezoneId: new Date().getUTCHours() >= 10 ? 'Pacific/Kiritimati' : 'Pacific/Pago_Pago' });

  test("a preset counts the business's days, which custom dates start from", async ({ page }) => {
    const dayBefore = (day: string, n: number) =>
      new Date(Date.parse(`${day}T00:00:00Z`) - n * 86_400_000).toISOString().slice(0, 10);
    await signIn(page, owner);
    await expect(page.getByRole('heading', { name: 'Inbox' })).toBeVisible();
    expect(await page.evaluate(() => new Date().toLocaleDateString('sv'))).not.toBe(
      new Date().toISOString().slice(0, 10),
    );
    const first = new Date().toISOString().slice(0, 10);
    await page.goto('/dashboard/reports/volume?period=7');
    const period = page.getByRole('status').filter({ hasText: 'Volume from' });
    await expect(period).toHaveText(/^Volume from \d{4}-\d\d-\d\d to \d{4}-\d\d-\d\d \(UTC\)$/);
    // The business's today, UTC's (either side of a midnight passed meanwhile).
    const [, since, until] = /from (\S+) to (\S+)/.exec((await period.textContent()) ?? '')!;
    expect([first, new Date().toISOString().slice(0, 10)]).toContain(until);
    expect(since).toBe(dayBefore(until, 6));
    await expect(page).toHaveURL(/[?&]period=7(&|$)/);
    await page.getByLabel('Period').selectOption('custom');
    await expect(page.getByLabel('From')).toHaveValue(since);
    await expect(page.getByLabel('To', { exact: true })).toHaveValue(until);
  });
});

test('an agent has no Reports entry and is told they lack access', async ({ page }) => {
  await signIn(page, agent);
  await expect(page.getByRole('heading', { name: 'Inbox' })).toBeVisible();
  await expect(page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Reports' })).toHaveCount(0);
  await page.goto('/dashboard/reports');
  await expect(page.getByRole('alert')).toHaveText(/You lack access to reports/);
});
