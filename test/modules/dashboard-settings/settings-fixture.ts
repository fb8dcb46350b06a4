import { buildTestApp, type TestApp } from '../../helpers/test-app.ts';
import { createTenant } from '../../helpers/tenants.ts';
import { call, createUser, signIn, type Browser } from '../dashboard-auth/dashboard-helpers.ts';

const PASSWORD = 'correct horse';

/** Two businesses: Acme with an owner, an admin and an agent signed in, Other with its owner. */
export interface SettingsFixture {
  t: TestApp;
  businessId: string;
  otherBusinessId: string;
  users: { owner: string; admin: string; agent: string };
  owner: Browser;
  admin: Browser;
  agent: Browser;
  otherOwner: Browser;
}

export async function settingsFixture(): Promise<SettingsFixture> {
  const t = await buildTestApp({}, { workers: false });
  const { businessId } = await createTenant(t.app, 'Acme');
  const { businessId: otherBusinessId } = await createTenant(t.app, 'Other');
  const users = {
    owner: (await createUser(t.app, businessId, { email: 'owner@acme.test', password: PASSWORD, role: 'owner' })).id,
    admin: (await createUser(t.app, businessId, { email: 'admin@acme.test', password: PASSWORD, role: 'admin' })).id,
    agent: (await createUser(t.app, businessId, { email: 'agent@acme.test', password: PASSWORD, role: 'agent' })).id,
  };
  await createUser(t.app, otherBusinessId, { email: 'owner@other.test', password: PASSWORD, role: 'owner' });
  return {
    t,
    businessId,
    otherBusinessId,
    users,
    owner: await signIn(t.app, 'owner@acme.test', PASSWORD),
    admin: await signIn(t.app, 'admin@acme.test', PASSWORD),
    agent: await signIn(t.app, 'agent@acme.test', PASSWORD),
    otherOwner: await signIn(t.app, 'owner@other.test', PASSWORD),
  };
}

/** Expects an error answer: its status and code. */
export async function refused(
  response: Promise<{ statusCode: number; json(): { error?: { code?: string } } }>,
  status: number,
  code: string,
): Promise<void> {
  const res = await response;
  if (res.statusCode !== status || res.json().error?.code !== code)
    throw new Error(`expected ${status} ${code}, got ${res.statusCode} ${JSON.stringify(res.json())}`);
}

export { call };
