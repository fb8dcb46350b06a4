import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { firesMessageCreated } from '../../../src/modules/webhooks/webhook-events.ts';
import { verifyMediaSignature } from '../../../src/modules/media/media.signing.ts';
import { insertMessage } from '../../helpers/factories.ts';
import { createTenant, type Tenant } from '../../helpers/tenants.ts';
import {
  buildWebhookApp,
  createWebhook,
  logOf,
  Receiver,
  sharedDatabase,
  storeMessage,
  type SharedDatabase,
  type WebhookTestApp,
} from './webhook-harness.ts';

let shared: SharedDatabase;
let t: WebhookTestApp;
let receiver: Receiver;
let tenant: Tenant;

beforeAll(async () => {
  shared = await sharedDatabase();
  t = await buildWebhookApp(shared);
});
afterAll(async () => {
  await t.close();
  await shared.drop();
});
beforeEach(async () => {
  receiver = await Receiver.start();
  tenant = await createTenant(t.app);
});
afterEach(() => receiver.close());

describe('message_created delivery', () => {
  it('sends the payload signed after Standard Webhooks, verifiable by the standardwebhooks package', async () => {
    const { webhook, secret } = await createWebhook(t.app, tenant.businessId, { url: `${receiver.url}/hook?x=1` });
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const { message, conversation } = await storeMessage(t, tenant.businessId, {
      message: { text: 'Hola', metadata: { order: '42' } },
    });
    const [call] = await receiver.waitFor(1);
    expect(call.method).toBe('POST');
    expect(call.url).toBe('/hook?x=1');
    expect(call.headers['content-type']).toBe('application/json');
    const verified = new Webhook(secret).verify(call.body, call.headers as Record<string, string>) as {
      event: string;
      payload: Record<string, unknown>;
    };
    expect(verified.event).toBe('message_created');
    const contact = await t.database.db
      .selectFrom('contacts')
      .selectAll()
      .where('id', '=', conversation.contact_id)
      .executeTakeFirstOrThrow();
    expect(verified.payload).toEqual({
      messageId: message.id,
      conversationId: conversation.id,
      type: 'text',
      to: '15550001111',
      from: '34600111222',
      text: 'Hola',
      attachments: [],
      media: [],
      status: 'received',
      channel: 'whatsapp',
      contact: {
        uuid: contact.id,
        name: 'Ada Lovelace',
        phoneNumber: '+34600111222',
        avatarUrl: null,
        createdAt: contact.created_at,
        source: 'whatsapp',
        href: `http://dashboard.test/dashboard/contacts/${contact.id}`,
        conversationHref: `http://dashboard.test/dashboard/conversations/${conversation.id}`,
        tags: ['vip'],
      },
      createdAt: message.created_at,
      metadata: { order: '42' },
    });
    // webhook-id is the delivery id, listed in the log with the attempt.
    expect(await logOf(t.app, tenant.businessId, webhook.id)).toEqual([
      expect.objectContaining({
        id: call.headers['webhook-id'],
        message_id: message.id,
        attempt: 1,
        status_code: 200,
        ok: true,
        error: null,
        response_body: 'ok',
      }),
    ]);
    expect(Number(call.headers['webhook-timestamp'])).toBeCloseTo(Date.now() / 1000, -2);
    expect(call.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
  });

  it('sends custom headers, which cannot override ours, with the registered method', async () => {
    const { secret } = await createWebhook(t.app, tenant.businessId, {
      url: receiver.url,
      method: 'PUT',
      headers: { Authorization: 'Bearer biz-token', 'X-Tenant': 'acme' },
    });
    await storeMessage(t, tenant.businessId);
    const [call] = await receiver.waitFor(1);
    expect(call.method).toBe('PUT');
    expect(call.headers.authorization).toBe('Bearer biz-token');
    expect(call.headers['x-tenant']).toBe('acme');
    expect(() => new Webhook(secret).verify(call.body, call.headers as Record<string, string>)).not.toThrow();
  });

  it('fires for inbound and API messages only; dashboard, agent and automation messages do not', async () => {
    expect(firesMessageCreated({ direction: 'inbound', sender_type: 'contact' })).toBe(true);
    expect(firesMessageCreated({ direction: 'outbound', sender_type: 'api' })).toBe(true);
    for (const sender of ['human', 'automation', 'ai_agent'] as const)
      expect(firesMessageCreated({ direction: 'outbound', sender_type: sender })).toBe(false);
    await createWebhook(t.app, tenant.businessId, { url: receiver.url });
    const human = await storeMessage(t, tenant.businessId, {
      message: { direction: 'outbound', sender_type: 'human', status: 'SENT' },
    });
    expect(human.queued).toBe(false);
    const auto = await storeMessage(t, tenant.businessId, {
      conversation: human.conversation,
      message: { direction: 'outbound', sender_type: 'automation', status: 'SENT' },
    });
    expect(auto.queued).toBe(false);
    const api = await storeMessage(t, tenant.businessId, {
      conversation: human.conversation,
      message: {
        direction: 'outbound',
        sender_type: 'api',
        status: 'PENDING',
        sender_address: '15550001111',
        recipient_address: '34600111222',
        text: 'from api',
      },
    });
    expect(api.queued).toBe(true);
    const [call] = await receiver.waitFor(1);
    const body = JSON.parse(call.body);
    expect(body.payload).toMatchObject({
      status: 'sent',
      from: '15550001111',
      to: '34600111222',
      text: 'from api',
      messageId: api.message.id,
    });
    await new Promise((r) => setTimeout(r, 200));
    expect(receiver.calls).toHaveLength(1);
  });

  it('writes one delivery per enabled webhook, none for disabled ones or other businesses', async () => {
    const other = await createTenant(t.app, 'Other');
    const second = await Receiver.start();
    try {
      await createWebhook(t.app, tenant.businessId, { url: receiver.url });
      await createWebhook(t.app, tenant.businessId, { url: second.url });
      await createWebhook(t.app, tenant.businessId, { url: second.url, enabled: false });
      await createWebhook(t.app, other.businessId, { url: second.url });
      await storeMessage(t, tenant.businessId);
      await receiver.waitFor(1);
      await second.waitFor(1);
      await new Promise((r) => setTimeout(r, 200));
      expect(receiver.calls).toHaveLength(1);
      expect(second.calls).toHaveLength(1);
      expect(receiver.calls[0].headers['webhook-id']).not.toBe(second.calls[0].headers['webhook-id']);
    } finally {
      await second.close();
    }
  });

  it('carries signed media addresses and the optional objects built from the message metadata', async () => {
    await createWebhook(t.app, tenant.businessId, { url: receiver.url });
    const first = await storeMessage(t, tenant.businessId, {
      message: { provider_message_id: 'wamid.1', channel_id: null },
    });
    await storeMessage(t, tenant.businessId, {
      conversation: first.conversation,
      message: {
        type: 'location',
        text: '',
        reply_to_id: first.message.id,
        metadata: {
          reply_to_provider_message_id: 'wamid.1',
          location: { latitude: 40.4, longitude: -3.7, name: 'Sol', address: 'Madrid', url: null },
          forwarded: true,
          contacts: [
            {
              formatted_name: 'Bo Li',
              first_name: 'Bo',
              last_name: 'Li',
              organization: null,
              phones: [{ phone: '+1 555', wa_id: '1555', type: 'CELL' }],
              emails: [{ email: 'bo@x.test', type: 'WORK' }],
              urls: ['https://x.test'],
            },
          ],
          interactive: { type: 'list_reply', id: 'row-1', title: 'Small', description: 'S size' },
          button: { text: 'Yes', payload: 'YES_PAYLOAD' },
        },
      },
      media: [{ filename: 'map.png', content_type: 'image/png' }],
    });
    const calls = await receiver.waitFor(2);
    const payload = JSON.parse(calls[1].body).payload;
    expect(payload.messageContext).toEqual({ messageId: first.message.id, providerMessageId: 'wamid.1' });
    expect(payload.messageLocation).toEqual({
      latitude: 40.4,
      longitude: -3.7,
      name: 'Sol',
      address: 'Madrid',
      url: null,
    });
    expect(payload.messageForward).toEqual({ forwarded: true, frequentlyForwarded: false });
    expect(payload.messageContactCard).toEqual({
      contacts: [
        {
          formattedName: 'Bo Li',
          firstName: 'Bo',
          lastName: 'Li',
          organization: null,
          phones: [{ phone: '+1 555', waId: '1555', type: 'CELL' }],
          emails: [{ email: 'bo@x.test', type: 'WORK' }],
          urls: ['https://x.test'],
        },
      ],
    });
    expect(payload.messageInteractiveList).toEqual({ id: 'row-1', title: 'Small', description: 'S size' });
    expect(payload.messageReplyButton).toEqual({ id: null, title: 'Yes', payload: 'YES_PAYLOAD' });
    expect(payload.media).toHaveLength(1);
    expect(payload.media[0]).toMatchObject({ filename: 'map.png', contentType: 'image/png' });
    expect(payload.attachments).toEqual([payload.media[0].url]);
    const url = new URL(payload.media[0].url);
    expect(url.origin + url.pathname).toBe(`http://dashboard.test/files/${payload.media[0].id}`);
    expect(
      verifyMediaSignature(t.config.secretKeys, {
        mediaId: String(payload.media[0].id),
        businessId: url.searchParams.get('b')!,
        exp: url.searchParams.get('exp')!,
        sig: url.searchParams.get('sig')!,
      }),
    ).toBe(true);
    // The first message had none of them.
    const plain = JSON.parse(calls[0].body).payload;
    for (const key of [
      'messageContext',
      'messageLocation',
      'messageContactCard',
      'messageInteractiveList',
      'messageReplyButton',
      'messageForward',
    ])
      expect(plain).not.toHaveProperty(key);
  });

  it('maps an interactive button reply to messageReplyButton', async () => {
    await createWebhook(t.app, tenant.businessId, { url: receiver.url });
    await storeMessage(t, tenant.businessId, {
      message: {
        type: 'interactive',
        metadata: { interactive: { type: 'button_reply', id: 'b1', title: 'Confirm', description: null } },
      },
    });
    const [call] = await receiver.waitFor(1);
    const payload = JSON.parse(call.body).payload;
    expect(payload.messageReplyButton).toEqual({ id: 'b1', title: 'Confirm', payload: null });
    expect(payload).not.toHaveProperty('messageInteractiveList');
  });

  it('writes deliveries for a set of messages stored together, in the order given, skipping those that do not fire', async () => {
    await createWebhook(t.app, tenant.businessId, { url: receiver.url });
    const first = await storeMessage(t, tenant.businessId, {
      message: { text: 'm0', sender_type: 'human', direction: 'outbound' },
    });
    const ids = await t.database.db.transaction().execute(async (trx) => {
      const out: string[] = [];
      for (const [text, sender] of [
        ['m1', 'contact'],
        ['m2', 'human'],
        ['m3', 'contact'],
      ] as const) {
        const direction = sender === 'human' ? 'outbound' : 'inbound';
        out.push(
          (await insertMessage(trx, tenant.businessId, first.conversation, { text, sender_type: sender, direction }))
            .id,
        );
      }
      expect(await t.app.services.webhooks.events.messagesCreated(trx, tenant.businessId, out)).toBe(true);
      return out;
    });
    t.app.services.webhooks.events.wake();
    const calls = await receiver.waitFor(2);
    expect(calls.map((c) => JSON.parse(c.body).payload.messageId)).toEqual([ids[0], ids[2]]);
    await new Promise((r) => setTimeout(r, 200));
    expect(receiver.calls).toHaveLength(2);
  });

  it('documents the payload under webhooks.message_created of the OpenAPI document', async () => {
    const doc = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json();
    const schema = doc.webhooks.message_created.post.requestBody.content['application/json'].schema;
    const payload = schema.properties.payload.properties;
    for (const key of [
      'to',
      'from',
      'text',
      'attachments',
      'media',
      'status',
      'channel',
      'contact',
      'createdAt',
      'metadata',
      'messageContext',
      'messageLocation',
      'messageContactCard',
      'messageInteractiveList',
      'messageReplyButton',
      'messageForward',
    ]) {
      expect(payload).toHaveProperty(key);
    }
    expect(doc.paths['/admin/v1/businesses/{bid}/webhooks']).toBeDefined();
  });
});
