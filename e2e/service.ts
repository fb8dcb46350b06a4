// What the browser tests share: the service the global setup started, an accessibility check, and the
// screenshots the README shows.
import AxeBuilder from '@axe-core/playwright';
import { expect, type Page } from '@playwright/test';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';

export const ADMIN_TOKEN = 'e2e-admin-token-0123456789';

/** The service's address (e2e/global-setup.ts). */
export function serviceUrl(): string {
  const url = process.env.E2E_BASE_URL;
  if (!url) throw new Error('E2E_BASE_URL is not set: the browser tests run through playwright.config.ts');
  return url;
}

/**
 * Whether the service has the session API (sign-in): the tests that sign in need it. Read from the
 * service's own OpenAPI document.
 */
export async function hasSessionApi(): Promise<boolean> {
  const document = (await (await fetch(`${serviceUrl()}/openapi.json`)).json()) as { paths: Record<string, unknown> };
  return '/dashboard/api/session' in document.paths;
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
