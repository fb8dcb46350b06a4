import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ProviderError } from '../../../src/channels/provider.ts';
import { classifyTwilioError, twilioError } from '../../../src/channels/twilio-common/twilio.errors.ts';
import { createTenant, type Tenant } from '../../helpers/tenants.ts';
import { PUBLIC_URL } from '../../helpers/test-app.ts';
import { settled } from '../sending/sending.fixtures.ts';
import { createSmsChannel, newNumber, SMS_WEBHOOK, withSmsChannel, type SmsFixture } from './sms-helpers.ts';

let f: SmsFixture;
let other: Tenant;
beforeAll(async () => {
  f = await withSmsChannel();
  other = await createTenant(f.t.app, 'Other');
});
afterAll(() => f.close());
beforeEach(() => f.twilio.reset());

const send = (payload: Record<string, unknown>, headers = f.tenant.headers) =>
  f.t.app.inject({
    method: 'POST',
    url: '/external/v2/messages/send',
    headers,
    payload: { from: 'sms', channel_uuid: f.channel.id, type: 'text', ...payload },
  });
const accepted = async (payload: Record<string, unknown>) => {
  const res = await send(payload);
  expect(res.statusCode, res.body).toBe(200);
  return res.json().message.uuid as string;
};
const sendsTo = (to: string) => f.twilio.sends().filter((s) => s.form.To === to);
const contactOf = async (messageId: string) => {
  const message = await f.t.database.db
    .selectFrom('messages')
    .selectAll()
    .where('id', '=', messageId)
    .executeTakeFirstOrThrow();
  return f.t.database.db
    .selectFrom('contacts')
    .selectAll()
    .where('id', '=', message.contact_id)
    .executeTakeFirstOrThrow();
};

describe('sending SMS through Twilio', () => {
  it('posts a form with basic auth, the channel number, the body and the status callback, and stores the sid', async () => {
    const to = newNumber();
    const id = await accepted({ to, content: { text: 'Your table is ready' } });
    const row = await settled(f.t, id);
    expect(row.status).toBe('SENT');
    const [call] = sendsTo(to);
    expect(call.headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect(call.headers.authorization).toBe(
      `Basic ${Buffer.from(`${f.twilio.accountSid}:${f.twilio.authToken}`).toString('base64')}`,
    );
    expect(call.form).toEqual({
      To: to,
      From: f.channel.number,
      Body: 'Your table is ready',
      StatusCallback: `${PUBLIC_URL}${SMS_WEBHOOK}?reference=${id}`,
    });
    expect(row.provider_message_id).toMatch(/^SM[0-9a-f]{32}$/);
    // SMS has no service window: a first message to a new number needs no template.
    expect((await contactOf(id)).source).toBe('sms');
  });

  it('sends media by URL as an MMS with its caption as the body', async () => {
    const to = newNumber();
    const id = await accepted({
      to,
      type: 'image',
      content: { url: 'https://cdn.example.com/menu.png', caption: 'Menu' },
    });
    expect((await settled(f.t, id)).status).toBe('SENT');
    const [call] = sendsTo(to);
    expect(call.mediaUrls).toEqual(['https://cdn.example.com/menu.png']);
    expect(call.form.Body).toBe('Menu');
  });

  it('sends through a messaging service when the channel has one', async () => {
    const channel = await createSmsChannel(f.t.app, f.tenant.businessId, f.twilio, {
      messaging_service_sid: `MG${'b'.repeat(32)}`,
    });
    const to = newNumber();
    const res = await send({ to, channel_uuid: channel.id, content: { text: 'via service' } });
    expect(res.statusCode, res.body).toBe(200);
    expect((await settled(f.t, res.json().message.uuid)).status).toBe('SENT');
    const [call] = sendsTo(to);
    expect(call.form.MessagingServiceSid).toBe(`MG${'b'.repeat(32)}`);
    expect(call.form.From).toBeUndefined();
  });

  it('refuses a text over 1600 characters with 400 text_too_long, counting UCS-2 and GSM-7 alike by characters', async () => {
    const long = await send({ to: newNumber(), content: { text: 'a'.repeat(1601) } });
    expect(long.statusCode).toBe(400);
    expect(long.json().error).toMatchObject({ code: 'text_too_long' });
    expect(long.json().error.message).toContain('GSM-7, 11 segments');
    const emoji = await send({ to: newNumber(), content: { text: '😀'.repeat(1601) } });
    expect(emoji.statusCode).toBe(400);
    expect(emoji.json().error.message).toContain('UCS-2');
    const caption = await send({
      to: newNumber(),
      type: 'image',
      content: { url: 'https://cdn.example.com/a.png', caption: 'x'.repeat(1601) },
    });
    expect(caption.statusCode).toBe(400);
    // 1600 emoji are 1600 characters: accepted.
    const to = newNumber();
    const fits = await accepted({ to, content: { text: '😀'.repeat(1600) } });
    expect((await settled(f.t, fits)).status).toBe('SENT');
    expect(sendsTo(to).map((s) => [...s.form.Body].length)).toEqual([1600]);
  });

  it('marks the recipient opted out of SMS on 21610, and refuses later sends with 400 blocked until an opt-in', async () => {
    const to = newNumber();
    f.twilio.unsubscribe(to);
    const id = await accepted({ to, content: { text: 'promo' } });
    const row = await settled(f.t, id);
    expect(row.status).toBe('ERROR');
    expect(row.error).toContain('21610');
    expect(sendsTo(to)).toHaveLength(1); // final: not retried
    expect((await contactOf(id)).collected_data).toMatchObject({ sms_opted_out: true });

    const blocked = await send({ to, content: { text: 'again' } });
    expect(blocked.statusCode).toBe(400);
    expect(blocked.json().error).toMatchObject({ code: 'blocked' });
    expect(sendsTo(to)).toHaveLength(1);

    // They texted START: an opt-in recorded by the send lets it through.
    f.twilio.reset();
    const optIn = await accepted({ to, content: { text: 'welcome back' }, optin_contact: true });
    expect((await settled(f.t, optIn)).status).toBe('SENT');
    expect((await contactOf(optIn)).collected_data).toMatchObject({ sms_opted_out: false });
  });

  it('retries what Twilio calls temporary and gives up on what it calls final', async () => {
    f.twilio.failNextSends(1, { status: 429, code: 20429, message: 'Too Many Requests' });
    const first = newNumber();
    const retried = await accepted({ to: first, content: { text: 'retry me' } });
    expect((await settled(f.t, retried, 20_000)).status).toBe('SENT');
    expect(sendsTo(first)).toHaveLength(2);

    f.twilio.reset();
    f.twilio.failNextSends(1, { status: 400, code: 21211, message: "The 'To' number is not a valid phone number." });
    const to = newNumber();
    const invalid = await accepted({ to, content: { text: 'no such number' } });
    const row = await settled(f.t, invalid);
    expect(row.status).toBe('ERROR');
    expect(row.error).toContain('21211');
    expect(sendsTo(to)).toHaveLength(1);
  });

  it("refuses bad input and another business's channel", async () => {
    expect((await send({ to: 'not a number', content: { text: 'x' } })).statusCode).toBe(400);
    expect((await send({ to: newNumber(), content: {} })).statusCode).toBe(400);
    expect(
      (await send({ to: newNumber(), type: 'sticker', content: { url: 'https://cdn.example.com/s.webp' } })).statusCode,
    ).toBe(400);
    expect((await send({ to: newNumber(), from: 'whatsapp', content: { text: 'x' } })).statusCode).toBe(400);
    expect((await send({ to: newNumber(), content: { text: 'x' }, surprise: true })).statusCode).toBe(400);
    const theirs = await send({ to: newNumber(), content: { text: 'x' } }, other.headers);
    expect([400, 404]).toContain(theirs.statusCode);
    expect(f.twilio.sends()).toHaveLength(0);
  });
});

describe('Twilio error classification', () => {
  it.each([
    [429, 20429, true],
    [400, 30001, true],
    [500, 20500, true],
    [400, 21211, false],
    [400, 21610, false],
    [400, 21617, false],
    [401, 20003, false],
    [400, 30007, false],
    [503, 99999, true],
    [400, 99999, false],
  ])('HTTP %i code %i: retryable %s', (status, code, retryable) => {
    const err = twilioError(status, {
      code,
      message: 'm',
      more_info: `https://www.twilio.com/docs/errors/${code}`,
      status,
    });
    expect(classifyTwilioError(err)).toMatchObject({ retryable, code: String(code) });
  });

  it('marks only 21610 as the recipient opting out, and reads a body without a code by its HTTP status', () => {
    expect(classifyTwilioError(twilioError(400, { code: 21610, message: 'unsubscribed' })).recipientOptedOut).toBe(
      true,
    );
    expect(classifyTwilioError(twilioError(400, { code: 21211, message: 'bad' })).recipientOptedOut).toBeUndefined();
    expect(classifyTwilioError(twilioError(502, '<html>bad gateway</html>'))).toMatchObject({
      retryable: true,
      code: 'http_502',
    });
    expect(classifyTwilioError(new ProviderError('invalid_response', 'x', false))).toMatchObject({ retryable: false });
  });
});
