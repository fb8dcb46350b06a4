import { expect, test, type Page } from '@playwright/test';
import { createUser, demoBusinessId, expectAccessible, operator, serviceUrl, signIn, type Account } from './service.ts';

// The contacts pages: the list and its search, a contact's page, its edit form, the merge and delete
// dialogs, at a desktop's width and a phone's.
const PHONE = { width: 390, height: 844 };

let agent: Account;
let admin: Account;
let apiKey: string;
let businessId: string;
const run = Math.random().toString(36).slice(2, 8);

/** A contact made through the public API, as a business's backend would. */
async function createContact(body: object): Promise<string> {
  const response = await fetch(`${serviceUrl()}/external/v2/contacts`, {
    method: 'POST',
    headers: { 'x-api-key': apiKey, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (response.status !== 201) throw new Error(`create contact: ${response.status} ${await response.text()}`);
  return ((await response.json()) as { contact: { id: string } }).contact.id;
}

test.beforeAll(async () => {
  businessId = await demoBusinessId();
  agent = await createUser(businessId, 'agent', { name: 'Lucía Gómez' });
  admin = await createUser(businessId, 'admin', { name: 'Marta Admin' });
  ({ key: apiKey } = await operator<{ key: string }>('POST', `/businesses/${businessId}/api-keys`, {}));
  await operator('POST', `/businesses/${businessId}/contact-fields`, { key: `plan_${run}`, name: `Plan ${run}` });
});

const heading = (page: Page, name: string) => page.getByRole('heading', { level: 1, name });

test('the list finds a contact, whose page is edited; both pages pass axe at 1280 and 390 px', async ({ page }) => {
  const email = `edit.${run}@example.com`;
  const id = await createContact({ first_name: 'Rosa', last_name: 'Ibáñez', email, tags: ['lead'] });
  await signIn(page, agent);
  await expect(page).toHaveURL(/\/dashboard$/);
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Contacts' }).click();
  await expect(heading(page, 'Contacts')).toBeVisible();
  await expect(page.getByRole('list', { name: 'Contacts' })).toBeVisible();
  await expectAccessible(page);

  await page.getByLabel('Search by email, phone or external id').fill(email.toUpperCase());
  await page.getByRole('button', { name: 'Search' }).click();
  await expect(page.getByText('1 contact matches')).toBeVisible();
  await page.getByRole('link', { name: /Rosa Ibáñez/ }).click();
  await expect(page).toHaveURL(new RegExp(`/dashboard/contacts/${id}$`));
  await expect(heading(page, 'Rosa Ibáñez')).toBeVisible();
  await expectAccessible(page);

  await page.getByRole('textbox', { name: 'Name', exact: true }).fill('Rosa María Ibáñez');
  await page.getByRole('textbox', { name: `Plan ${run}`, exact: true }).fill('gold');
  await page.getByRole('textbox', { name: 'Tags', exact: true }).fill('lead, vip');
  await page.getByRole('button', { name: 'Save changes' }).click();
  await expect(heading(page, 'Rosa María Ibáñez')).toBeVisible();
  const customFields = page.getByRole('region', { name: 'Custom fields' });
  await expect(customFields).toContainText(`Plan ${run}`);
  await expect(customFields).toContainText('gold');
  await expect(page.getByRole('region', { name: 'Tags' }).getByRole('listitem')).toHaveText(['lead', 'vip']);

  // The same pages on a phone.
  await page.setViewportSize(PHONE);
  await page.reload();
  await expect(heading(page, 'Rosa María Ibáñez')).toBeVisible();
  await expectAccessible(page);
  await page.goto('/dashboard/contacts');
  await expect(heading(page, 'Contacts')).toBeVisible();
  await expectAccessible(page);
});

test('merging from a contact’s page, keeping the other contact, lands on the kept one', async ({ page }) => {
  const hereEmail = `dup.${run}@example.com`;
  const otherEmail = `kept.${run}@example.com`;
  const here = await createContact({ first_name: 'Pablo', last_name: 'Ruiz', email: hereEmail, tags: ['a'] });
  const kept = await createContact({
    first_name: 'Pablito',
    last_name: 'Ruiz',
    email: otherEmail,
    phone_number: '+5491155501234',
    tags: ['b'],
  });
  await signIn(page, agent);
  await expect(page).toHaveURL(/\/dashboard$/);
  await page.goto(`/dashboard/contacts/${here}`);
  await expect(heading(page, 'Pablo Ruiz')).toBeVisible();

  await page.getByRole('button', { name: 'Merge with another contact…' }).click();
  const dialog = page.getByRole('dialog', { name: 'Merge contacts' });
  await dialog.getByLabel('Find the other contact by email, phone or external id').fill(otherEmail);
  await dialog.getByRole('button', { name: 'Find' }).click();
  await dialog.getByRole('radio', { name: /Pablito Ruiz/ }).check();
  await dialog.getByRole('radio', { name: 'Keep Pablito Ruiz' }).check();
  // Both have a first name and an email: keep this page's first name, the kept contact's email.
  await dialog.getByRole('group', { name: 'First name' }).getByRole('radio', { name: 'Pablo' }).check();
  await expect(dialog.getByRole('group', { name: 'Email' }).getByRole('radio', { name: otherEmail })).toBeChecked();
  await expectAccessible(page);
  await dialog.getByRole('button', { name: 'Merge contacts' }).click();

  await expect(page).toHaveURL(new RegExp(`/dashboard/contacts/${kept}$`));
  await expect(heading(page, 'Pablo Ruiz')).toBeVisible();
  const details = page.getByRole('region', { name: 'Details' });
  await expect(details).toContainText(otherEmail);
  await expect(details).toContainText('+5491155501234');
  await expect(page.getByRole('region', { name: 'Aliases' })).toContainText(hereEmail);
  await expect(page.getByRole('region', { name: 'Tags' }).getByRole('listitem')).toHaveText(['b', 'a']);
  // The contact that went is gone; a search by its email finds the kept one.
  await page.goto(`/dashboard/contacts/${here}`);
  await expect(page.getByRole('alert')).toHaveText('This contact does not exist.');
  await page.goto(`/dashboard/contacts?q=${encodeURIComponent(hereEmail)}`);
  await page.getByRole('link', { name: /Pablo Ruiz/ }).click();
  await expect(page).toHaveURL(new RegExp(`/dashboard/contacts/${kept}$`));
});

test('deleting a contact confirms what goes with it; an agent cannot delete', async ({ page, browser }) => {
  const id = await createContact({ first_name: 'Elsa', last_name: 'Borrada', email: `gone.${run}@example.com` });
  // An agent merges but does not delete: no button, and the service answers 403.
  const agentContext = await browser.newContext();
  const agentPage = await agentContext.newPage();
  await signIn(agentPage, agent);
  await expect(agentPage).toHaveURL(/\/dashboard$/);
  await agentPage.goto(`/dashboard/contacts/${id}`);
  await expect(agentPage.getByRole('button', { name: 'Merge with another contact…' })).toBeVisible();
  await expect(agentPage.getByRole('button', { name: 'Delete contact…' })).toHaveCount(0);
  const refused = await agentPage.evaluate(async (contactId) => {
    const session = await (await fetch('/dashboard/api/session')).json();
    const response = await fetch(`/dashboard/api/contacts/${contactId}`, {
      method: 'DELETE',
      headers: { 'x-csrf-token': session.csrf_token },
    });
    return { status: response.status, body: await response.json() };
  }, id);
  expect(refused).toMatchObject({ status: 403, body: { error: { code: 'forbidden' } } });
  await agentContext.close();

  await signIn(page, admin);
  await expect(page).toHaveURL(/\/dashboard$/);
  await page.goto(`/dashboard/contacts/${id}`);
  await page.getByRole('button', { name: 'Delete contact…' }).click();
  const dialog = page.getByRole('dialog', { name: 'Delete this contact?' });
  await expect(dialog).toContainText(
    'Deleting Elsa Borrada also deletes 0 conversations, 0 messages, 0 events and 0 attachments. This cannot be undone.',
  );
  await expectAccessible(page);
  // Escape closes without deleting.
  await page.keyboard.press('Escape');
  await expect(dialog).toBeHidden();
  await expect(page.getByRole('button', { name: 'Delete contact…' })).toBeFocused();
  await page.keyboard.press('Enter');
  await dialog.getByRole('button', { name: 'Delete contact' }).click();
  await expect(page).toHaveURL(/\/dashboard\/contacts$/);
  await page.goto(`/dashboard/contacts/${id}`);
  await expect(page.getByRole('alert')).toHaveText('This contact does not exist.');
});
