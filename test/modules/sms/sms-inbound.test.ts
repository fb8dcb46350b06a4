import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { incomingSms, statusCallback } from '../../helpers/fake-twilio-api.ts';
import { adminHeaders, createTenant } from '../../helpers/tenants.ts';
import { PUBLIC_URL } from '../../helpers/test-app.ts';
import { until } from '../sending/sending.fixtures.ts';
import { createSmsChannel, newNumber, SMS_WEBHOOK, withSmsChannel, type SmsFixture } from './sms-helpers.ts';
import { twilioWebhook } from '../../helpers/fake-twilio-api.ts';

let f: SmsFixture;
beforeAll(async () => {
  f = await withSmsChannel();
});
afterAll(() => f.close());

const db = () => f.t.database.db;
const sms = (from: string, body: string, sid?: string) =>
  incomingSms({ accountSid: f.twilio.accountSid, from, to: f.channel.number, body, ...(sid ? { sid } : {}) });
const messagesBy = (providerId: string) =>
  db().selectFrom('messages').selectAll().where('provider_message_id', '=', providerId).execute();
const countMessages = async () =>
  (await db().selectFrom('messages').select('id').where('business_id', '=', f.tenant.businessId).execute()).length;

describe('Twilio webhook: incoming messages', () => {
  it('stores an SMS with its contact and conversation, answers empty TwiML, and writes message_created', async () => {
    const from = newNumber();
    const params = sms(from, 'Hello, is the shop open?');
    const res = await f.post(params);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/xml/);
    expect(res.body).toBe('<?xml version="1.0" encoding="UTF-8"?><Response/>');

    const [row] = await messagesBy(params.MessageSid);
    expect(row).toMatchObject({
      business_id: f.tenant.businessId,
      channel: 'sms',
      channel_id: f.channel.id,
      direction: 'inbound',
      type: 'text',
      text: 'Hello, is the shop open?',
      status: 'RECEIVED',
    });
    const contact = await db()
      .selectFrom('contacts')
      .selectAll()
      .where('id', '=', row.contact_id)
      .executeTakeFirstOrThrow();
    expect(contact).toMatchObject({ phone_number: from.slice(1), source: 'sms', business_id: f.tenant.businessId });
    const conversation = await db()
      .selectFrom('conversations')
      .selectAll()
      .where('id', '=', row.conversation_id)
      .executeTakeFirstOrThrow();
    expect(conversation).toMatchObject({ channel: 'sms', channel_id: f.channel.id, contact_id: contact.id });
    const events = await db()
      .selectFrom('domain_events')
      .select('type')
      .where('business_id', '=', f.tenant.businessId)
      .where('subject_id', '=', row.id)
      .execute();
    expect(events.map((e) => e.type)).toContain('message_created');

    // A second SMS from the same number finds the contact and its open conversation.
    const again = sms(from, 'Anyone there?');
    expect((await f.post(again)).statusCode).toBe(200);
    const [second] = await messagesBy(again.MessageSid);
    expect(second).toMatchObject({ contact_id: contact.id, conversation_id: conversation.id });
  });

  it('stores a redelivered MessageSid once', async () => {
    const params = sms(newNumber(), 'twice');
    expect((await f.post(params)).statusCode).toBe(200);
    expect((await f.post(params)).statusCode).toBe(200);
    expect(await messagesBy(params.MessageSid)).toHaveLength(1);
  });

  it('stores an MMS as one message per attachment and downloads each with the account credentials', async () => {
    const image = Buffer.from('\x89PNG fake image');
    const pdf = Buffer.from('%PDF-1.4 fake');
    const params: Record<string, string> = {
      ...sms(newNumber(), 'Here is the photo', `MM${'a'.repeat(32)}`),
      NumMedia: '2',
      MediaUrl0: f.twilio.addMedia(image, 'image/png'),
      MediaContentType0: 'image/png',
      MediaUrl1: f.twilio.addMedia(pdf, 'application/pdf'),
      MediaContentType1: 'application/pdf',
    };
    expect((await f.post(params)).statusCode).toBe(200);
    const [first] = await messagesBy(params.MessageSid);
    const [second] = await messagesBy(`${params.MessageSid}/1`);
    expect(first).toMatchObject({ type: 'image', text: 'Here is the photo' });
    expect(second).toMatchObject({ type: 'document' });
    const mediaOf = (id: string) =>
      db().selectFrom('media').selectAll().where('message_id', '=', id).executeTakeFirstOrThrow();
    await until(
      async () => (await mediaOf(first.id)).storage_key !== null && (await mediaOf(second.id)).storage_key !== null,
    );
    expect(await mediaOf(first.id)).toMatchObject({ size_bytes: image.length, content_type: 'image/png' });
    expect(await mediaOf(second.id)).toMatchObject({ size_bytes: pdf.length, content_type: 'application/pdf' });
    // Each download asked Twilio with basic auth, then followed its redirect to storage without it.
    const downloads = f.twilio.requests.filter((r) => r.method === 'GET');
    expect(
      downloads.filter((r) => r.path.includes('/Media/')).every((r) => r.headers.authorization?.startsWith('Basic ')),
    ).toBe(true);
    expect(
      downloads.filter((r) => r.path.startsWith('/storage/')).every((r) => r.headers.authorization === undefined),
    ).toBe(true);
    expect(downloads).toHaveLength(4);
  });
});

describe('Twilio webhook: STOP and START', () => {
  it("opts the sender out of SMS on Twilio's STOP, and in again on START", async () => {
    const from = newNumber();
    const sendTo = () =>
      f.t.app.inject({
        method: 'POST',
        url: '/external/v2/messages/send',
        headers: f.tenant.headers,
        payload: { to: from, from: 'sms', type: 'text', content: { text: 'hello' }, channel_uuid: f.channel.id },
      });
    const stop: Record<string, string> = { ...sms(from, 'STOP'), OptOutType: 'STOP' };
    expect((await f.post(stop)).statusCode).toBe(200);
    const [row] = await messagesBy(stop.MessageSid);
    const contact = () =>
      db().selectFrom('contacts').selectAll().where('id', '=', row.contact_id).executeTakeFirstOrThrow();
    expect((await contact()).collected_data).toMatchObject({ sms_opted_out: true });
    const blocked = await sendTo();
    expect(blocked.statusCode).toBe(400);
    expect(blocked.json().error).toMatchObject({ code: 'blocked' });

    expect((await f.post({ ...sms(from, 'START'), OptOutType: 'START' })).statusCode).toBe(200);
    expect((await contact()).collected_data).toMatchObject({ sms_opted_out: false });
    expect((await sendTo()).statusCode).toBe(200);
  });
});

describe('Twilio webhook: refusals', () => {
  it('refuses a wrong, missing or replayed-elsewhere signature with 401 and stores nothing', async () => {
    const before = await countMessages();
    const params = sms(newNumber(), 'forged');
    expect((await f.post(params, 'not-the-auth-token')).statusCode).toBe(401);
    const unsigned = await f.t.app.inject({
      method: 'POST',
      url: SMS_WEBHOOK,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams(params).toString(),
    });
    expect(unsigned.statusCode).toBe(401);
    expect(unsigned.json()).toMatchObject({ error: expect.anything() });
    // Signed for another URL (another service's address): refused.
    const elsewhere = twilioWebhook(`https://elsewhere.example${SMS_WEBHOOK}`, params, f.twilio.authToken);
    expect((await f.t.app.inject({ method: 'POST', url: SMS_WEBHOOK, ...elsewhere })).statusCode).toBe(401);
    // A parameter changed after signing: refused.
    const signed = twilioWebhook(`${PUBLIC_URL}${SMS_WEBHOOK}`, params, f.twilio.authToken);
    const tampered = { ...signed, payload: signed.payload.replace('forged', 'forgeD') };
    expect((await f.t.app.inject({ method: 'POST', url: SMS_WEBHOOK, ...tampered })).statusCode).toBe(401);
    expect(await countMessages()).toBe(before);
  });

  it('refuses a notification of another account, or to a number no channel holds, with 401', async () => {
    const before = await countMessages();
    const otherAccount = { ...sms(newNumber(), 'hi'), AccountSid: `AC${'0'.repeat(32)}` };
    expect((await f.post(otherAccount)).statusCode).toBe(401);
    const unknownNumber = { ...sms(newNumber(), 'hi'), To: newNumber() };
    expect((await f.post(unknownNumber)).statusCode).toBe(401);
    expect(await countMessages()).toBe(before);
  });

  it('answers 400 to a body that is not a Twilio message notification', async () => {
    expect((await f.post({ Hello: 'world' })).statusCode).toBe(400);
    const empty = await f.t.app.inject({
      method: 'POST',
      url: SMS_WEBHOOK,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: '',
    });
    expect(empty.statusCode).toBe(400);
  });

  it("keeps another business's channel to its own business", async () => {
    const other = await createTenant(f.t.app, 'Other SMS');
    const theirs = await createSmsChannel(f.t.app, other.businessId, f.twilio);
    const params = incomingSms({
      accountSid: f.twilio.accountSid,
      from: newNumber(),
      to: theirs.number,
      body: 'to them',
    });
    expect((await f.post(params)).statusCode).toBe(200);
    const [row] = await messagesBy(params.MessageSid);
    expect(row).toMatchObject({ business_id: other.businessId, channel_id: theirs.id });
  });
});

describe('Twilio webhook: status callbacks', () => {
  it('moves an outbound message through sent and delivered, and to ERROR with the ErrorCode when undelivered', async () => {
    const to = newNumber();
    const send = async () => {
      const res = await f.t.app.inject({
        method: 'POST',
        url: '/external/v2/messages/send',
        headers: f.tenant.headers,
        payload: { to, from: 'sms', type: 'text', content: { text: 'Your order shipped' }, channel_uuid: f.channel.id },
      });
      expect(res.statusCode, res.body).toBe(200);
      const id = res.json().message.uuid as string;
      await until(async () => {
        const row = await db()
          .selectFrom('messages')
          .select('provider_message_id')
          .where('id', '=', id)
          .executeTakeFirstOrThrow();
        return row.provider_message_id !== null;
      });
      return db().selectFrom('messages').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    };
    const callback = (sid: string, status: string, errorCode?: string) =>
      f.post(
        statusCallback({
          accountSid: f.twilio.accountSid,
          sid,
          status,
          from: f.channel.number,
          to,
          ...(errorCode ? { errorCode } : {}),
        }),
      );

    const message = await send();
    expect(message.status).toBe('SENT');
    for (const status of ['queued', 'sent', 'delivered']) {
      const res = await callback(message.provider_message_id!, status);
      expect(res.statusCode, res.body).toBe(200);
    }
    const delivered = await db()
      .selectFrom('messages')
      .selectAll()
      .where('id', '=', message.id)
      .executeTakeFirstOrThrow();
    expect(delivered.status).toBe('DELIVERED');

    const failed = await send();
    expect((await callback(failed.provider_message_id!, 'undelivered', '30003')).statusCode).toBe(200);
    const row = await db().selectFrom('messages').selectAll().where('id', '=', failed.id).executeTakeFirstOrThrow();
    expect(row.status).toBe('ERROR');
    expect(row.error).toContain('30003');

    // Undelivered because the recipient replied STOP: the contact is opted out of SMS.
    const unsubscribed = await send();
    expect((await callback(unsubscribed.provider_message_id!, 'undelivered', '21610')).statusCode).toBe(200);
    const contact = await db()
      .selectFrom('contacts')
      .selectAll()
      .where('id', '=', unsubscribed.contact_id)
      .executeTakeFirstOrThrow();
    expect(contact.collected_data).toMatchObject({ sms_opted_out: true });
    const blocked = await f.t.app.inject({
      method: 'POST',
      url: '/external/v2/messages/send',
      headers: f.tenant.headers,
      payload: { to, from: 'sms', type: 'text', content: { text: 'again' }, channel_uuid: f.channel.id },
    });
    expect(blocked.statusCode).toBe(400);
    expect(blocked.json().error).toMatchObject({ code: 'blocked' });
  });
});

describe('Twilio webhook: a send whose answer was lost', () => {
  it("finds its message by the reference in the status callback's URL, which the signature covers", async () => {
    const to = newNumber();
    const res = await f.t.app.inject({
      method: 'POST',
      url: '/external/v2/messages/send',
      headers: f.tenant.headers,
      payload: { to, from: 'sms', type: 'text', content: { text: 'Lost answer' }, channel_uuid: f.channel.id },
    });
    expect(res.statusCode, res.body).toBe(200);
    const id = res.json().message.uuid as string;
    const sent = () => db().selectFrom('messages').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    await until(async () => (await sent()).provider_message_id !== null);
    const sid = (await sent()).provider_message_id!;
    // As if the process had died before recording Twilio's answer.
    await db()
      .updateTable('messages')
      .set({ provider_message_id: null, status: 'PENDING' })
      .where('id', '=', id)
      .execute();
    const url = `${SMS_WEBHOOK}?reference=${id}`;
    const params = statusCallback({
      accountSid: f.twilio.accountSid,
      sid,
      status: 'delivered',
      from: f.channel.number,
      to,
    });
    // Signed over the path without the query: refused, nothing moves.
    const unsigned = twilioWebhook(`${PUBLIC_URL}${SMS_WEBHOOK}`, params, f.twilio.authToken);
    expect((await f.t.app.inject({ method: 'POST', url, ...unsigned })).statusCode).toBe(401);
    expect((await sent()).status).toBe('PENDING');
    const signed = twilioWebhook(`${PUBLIC_URL}${url}`, params, f.twilio.authToken);
    expect((await f.t.app.inject({ method: 'POST', url, ...signed })).statusCode).toBe(200);
    expect(await sent()).toMatchObject({ status: 'DELIVERED', provider_message_id: sid });
  });
});

describe('the SMS channel as the operator sees it', () => {
  it('stores the auth token sealed and never shows it, and takes a rotated one for signatures', async () => {
    const url = `/admin/v1/businesses/${f.tenant.businessId}/channels/${f.channel.id}`;
    const shown = await f.t.app.inject({ url, headers: adminHeaders });
    expect(shown.statusCode).toBe(200);
    expect(shown.body).not.toContain(f.twilio.authToken);
    expect(shown.json().channel).toMatchObject({ type: 'sms', identifier: f.channel.number.slice(1) });
    const row = await db()
      .selectFrom('channels')
      .select('provider_config')
      .where('id', '=', f.channel.id)
      .executeTakeFirstOrThrow();
    expect(JSON.stringify(row.provider_config)).not.toContain(f.twilio.authToken);

    const refused = await f.t.app.inject({
      method: 'PATCH',
      url,
      headers: adminHeaders,
      payload: { provider: { auth_token: 'a'.repeat(32), app_secret: 'not a twilio field' } },
    });
    expect(refused.statusCode).toBe(400);
    const bad = await f.t.app.inject({
      method: 'POST',
      url: `/admin/v1/businesses/${f.tenant.businessId}/channels`,
      headers: adminHeaders,
      payload: {
        type: 'sms',
        identifier: newNumber(),
        provider: { kind: 'twilio', account_sid: 'nope', auth_token: 'x', from_number: '12345' },
      },
    });
    expect(bad.statusCode).toBe(400);

    // A rotated auth token signs from now on; the old one no longer does.
    const rotated = 'r'.repeat(32);
    const patched = await f.t.app.inject({
      method: 'PATCH',
      url,
      headers: adminHeaders,
      payload: { provider: { auth_token: rotated } },
    });
    expect(patched.statusCode, patched.body).toBe(200);
    expect(patched.body).not.toContain(rotated);
    expect((await f.post(sms(newNumber(), 'old token'))).statusCode).toBe(401);
    expect((await f.post(sms(newNumber(), 'new token'), rotated)).statusCode).toBe(200);
  });
});
