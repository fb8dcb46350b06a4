import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inboundMessage, startFakeGraphApi, type FakeGraphApi } from '../../helpers/fake-graph-api.ts';
import { adminHeaders, createTenant, type Tenant } from '../../helpers/tenants.ts';
import { buildTestApp, type TestApp } from '../../helpers/test-app.ts';
import { createWhatsAppChannel, notificationFor, postSigned, type TestChannel } from '../inbound/whatsapp-helpers.ts';
import { Receiver } from './webhook-harness.ts';

// message_created end to end: a message received on WhatsApp and one sent through the API each reach
// the business's endpoint once, signed, with the contract's payload.

let t: TestApp;
let tenant: Tenant;
let fake: FakeGraphApi;
let receiver: Receiver;
let channel: TestChannel;
let secret: string;

beforeAll(async () => {
  t = await buildTestApp({ ALLOW_PRIVATE_WEBHOOK_TARGETS: 'true' });
  tenant = await createTenant(t.app);
  fake = await startFakeGraphApi();
  receiver = await Receiver.start();
  channel = await createWhatsAppChannel(t.app, tenant.businessId, { apiBaseUrl: fake.baseUrl });
  // The channel's token must be the fake's for sends to be accepted.
  await t.app.inject({
    method: 'PATCH',
    url: `/admin/v1/businesses/${tenant.businessId}/channels/${channel.id}`,
    headers: adminHeaders,
    payload: { provider: { access_token: fake.accessToken } },
  });
  const created = await t.app.inject({
    method: 'POST',
    url: `/admin/v1/businesses/${tenant.businessId}/webhooks`,
    headers: adminHeaders,
    payload: {
      event: 'message_created',
      url: `${receiver.url}/hooks`,
      headers: { authorization: 'Bearer business-token' },
    },
  });
  expect(created.statusCode).toBe(201);
  secret = created.json().secret;
});
afterAll(async () => {
  await t.close();
  await receiver.close();
  await fake.close();
});

function verified(index: number) {
  const call = receiver.calls[index];
  const body = new Webhook(secret).verify(call.body, {
    'webhook-id': String(call.headers['webhook-id']),
    'webhook-timestamp': String(call.headers['webhook-timestamp']),
    'webhook-signature': String(call.headers['webhook-signature']),
  }) as { event: string; payload: Record<string, any> };
  return { call, body };
}

describe('message_created', () => {
  it('fires once for a message received on WhatsApp, however often Meta redelivers it', async () => {
    const message = inboundMessage('5491155550001', 'text', { body: 'Hola, ¿tienen stock?' });
    const notification = notificationFor(channel, {
      contacts: [{ waId: '5491155550001', name: 'Lucía Gómez' }],
      messages: [message],
    });
    expect((await postSigned(t.app, notification, channel.appSecret)).statusCode).toBe(200);
    expect((await postSigned(t.app, notification, channel.appSecret)).statusCode).toBe(200);
    await receiver.waitFor(1);
    await new Promise((r) => setTimeout(r, 300));
    expect(receiver.calls).toHaveLength(1);

    const { call, body } = verified(0);
    expect(call.method).toBe('POST');
    expect(call.headers.authorization).toBe('Bearer business-token');
    expect(body.event).toBe('message_created');
    expect(body.payload).toMatchObject({
      from: '5491155550001',
      text: 'Hola, ¿tienen stock?',
      status: 'received',
      channel: 'whatsapp',
      attachments: [],
      media: [],
      contact: { name: 'Lucía Gómez', phoneNumber: '+5491155550001', source: 'whatsapp', tags: [] },
    });
    expect(body.payload.contact.href).toMatch(/^http:\/\/dashboard\.test\//);
  });

  it('fires for a message sent through POST /messages/send, status sent', async () => {
    const before = receiver.calls.length;
    const res = await t.app.inject({
      method: 'POST',
      url: '/external/v2/messages/send',
      headers: tenant.headers,
      payload: {
        to: '5491155550001',
        from: 'whatsapp',
        type: 'text',
        content: { text: 'Sí, quedan 3' },
        channel_uuid: channel.id,
        metadata: { order: 'A-7' },
      },
    });
    expect(res.statusCode).toBe(200);
    await receiver.waitFor(before + 1);
    const { body } = verified(before);
    expect(body.payload).toMatchObject({
      to: '5491155550001',
      text: 'Sí, quedan 3',
      status: 'sent',
      channel: 'whatsapp',
      metadata: { order: 'A-7' },
    });
    expect(body.payload.contact.phoneNumber).toBe('+5491155550001');
  });
});
