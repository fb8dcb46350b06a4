import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  readEvent,
  receivedMessage,
  sentMessage,
  tiktokEvent,
  tiktokPerson,
  type TikTokPerson,
} from '../../helpers/fake-tiktok-api.ts';
import { createTenant } from '../../helpers/tenants.ts';
import { settled, until } from '../sending/sending.fixtures.ts';
import { createTikTokChannel, otherAccount, withTikTokChannel, type TikTokFixture } from './tiktok-helpers.ts';

let f: TikTokFixture;
beforeAll(async () => {
  f = await withTikTokChannel();
});
afterAll(() => f.close());

const db = () => f.t.database.db;
const business = () => f.fake.businessId;
const messageIdOf = (body: { content: string }) => (JSON.parse(body.content) as { message_id: string }).message_id;
const byProviderId = (id: string) =>
  db().selectFrom('messages').selectAll().where('provider_message_id', '=', id).execute();
const ofBusiness = async () =>
  (await db().selectFrom('messages').select('id').where('business_id', '=', f.tenant.businessId).execute()).length;
const eventTypes = async (messageId: string) =>
  (await db().selectFrom('domain_events').select('type').where('subject_id', '=', messageId).execute()).map(
    (e) => e.type,
  );

/** A customer's text, posted; answers its message id. */
async function wrote(person: TikTokPerson, text: string) {
  const body = receivedMessage(business(), person, { type: 'text', text: { body: text } });
  const res = await f.post(body);
  expect(res.statusCode, res.body).toBe(200);
  return messageIdOf(body);
}

describe('TikTok webhook: messages', () => {
  it('stores a text with its contact (conversation id identity, named by the username) and writes message_created', async () => {
    const person = tiktokPerson('ada_lovelace');
    const id = await wrote(person, 'Is this in stock?');
    const [row] = await byProviderId(id);
    expect(row).toMatchObject({
      channel: 'tiktok',
      channel_id: f.channel.id,
      direction: 'inbound',
      sender_type: 'contact',
      type: 'text',
      text: 'Is this in stock?',
      sender_address: person.conversationId,
      recipient_address: business(),
    });
    expect(row.conversation_id).toEqual(expect.any(String));
    const identity = await db()
      .selectFrom('contact_identities')
      .selectAll()
      .where('business_id', '=', f.tenant.businessId)
      .where('value', '=', person.conversationId)
      .executeTakeFirstOrThrow();
    expect(identity).toMatchObject({ kind: 'tiktok_conversation_id', contact_id: row.contact_id });
    const contact = await db().selectFrom('contacts').selectAll().where('id', '=', row.contact_id).executeTakeFirst();
    expect(contact?.first_name).toBe('ada_lovelace');
    expect(await eventTypes(row.id)).toEqual(['message_created']);
    // The public API finds the contact by the channel's address.
    const found = await f.t.app.inject({
      method: 'GET',
      url: `/external/v2/contacts?channel=tiktok&address=${encodeURIComponent(person.conversationId)}`,
      headers: f.tenant.headers,
    });
    expect(found.statusCode, found.body).toBe(200);
    expect(found.json().results.map((c: { id: string }) => c.id)).toEqual([row.contact_id]);
    expect(found.json().results[0].identities).toEqual([
      { kind: 'tiktok_conversation_id', value: person.conversationId },
    ]);
    // A second message joins the same contact and conversation.
    const [second] = await byProviderId(await wrote(person, 'Hello?'));
    expect(second).toMatchObject({ contact_id: row.contact_id, conversation_id: row.conversation_id });
  });

  it('stores an image and downloads it through the media download URL, without the token', async () => {
    const bytes = Buffer.from('\xff\xd8\xff\xe0 jpeg bytes');
    const mediaId = f.fake.addInboundImage(bytes, 'image/jpeg');
    const body = receivedMessage(business(), tiktokPerson(), { type: 'image', image: { media_id: mediaId } });
    expect((await f.post(body)).statusCode).toBe(200);
    const [row] = await byProviderId(messageIdOf(body));
    expect(row).toMatchObject({ type: 'image', direction: 'inbound' });
    await until(async () => {
      const media = await db().selectFrom('media').selectAll().where('message_id', '=', row.id).executeTakeFirst();
      return media?.storage_key != null;
    });
    const media = await db().selectFrom('media').selectAll().where('message_id', '=', row.id).executeTakeFirstOrThrow();
    expect(media).toMatchObject({ content_type: 'image/jpeg', size_bytes: bytes.length });
    const asked = f.fake.requests.find((r) => r.path.endsWith('/media/download/'));
    expect(asked?.headers['access-token']).toBe(f.fake.accessToken);
    expect(asked?.body).toMatchObject({ business_id: business(), media_id: mediaId, message_id: messageIdOf(body) });
    const download = f.fake.requests.find((r) => r.path.startsWith('/media-cdn/'));
    expect(download?.headers['access-token']).toBeUndefined();
  });

  it('stores a shared post as unsupported with its link, and accepts an event of another kind storing nothing', async () => {
    const body = receivedMessage(business(), tiktokPerson(), {
      type: 'share_post',
      share_post: { embed_url: 'https://www.tiktok.com/embed/7300000000000000000' },
    });
    expect((await f.post(body)).statusCode).toBe(200);
    expect((await byProviderId(messageIdOf(body)))[0]).toMatchObject({
      type: 'unsupported',
      text: 'https://www.tiktok.com/embed/7300000000000000000',
    });
    const before = await ofBusiness();
    const referral = tiktokEvent('im_referral_msg', business(), { conversation_id: 'x', referral: { ad: {} } });
    expect((await f.post(referral)).statusCode).toBe(200);
    expect(await ofBusiness()).toBe(before);
  });

  it('stores a message redelivered (TikTok retries) once', async () => {
    const body = receivedMessage(business(), tiktokPerson(), { type: 'text', text: { body: 'twice' } });
    expect((await f.post(body)).statusCode).toBe(200);
    expect((await f.post(body)).statusCode).toBe(200);
    expect(await byProviderId(messageIdOf(body))).toHaveLength(1);
  });
});

describe('TikTok webhook: refusals', () => {
  it('refuses a wrong, missing, malformed or stale signature with 401, storing nothing', async () => {
    const before = await ofBusiness();
    const body = receivedMessage(business(), tiktokPerson(), { type: 'text', text: { body: 'forged' } });
    expect((await f.post(body, 'not-the-secret')).statusCode).toBe(401);
    // Five minutes of skew either way, no more.
    const now = Math.floor(Date.now() / 1000);
    expect((await f.post(body, undefined, now - 360)).statusCode).toBe(401);
    expect((await f.post(body, undefined, now + 360)).statusCode).toBe(401);
    const payload = JSON.stringify(body);
    for (const signature of [undefined, 'sha256=abc', `t=${now}`, `t=${now},s=zz`, `t=abc,s=${'0'.repeat(64)}`]) {
      const res = await f.t.app.inject({
        method: 'POST',
        url: '/channels/tiktok/webhook',
        headers: { 'content-type': 'application/json', ...(signature ? { 'tiktok-signature': signature } : {}) },
        payload,
      });
      expect(res.statusCode, signature).toBe(401);
      expect(res.json().error).toBeDefined();
    }
    expect(await ofBusiness()).toBe(before);
    expect(await byProviderId(messageIdOf(body))).toHaveLength(0);
    // Signed four minutes ago: within the bound.
    expect((await f.post(body, undefined, now - 240)).statusCode).toBe(200);
    expect(await byProviderId(messageIdOf(body))).toHaveLength(1);
  });

  it('answers 400 to a body that is not a TikTok event, storing nothing', async () => {
    const before = await ofBusiness();
    const bad: unknown[] = [
      'not json',
      { hello: 'world' },
      { event: 'im_receive_msg', user_openid: business(), content: 'not json' },
      { event: 'im_receive_msg', user_openid: business(), content: '[1,2]' },
      { event: 'im_receive_msg', user_openid: business(), content: { conversation_id: 'x' } },
      { event: 'im_receive_msg', content: '{}' },
      [receivedMessage(business(), tiktokPerson(), { type: 'text', text: { body: 'in an array' } })],
    ];
    for (const body of bad) {
      const res = await f.post(body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(res.json().error).toBeDefined();
    }
    expect(await ofBusiness()).toBe(before);
  });

  it("refuses another business's account with 401: neither its secret nor its channel reach this business", async () => {
    const before = await ofBusiness();
    const other = await createTenant(f.t.app, 'Other');
    const account = otherAccount();
    const theirs = await createTikTokChannel(f.t, other.businessId, f.fake, account);
    // An event naming this business's account, signed with the other channel's secret.
    const body = receivedMessage(business(), tiktokPerson(), { type: 'text', text: { body: 'not yours' } });
    expect((await f.post(body, theirs.appSecret)).statusCode).toBe(401);
    // An account no channel holds.
    const unknown = receivedMessage('-000unknown', tiktokPerson(), { type: 'text', text: { body: 'who?' } });
    expect((await f.post(unknown)).statusCode).toBe(401);
    expect(await ofBusiness()).toBe(before);
    // Their own event, signed by them, lands on their business only.
    const mine = receivedMessage(account.business_id, tiktokPerson(), { type: 'text', text: { body: 'ours' } });
    expect((await f.post(mine, account.app_secret)).statusCode).toBe(200);
    const [row] = await byProviderId(messageIdOf(mine));
    expect(row).toMatchObject({ business_id: other.businessId, channel_id: theirs.id });
    expect(await ofBusiness()).toBe(before);
  });
});

describe('TikTok webhook: echoes and reads', () => {
  it('stores a message the business sent elsewhere as outbound, once, and matches the echo of its own send', async () => {
    const person = tiktokPerson();
    await wrote(person, 'hi');
    const echo = sentMessage(business(), person, { type: 'text', text: { body: 'Sent from the TikTok app' } });
    expect((await f.post(echo)).statusCode).toBe(200);
    expect((await f.post(echo)).statusCode).toBe(200);
    const rows = await byProviderId(messageIdOf(echo));
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      direction: 'outbound',
      sender_type: 'human',
      status: 'SENT',
      text: 'Sent from the TikTok app',
      recipient_address: person.conversationId,
    });
    // A person's message: message_created goes to the live view, not to the business's webhooks.
    expect(await eventTypes(rows[0].id)).toEqual(['message_created']);

    // The echo of a send of this service is that message, not a second one.
    const send = await f.t.app.inject({
      method: 'POST',
      url: '/external/v2/messages/send',
      headers: f.tenant.headers,
      payload: {
        from: 'tiktok',
        channel_uuid: f.channel.id,
        to: person.conversationId,
        type: 'text',
        content: { text: 'from the API' },
      },
    });
    expect(send.statusCode, send.body).toBe(200);
    const sent = await settled(f.t, send.json().message.uuid as string);
    expect(sent.status).toBe('SENT');
    const before = await ofBusiness();
    const own = sentMessage(
      business(),
      person,
      { type: 'text', text: { body: 'from the API' } },
      sent.provider_message_id!,
    );
    expect((await f.post(own)).statusCode).toBe(200);
    expect(await ofBusiness()).toBe(before);

    // The customer read the conversation: every earlier outbound message to them is READ.
    expect((await f.post(readEvent(business(), person, Date.now() + 1000))).statusCode).toBe(200);
    for (const id of [sent.id, rows[0].id]) {
      const { status } = await db()
        .selectFrom('messages')
        .select('status')
        .where('id', '=', id)
        .executeTakeFirstOrThrow();
      expect(status).toBe('READ');
    }
  });

  it("ignores the business's own read of the conversation", async () => {
    const person = tiktokPerson();
    await wrote(person, 'hello');
    const send = await f.t.app.inject({
      method: 'POST',
      url: '/external/v2/messages/send',
      headers: f.tenant.headers,
      payload: {
        from: 'tiktok',
        channel_uuid: f.channel.id,
        to: person.conversationId,
        type: 'text',
        content: { text: 'hi' },
      },
    });
    const sent = await settled(f.t, send.json().message.uuid as string);
    const own = tiktokEvent('im_mark_read_msg', business(), {
      conversation_id: person.conversationId,
      from_user: { id: business() },
      read: { last_read_timestamp: Date.now() + 1000 },
    });
    expect((await f.post(own)).statusCode).toBe(200);
    expect(
      (await db().selectFrom('messages').select('status').where('id', '=', sent.id).executeTakeFirstOrThrow()).status,
    ).toBe('SENT');
  });
});
