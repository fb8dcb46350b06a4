import { randomInt } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { insertContact, insertConversation, insertMessage } from '../../helpers/factories.ts';
import { startFakeGraphApi, type FakeGraphApi } from '../../helpers/fake-graph-api.ts';
import { adminHeaders, createTenant, type Tenant } from '../../helpers/tenants.ts';
import { buildTestApp, type TestApp } from '../../helpers/test-app.ts';

// Shared set-up of the sending tests: channels and templates made through the operator API,
// inbound history inserted with chosen times, and waiting for the worker.

/** A recipient number nobody else in the test run uses (US format, valid for libphonenumber). */
export const newPhone = () => `1415${String(randomInt(2_000_000, 9_999_999))}`;

export interface TestChannel {
  id: string;
  identifier: string;
  phoneNumberId: string;
}

/** A WhatsApp channel of the business whose Graph API is the fake. */
export async function createChannel(
  app: FastifyInstance,
  tenant: Tenant,
  fake: FakeGraphApi,
  extra: { pace_per_second?: number } = {},
): Promise<TestChannel> {
  const phoneNumberId = String(randomInt(100_000_000, 999_999_999));
  const identifier = `1555${String(randomInt(1_000_000, 9_999_999))}`;
  const res = await app.inject({
    method: 'POST',
    url: `/admin/v1/businesses/${tenant.businessId}/channels`,
    headers: adminHeaders,
    payload: {
      type: 'whatsapp',
      identifier,
      provider: {
        kind: 'whatsapp_cloud',
        phone_number_id: phoneNumberId,
        access_token: fake.accessToken,
        app_secret: 'app-secret',
        verify_token: 'verify',
        api_base_url: fake.baseUrl,
      },
      ...extra,
    },
  });
  if (res.statusCode !== 201) throw new Error(`create channel: ${res.body}`);
  return { id: res.json().channel.id as string, identifier, phoneNumberId };
}

/** A template through the operator API; answers its id. */
export async function createTemplate(
  app: FastifyInstance,
  tenant: Tenant,
  body: Record<string, unknown>,
): Promise<string> {
  const res = await app.inject({
    method: 'POST',
    url: `/admin/v1/businesses/${tenant.businessId}/templates`,
    headers: adminHeaders,
    payload: { language: 'en_US', ...body },
  });
  if (res.statusCode !== 201) throw new Error(`create template: ${res.body}`);
  return res.json().template.id as string;
}

export async function createAgent(app: FastifyInstance, tenant: Tenant, name = 'Sales bot'): Promise<string> {
  const res = await app.inject({
    method: 'POST',
    url: `/admin/v1/businesses/${tenant.businessId}/agents`,
    headers: adminHeaders,
    payload: { name },
  });
  if (res.statusCode !== 201) throw new Error(`create agent: ${res.body}`);
  return res.json().agent.id as string;
}

/** A contact with an inbound message on the channel `hoursAgo` hours ago (opens or closes the 24-h window). */
export async function inboundContact(
  t: TestApp,
  tenant: Tenant,
  channel: TestChannel,
  hoursAgo: number,
  phone = newPhone(),
) {
  const db = t.database.db;
  const contact = await insertContact(db, tenant.businessId, { phone_number: phone, source: 'whatsapp' });
  const conversation = await insertConversation(db, tenant.businessId, contact.id, {
    channel: 'whatsapp',
    channel_id: channel.id,
  });
  const createdAt = new Date(Date.now() - hoursAgo * 3_600_000).toISOString();
  await insertMessage(db, tenant.businessId, conversation, {
    channel_id: channel.id,
    created_at: createdAt,
    sender_address: phone,
    recipient_address: channel.identifier,
  });
  return { contact, conversation, phone };
}

/** Polls until `check` holds (or fails the test after `ms`). */
export async function until(check: () => Promise<boolean> | boolean, ms = 15_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** The stored message row. */
export function messageRow(t: TestApp, id: string) {
  return t.database.db.selectFrom('messages').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
}

/** Waits for the worker to finish with a message (no longer PENDING) and returns its row. */
export async function settled(t: TestApp, id: string, ms?: number) {
  await until(async () => (await messageRow(t, id)).status !== 'PENDING', ms);
  return messageRow(t, id);
}

export interface SendingFixture {
  t: TestApp;
  fake: FakeGraphApi;
  tenant: Tenant;
  channel: TestChannel;
  /** Closes the app, then the fake Graph API. */
  close(): Promise<void>;
}

/**
 * The set-up of the sending tests: a fake Graph API, a test app that may reach it (it listens on
 * loopback, a private target), a business and its WhatsApp channel on the fake.
 */
export async function withSendingChannel(tenantName?: string): Promise<SendingFixture> {
  const fake = await startFakeGraphApi();
  const t = await buildTestApp({ ALLOW_PRIVATE_WEBHOOK_TARGETS: 'true' });
  const tenant = await createTenant(t.app, tenantName);
  const channel = await createChannel(t.app, tenant, fake);
  return {
    t,
    fake,
    tenant,
    channel,
    close: async () => {
      await t.close();
      await fake.close();
    },
  };
}
