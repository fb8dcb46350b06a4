import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readHubSpotNotification } from '../../../src/channels/hubspot/hubspot.notifications.ts';
import { verifyHubSpotSignature } from '../../../src/channels/hubspot/hubspot.signature.ts';
import {
  inboundMessage,
  metaNotification,
  signedNotification,
  startFakeGraphApi,
  type FakeGraphApi,
} from '../../helpers/fake-graph-api.ts';
import {
  outgoingMessageEvent,
  signedHubSpotWebhook,
  startFakeHubSpotApi,
  type FakeHubSpotApi,
} from '../../helpers/fake-hubspot-api.ts';
import { adminHeaders, createTenant, type Tenant } from '../../helpers/tenants.ts';
import { buildTestApp, PUBLIC_URL, type TestApp } from '../../helpers/test-app.ts';
import { createChannel, newPhone, until, type TestChannel } from '../sending/sending.fixtures.ts';

const HUBSPOT_WEBHOOK = '/channels/hubspot/webhook';
const CLIENT_SECRET = 'hubspot-client-secret-0123456789';

let t: TestApp;
let graph: FakeGraphApi;
let hubspot: FakeHubSpotApi;
let tenant: Tenant;
let other: Tenant;
let whatsapp: TestChannel;
let otherWhatsapp: TestChannel;
const hub = { id: '', channelId: '4242', accountId: '91001' };
// A second mirror of the business that takes SMS only: WhatsApp messages are not copied to it.
const smsOnly = { channelId: '4343', accountId: '91002' };

const db = () => t.database.db;

async function createHubSpotChannel(
  businessId: string,
  ids: { channelId: string; accountId: string },
  extra: Record<string, unknown> = {},
) {
  return t.app.inject({
    method: 'POST',
    url: `/admin/v1/businesses/${businessId}/channels`,
    headers: adminHeaders,
    payload: {
      type: 'hubspot_chat',
      identifier: ids.accountId,
      provider: {
        kind: 'hubspot',
        channel_id: ids.channelId,
        channel_account_id: ids.accountId,
        access_token: hubspot.accessToken,
        client_secret: CLIENT_SECRET,
        api_base_url: hubspot.baseUrl,
        ...extra,
      },
    },
  });
}

/** A customer's WhatsApp message to the channel, as Meta posts it; answers its row once stored. */
async function customerWrites(channel: TestChannel, from: string, text: string) {
  const message = inboundMessage(from, 'text', { body: text });
  const body = metaNotification({
    phoneNumberId: channel.phoneNumberId,
    contacts: [{ waId: from, name: 'Ana Lima' }],
    messages: [message],
  });
  const { payload, headers } = signedNotification(body, 'app-secret');
  const res = await t.app.inject({ method: 'POST', url: '/channels/whatsapp_cloud/webhook', payload, headers });
  expect(res.statusCode, res.body).toBe(200);
  return db()
    .selectFrom('messages')
    .selectAll()
    .where('provider_message_id', '=', message.id as string)
    .executeTakeFirstOrThrow();
}

const postReply = (body: unknown, options: { secret?: string; timestamp?: number } = {}) => {
  const { payload, headers } = signedHubSpotWebhook(
    `${PUBLIC_URL}${HUBSPOT_WEBHOOK}`,
    body,
    options.secret ?? CLIENT_SECRET,
    options.timestamp,
  );
  return t.app.inject({ method: 'POST', url: HUBSPOT_WEBHOOK, payload, headers });
};

const reply = (threadId: string, text: string, messageId?: string) =>
  outgoingMessageEvent({ channelId: hub.channelId, channelAccountId: hub.accountId, threadId, text, messageId });

const graphTexts = () => graph.sends().map((r) => (r.body as { text?: { body?: string } }).text?.body ?? null);

/** Lets the worker run what is due (a retried send would have gone by then). */
const settle = () => new Promise((resolve) => setTimeout(resolve, 300));

beforeAll(async () => {
  graph = await startFakeGraphApi();
  hubspot = await startFakeHubSpotApi();
  t = await buildTestApp({ ALLOW_PRIVATE_WEBHOOK_TARGETS: 'true' });
  tenant = await createTenant(t.app, 'Acme');
  other = await createTenant(t.app, 'Other');
  whatsapp = await createChannel(t.app, tenant, graph);
  otherWhatsapp = await createChannel(t.app, other, graph);
  const created = await createHubSpotChannel(tenant.businessId, hub);
  expect(created.statusCode, created.body).toBe(201);
  hub.id = created.json().channel.id as string;
  expect((await createHubSpotChannel(tenant.businessId, smsOnly, { mirror_channel_types: ['sms'] })).statusCode).toBe(
    201,
  );
});
afterAll(async () => {
  await t.close();
  await graph.close();
  await hubspot.close();
});

describe('HubSpot channel: configuration', () => {
  it('keeps the token and client secret sealed and never shows them', async () => {
    const res = await t.app.inject({
      method: 'GET',
      url: `/admin/v1/businesses/${tenant.businessId}/channels/${hub.id}`,
      headers: adminHeaders,
    });
    expect(res.statusCode).toBe(200);
    expect(res.body).not.toContain(hubspot.accessToken);
    expect(res.body).not.toContain(CLIENT_SECRET);
    const row = await db().selectFrom('channels').selectAll().where('id', '=', hub.id).executeTakeFirstOrThrow();
    expect(JSON.stringify(row.provider_config)).not.toContain(CLIENT_SECRET);
    expect(row.provider_account).toBe(hub.accountId);
  });

  it('refuses a config without its ids or secrets, or with an unknown channel type to mirror, with 400', async () => {
    const cases: Record<string, unknown>[] = [
      { channel_id: 'abc' },
      { client_secret: '' },
      { mirror_channel_types: ['fax'] },
      { unknown_field: true },
    ];
    for (const extra of cases) {
      const res = await createHubSpotChannel(tenant.businessId, { channelId: '5000', accountId: '95000' }, extra);
      expect(res.statusCode, JSON.stringify(extra)).toBe(400);
    }
  });
});

describe('HubSpot channel: mirroring', () => {
  it("publishes a customer's WhatsApp message to HubSpot once, keyed by its id, even when HubSpot failed first", async () => {
    // HubSpot keeps the first publish but answers 500: the job's retry must land on the same message.
    hubspot.failNextPublishes(1, 500, { keep: true });
    const from = newPhone();
    const row = await customerWrites(whatsapp, from, 'Is my order on its way?');
    const job = () =>
      db().selectFrom('outbox').select(['state', 'last_error']).where('ref_id', '=', row.id).executeTakeFirst();
    await until(async () => (await job())?.last_error != null);
    expect(hubspot.publishes().filter((r) => r.body.integrationIdempotencyId === row.id)).toHaveLength(1);
    // The retry comes after the backoff: make it due now.
    await db().updateTable('outbox').set({ run_at: new Date().toISOString() }).where('ref_id', '=', row.id).execute();
    t.app.worker.wake('mirror');
    await until(async () => (await job())?.state === 'done');
    const calls = hubspot.publishes().filter((r) => r.body.integrationIdempotencyId === row.id);
    expect(calls).toHaveLength(2);
    expect(calls[0].path).toBe(`/conversations/v3/custom-channels/${hub.channelId}/messages`);
    expect(calls[0].headers.authorization).toBe(`Bearer ${hubspot.accessToken}`);
    expect(calls[0].body).toMatchObject({
      type: 'MESSAGE',
      text: 'Is my order on its way?',
      messageDirection: 'INCOMING',
      integrationThreadId: row.conversation_id,
      integrationIdempotencyId: row.id,
      channelAccountId: hub.accountId,
      senders: [{ name: 'Ana Lima', deliveryIdentifier: { type: 'HS_PHONE_NUMBER', value: `+${from}` } }],
      recipients: [{ deliveryIdentifier: { type: 'CHANNEL_SPECIFIC_OPAQUE_ID', value: whatsapp.identifier } }],
    });
    expect(calls[1].body).toEqual(calls[0].body);
    expect(hubspot.messages().filter((m) => m.integrationIdempotencyId === row.id)).toHaveLength(1);
    // The SMS-only mirror got nothing.
    expect(hubspot.publishes().some((r) => r.path.includes(`/${smsOnly.channelId}/`))).toBe(false);
  });

  it('mirrors nothing of a business without a mirroring channel', async () => {
    const row = await customerWrites(otherWhatsapp, newPhone(), 'Hello?');
    await settle();
    expect(hubspot.publishes().some((r) => r.body.integrationIdempotencyId === row.id)).toBe(false);
    expect(
      await db().selectFrom('outbox').select('id').where('ref_id', '=', row.id).where('kind', '=', 'mirror').execute(),
    ).toHaveLength(0);
  });
});

describe('HubSpot channel: replies written in HubSpot', () => {
  it("sends a signed reply through the conversation's WhatsApp channel once, as a person's, even when posted twice", async () => {
    const from = newPhone();
    const inbound = await customerWrites(whatsapp, from, 'Can I change the address?');
    const event = reply(inbound.conversation_id, 'Yes, send us the new one.');
    expect((await postReply(event)).statusCode).toBe(200);
    expect((await postReply(event)).statusCode).toBe(200);
    await until(() => graphTexts().includes('Yes, send us the new one.'));
    await settle();
    const sends = graph.sends().filter((r) => (r.body as { to?: string }).to === from);
    expect(sends).toHaveLength(1);
    const rows = await db()
      .selectFrom('messages')
      .selectAll()
      .where('conversation_id', '=', inbound.conversation_id)
      .where('direction', '=', 'outbound')
      .execute();
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      sender_type: 'human',
      user_id: null,
      channel_id: whatsapp.id,
      text: 'Yes, send us the new one.',
      metadata: { relayed_by: hub.id, relay_key: (event.message as { id: string }).id },
    });
    // HubSpot is told the reply went out, once.
    const key = (event.message as { id: string }).id;
    await until(() => hubspot.reports().some((r) => r.messageId === key));
    await settle();
    expect(hubspot.reports().filter((r) => r.messageId === key)).toEqual([
      { channelId: hub.channelId, messageId: key, statusType: 'SENT', errorMessage: undefined },
    ]);
  });

  it('reports FAILED to HubSpot when the channel refuses the relayed reply', async () => {
    const from = newPhone();
    const inbound = await customerWrites(whatsapp, from, 'Still there?');
    graph.failNextSends(1, { status: 400, code: 131026, message: 'Message undeliverable' });
    const event = reply(inbound.conversation_id, 'We are.');
    expect((await postReply(event)).statusCode).toBe(200);
    const key = (event.message as { id: string }).id;
    await until(() => hubspot.reports().some((r) => r.messageId === key));
    expect(hubspot.reports().find((r) => r.messageId === key)).toMatchObject({ statusType: 'FAILED' });
    expect(String(hubspot.reports().find((r) => r.messageId === key)?.errorMessage)).toMatch(/131026|undeliverable/i);
  });

  it('reports FAILED to HubSpot, sending nothing, for a reply longer than a message may be', async () => {
    const inbound = await customerWrites(whatsapp, newPhone(), 'Tell me everything');
    const before = graph.sends().length;
    const event = reply(inbound.conversation_id, 'x'.repeat(4097));
    expect((await postReply(event)).statusCode).toBe(200);
    const key = (event.message as { id: string }).id;
    await until(() => hubspot.reports().some((r) => r.messageId === key));
    expect(hubspot.reports().find((r) => r.messageId === key)).toMatchObject({ statusType: 'FAILED' });
    expect(String(hubspot.reports().find((r) => r.messageId === key)?.errorMessage)).toMatch(/4096/);
    expect(graph.sends().length).toBe(before);
  });

  it('refuses a wrong signature, another secret, a stale timestamp or a missing header with 401, sending nothing', async () => {
    const inbound = await customerWrites(whatsapp, newPhone(), 'Hi');
    const event = reply(inbound.conversation_id, 'forged');
    const before = graph.sends().length;
    expect((await postReply(event, { secret: 'not-the-secret' })).statusCode).toBe(401);
    expect((await postReply(event, { timestamp: Date.now() - 6 * 60 * 1000 })).statusCode).toBe(401);
    const { payload } = signedHubSpotWebhook(`${PUBLIC_URL}${HUBSPOT_WEBHOOK}`, event, CLIENT_SECRET);
    const unsigned = await t.app.inject({
      method: 'POST',
      url: HUBSPOT_WEBHOOK,
      payload,
      headers: { 'content-type': 'application/json' },
    });
    expect(unsigned.statusCode).toBe(401);
    // Signed for another URL (replayed from elsewhere).
    const elsewhere = signedHubSpotWebhook('https://other.example/hook', event, CLIENT_SECRET);
    expect(
      (
        await t.app.inject({
          method: 'POST',
          url: HUBSPOT_WEBHOOK,
          payload: elsewhere.payload,
          headers: elsewhere.headers,
        })
      ).statusCode,
    ).toBe(401);
    // A channel account no channel holds.
    const unknown = outgoingMessageEvent({
      channelId: hub.channelId,
      channelAccountId: '99999999',
      threadId: inbound.conversation_id,
      text: 'x',
    });
    expect((await postReply(unknown)).statusCode).toBe(401);
    await settle();
    expect(graph.sends().length).toBe(before);
  });

  it('refuses a malformed body with 400, sending nothing', async () => {
    const before = graph.sends().length;
    const good = reply('0190a6f8-0000-7000-8000-000000000000', 'x');
    const bodies: unknown[] = [
      'not json',
      [],
      { portalId: 1 },
      { ...good, message: undefined },
      { ...good, channelIntegrationThreadIds: [] },
      { ...good, message: { ...(good.message as object), id: 42 } },
    ];
    for (const body of bodies) {
      const res = await postReply(body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(res.json().error.code).toBe('validation_error');
    }
    expect(graph.sends().length).toBe(before);
  });

  it("sends nothing for another business's conversation, an unknown one or a thread that is no conversation id", async () => {
    const theirs = await customerWrites(otherWhatsapp, newPhone(), 'Hello there');
    const before = graph.sends().length;
    for (const thread of [theirs.conversation_id, '0190a6f8-0000-7000-8000-000000000000', 'thread-1']) {
      const res = await postReply(reply(thread, 'not for you'));
      expect(res.statusCode, thread).toBe(200);
    }
    await settle();
    expect(graph.sends().length).toBe(before);
    const relayed = await db()
      .selectFrom('messages')
      .select('id')
      .where('business_id', '=', other.businessId)
      .where('direction', '=', 'outbound')
      .execute();
    expect(relayed).toHaveLength(0);
  });

  it('accepts the other events of a custom channel and changes nothing', async () => {
    const res = await postReply({ type: 'CHANNEL_ACCOUNT_CREATED', portalId: '1', channelId: hub.channelId });
    expect(res.statusCode).toBe(200);
  });
});

describe('HubSpot adapter: reading and signatures', () => {
  it('reads a reply into one relayed item, and a reply without text into none', () => {
    const event = reply('0190a6f8-0000-7000-8000-000000000001', 'Hello');
    const read = readHubSpotNotification(event);
    expect(read.accounts).toEqual([hub.accountId]);
    expect(read.relayed).toEqual([
      {
        account: hub.accountId,
        conversationId: '0190a6f8-0000-7000-8000-000000000001',
        text: 'Hello',
        key: (event.message as { id: string }).id,
      },
    ]);
    const empty = readHubSpotNotification({ ...event, message: { ...(event.message as object), text: '' } });
    expect(empty.relayed).toEqual([]);
  });

  it('checks the v3 signature over the method, URL, body and timestamp, within five minutes', () => {
    const url = 'https://service.example/channels/hubspot/webhook';
    const now = Date.now();
    const { payload, headers } = signedHubSpotWebhook(url, { a: 1 }, 'secret', now);
    const body = Buffer.from(payload);
    expect(verifyHubSpotSignature('secret', url, body, headers, now)).toBe(true);
    expect(verifyHubSpotSignature('secret', url, Buffer.from('{"a":2}'), headers, now)).toBe(false);
    expect(verifyHubSpotSignature('secret', `${url}?x=1`, body, headers, now)).toBe(false);
    expect(verifyHubSpotSignature('other', url, body, headers, now)).toBe(false);
    expect(verifyHubSpotSignature('secret', url, body, headers, now + 5 * 60 * 1000 + 1)).toBe(false);
    expect(
      verifyHubSpotSignature('secret', url, body, { ...headers, 'x-hubspot-request-timestamp': 'soon' }, now),
    ).toBe(false);
  });
});
