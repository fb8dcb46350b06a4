import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inboundMessage, signedNotification } from '../../helpers/fake-graph-api.ts';
import type { Tenant } from '../../helpers/tenants.ts';
import type { TestApp } from '../../helpers/test-app.ts';
import { notificationFor, WEBHOOK, withWhatsAppChannel, type TestChannel } from './whatsapp-helpers.ts';

// The generic webhook route: a provider kind answers under /channels/<kind>/webhook and under each
// path segment its registry entry declares (WhatsApp Cloud: `whatsapp`, the path Meta's apps know).
const KIND_PATH = '/channels/whatsapp_cloud/webhook';
const PATHS = [WEBHOOK, KIND_PATH];

let t: TestApp;
let tenant: Tenant;
let channel: TestChannel;

beforeAll(async () => {
  ({ t, tenant, channel } = await withWhatsAppChannel());
});
afterAll(() => t.close());

const storedTexts = async (providerMessageIds: string[]) =>
  (
    await t.database.db
      .selectFrom('messages')
      .select(['provider_message_id', 'text', 'channel_id', 'direction'])
      .where('business_id', '=', tenant.businessId)
      .where('provider_message_id', 'in', providerMessageIds)
      .orderBy('provider_message_id')
      .execute()
  ).map((m) => ({ ...m }));

describe.each(PATHS)('%s', (url) => {
  it('answers the subscription handshake with the challenge of a channel of the kind', async () => {
    const query = { 'hub.mode': 'subscribe', 'hub.verify_token': channel.verifyToken, 'hub.challenge': '8812' };
    const res = await t.app.inject({ method: 'GET', url, query });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(res.body).toBe('8812');
    const refused = await t.app.inject({ method: 'GET', url, query: { ...query, 'hub.verify_token': 'other' } });
    expect(refused.statusCode).toBe(403);
    expect(refused.json()).toEqual({ error: { code: 'forbidden', message: 'verification refused' } });
  });

  it('validates the handshake query by the kind’s schema', async () => {
    const res = await t.app.inject({ method: 'GET', url, query: { 'hub.verify_token': 'x'.repeat(257) } });
    expect(res.statusCode).toBe(400);
    expect(res.json().error.code).toBe('validation_error');
  });

  it('stores a signed notification, and refuses one signed with another secret or for an unknown account', async () => {
    const id = `wamid.route-${url.split('/')[2]}`;
    const body = notificationFor(channel, {
      contacts: [{ waId: '5491133445566', name: 'Route' }],
      messages: [inboundMessage('5491133445566', 'text', { body: `via ${url}` }, { id })],
    });
    const signed = signedNotification(body, channel.appSecret);
    const res = await t.app.inject({ method: 'POST', url, headers: signed.headers, payload: signed.payload });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ success: true });
    expect(await storedTexts([id])).toEqual([
      { provider_message_id: id, text: `via ${url}`, channel_id: channel.id, direction: 'inbound' },
    ]);

    const forged = signedNotification(body, 'not-the-app-secret');
    const bad = await t.app.inject({ method: 'POST', url, headers: forged.headers, payload: forged.payload });
    expect(bad.statusCode).toBe(401);
    expect(bad.json()).toEqual({ error: { code: 'unauthorized', message: 'invalid X-Hub-Signature-256' } });

    const stranger = signedNotification(
      notificationFor({ ...channel, phoneNumberId: '999000111222333' }, { messages: [] }),
      channel.appSecret,
    );
    const unknown = await t.app.inject({ method: 'POST', url, headers: stranger.headers, payload: stranger.payload });
    expect(unknown.statusCode).toBe(401);
    expect(unknown.json()).toEqual({ error: { code: 'unauthorized', message: 'unknown phone_number_id' } });
  });

  it('answers 400 for a body that is not a notification of the kind', async () => {
    const signed = signedNotification({ object: 'page', entry: [] }, channel.appSecret);
    const res = await t.app.inject({ method: 'POST', url, headers: signed.headers, payload: signed.payload });
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toEqual({
      code: 'validation_error',
      message: 'not a WhatsApp Business Account notification',
    });
  });
});

describe('one notification under both paths', () => {
  it('is stored once: the paths reach the same kind and channels', async () => {
    const id = 'wamid.route-both';
    const body = notificationFor(channel, {
      messages: [inboundMessage('5491133445577', 'text', { body: 'once' }, { id })],
    });
    const signed = signedNotification(body, channel.appSecret);
    for (const url of PATHS) {
      const res = await t.app.inject({ method: 'POST', url, headers: signed.headers, payload: signed.payload });
      expect(res.json()).toEqual({ success: true });
    }
    expect(await storedTexts([id])).toHaveLength(1);
  });
});

describe('an unknown provider', () => {
  it.each(['GET', 'POST'] as const)('answers %s with 404 and the error body', async (method) => {
    for (const provider of ['telegram', 'WHATSAPP', 'whatsapp_web', 'toString']) {
      const signed = signedNotification({ object: 'whatsapp_business_account', entry: [] }, channel.appSecret);
      const res = await t.app.inject({
        method,
        url: `/channels/${provider}/webhook`,
        ...(method === 'POST' ? { headers: signed.headers, payload: signed.payload } : {}),
      });
      expect(res.statusCode, provider).toBe(404);
      expect(res.json()).toEqual({ error: { code: 'not_found', message: 'channel provider not found' } });
    }
  });
});

describe('the OpenAPI document', () => {
  it('describes the handshake and the notifications under both paths', async () => {
    const doc = (await t.app.inject({ url: '/openapi.json' })).json();
    for (const path of PATHS) {
      expect(Object.keys(doc.paths[path]).sort(), path).toEqual(['get', 'post']);
      expect(doc.paths[path].post.summary).toBe('WhatsApp Cloud API notifications (signed by Meta)');
      expect(Object.keys(doc.paths[path].post.responses).sort()).toEqual(['200', '400', '401', '413', '500', '503']);
      expect(doc.paths[path].get.parameters.map((p: { name: string }) => p.name)).toEqual([
        'hub.mode',
        'hub.verify_token',
        'hub.challenge',
      ]);
    }
    expect(doc.paths['/channels/{provider}/webhook']).toBeUndefined();
  });
});
