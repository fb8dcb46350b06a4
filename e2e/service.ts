// What the browser tests share: the service the global setup started, an accessibility check, and the
// screenshots the README shows.
import { AxeBuilder } from '@axe-core/playwright';
import { expect, type Page } from '@playwright/test';
import { mkdir } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';

export const ADMIN_TOKEN = 'e2e-admin-token-0123456789';

/** The service's address (e2e/global-setup.ts). */
export function serviceUrl(): string {
  const url = process.env.E2E_BASE_URL;
  if (!url) throw new Error('E2E_BASE_URL is not set: the browser tests run through playwright.config.ts');
  return url;
}

/** No serious or critical accessibility violation on the page as it is now (axe-core's WCAG 2.x A and AA rules). */
export async function expectAccessible(page: Page): Promise<void> {
  const results = await new AxeBuilder({ page }).withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']).analyze();
  const grave = results.violations
    .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
    .map((violation) => ({
      rule: violation.id,
      impact: violation.impact,
      help: violation.help,
      nodes: violation.nodes.map((node) => node.target.join(' ')),
    }));
  expect(grave).toEqual([]);
}

/**
 * With PWUPDATE_SCREENSHOTS=1, writes the page as docs/screenshots/<name>.png for the README; otherwise
 * nothing, so that a test run leaves the repository as it was.
 */
export async function screenshot(page: Page, name: string): Promise<void> {
  if (process.env.PWUPDATE_SCREENSHOTS !== '1') return;
  const dir = join(import.meta.dirname, '..', 'docs', 'screenshots');
  await mkdir(dir, { recursive: true });
  await page.screenshot({ path: join(dir, `${name}.png`), animations: 'disabled' });
}

/** A call to the operator API (ADMIN_TOKEN), for the tests to provision users and businesses. */
export async function operator<T>(method: string, path: string, body?: object): Promise<T> {
  const response = await fetch(`${serviceUrl()}/admin/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body && JSON.stringify(body),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} /admin/v1${path} answered ${response.status}: ${text}`);
  return (text ? JSON.parse(text) : undefined) as T;
}

export interface Account {
  email: string;
  password: string;
}

/** The demo business that the service created at its first start. */
export async function demoBusinessId(): Promise<string> {
  const { businesses } = await operator<{ businesses: { id: string; name: string }[] }>('GET', '/businesses?name=Demo');
  const demo = businesses.find((business) => business.name === 'Demo business');
  if (!demo) throw new Error('the service has no demo business');
  return demo.id;
}

/** The demo business's owner, as the service's first start printed their sign-in (e2e/global-setup.ts). */
export function demoOwner(): Account {
  const output = process.env.E2E_SERVICE_OUTPUT ?? '';
  const email = /^\s*email:\s+(\S+)$/m.exec(output)?.[1];
  const password = /^\s*password:\s+(\S+)$/m.exec(output)?.[1];
  if (!email || !password) throw new Error(`the first start printed no demo sign-in:\n${output}`);
  return { email, password };
}

/** A user of a business with a password, made through the operator API; the email is new each time. */
export async function createUser(
  businessId: string,
  role: 'owner' | 'admin' | 'agent',
  { name, account }: { name: string; account?: Account },
): Promise<Account> {
  const email = account?.email ?? `${role}.${Math.random().toString(36).slice(2, 10)}@example.com`;
  const password = account?.password ?? 'a long enough password';
  await operator('POST', `/businesses/${businessId}/users`, { email, name, password, role });
  return { email, password };
}

/** Signs in through the sign-in page and waits for the inbox. */
export async function signIn(page: Page, account: Account): Promise<void> {
  if (!page.url().includes('/dashboard/login')) await page.goto('/dashboard/login');
  await page.getByLabel('Email').fill(account.email);
  await page.getByLabel('Password').fill(account.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

/** A loopback HTTP receiver (a webhook target, a provider stand-in): what it was sent, in order. */
export interface Receiver {
  url: string;
  requests: { path: string; body: string }[];
  close(): Promise<void>;
}

/** Starts a receiver on loopback that answers every call 200 with `answer` (the service may call it). */
export async function startReceiver(answer = '{}'): Promise<Receiver> {
  const requests: Receiver['requests'] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      requests.push({ path: req.url ?? '', body });
      res.writeHead(200, { 'content-type': 'application/json' }).end(answer);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
