import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { echoEvent, messageEvent, messagingNotification, metaId } from '../../helpers/fake-meta-messaging-api.ts';
import { createTenant } from '../../helpers/tenants.ts';
import { walk } from '../exports/export-helpers.ts';
import { until } from '../sending/sending.fixtures.ts';
import { createMetaChannel, withMetaChannels, type MetaChannel, type MetaFixture } from './meta-helpers.ts';

let f: MetaFixture;
beforeAll(async () => {
  f = await withMetaChannels();
});
afterAll(() => f.close());

const db = () => f.t.database.db;
const page = () => f.messenger;
const messengerBody = (events: unknown[], field?: string) =>
  messagingNotification('page', page().account, events, field);
const byProviderId = (id: string) =>
  db().selectFrom('messages').selectAll().where('provider_message_id', '=', id).execute();
const ofBusiness = async () =>
  (await db().selectFrom('messages').select('id').where('business_id', '=', f.tenant.businessId).execute()).length;
const eventTypes = async (messageId: string) =>
  (await db().selectFrom('domain_events').selectAll().where('subject_id', '=', messageId).execute()).map((e) => ({
    type: e.type,
    data: e.data,
  }));

/** A message event from a new person, posted; answers the person and the event's mid. */
async function fromPerson(channel: MetaChannel, message: Record<string, unknown>, person = metaId()) {
  const event = messageEvent(person, channel.account, message);
  const object = channel.kind === 'messenger' ? 'page' : 'instagram';
  const res = await f.post(channel, messagingNotification(object, channel.account, [event]));
  expect(res.statusCode, res.body).toBe(200);
  return { person, mid: event.message.mid };
}

describe('Messenger webhook: messages', () => {
  it('stores a text with its contact (PSID identity) and writes message_created; the profile names the contact', async () => {
    const person = metaId();
    f.fake.setProfile(person, { first_name: 'Ada', last_name: 'Lovelace', profile_pic: 'https://x.test/p.jpg' });
    const { mid } = await fromPerson(page(), { text: 'Hello page' }, person);
    const [row] = await byProviderId(mid);
    expect(row).toMatchObject({
      channel: 'messenger',
      channel_id: page().id,
      direction: 'inbound',
      sender_type: 'contact',
      type: 'text',
      text: 'Hello page',
      sender_address: person,
      recipient_address: page().account,
    });
    const identity = await db()
      .selectFrom('contact_identities')
      .selectAll()
      .where('business_id', '=', f.tenant.businessId)
      .where('value', '=', person)
      .executeTakeFirstOrThrow();
    expect(identity).toMatchObject({ kind: 'page_scoped_id', contact_id: row.contact_id });
    expect((await eventTypes(row.id)).map((e) => e.type)).toEqual(['message_created']);
    await until(async () => {
      const contact = await db().selectFrom('contacts').selectAll().where('id', '=', row.contact_id).executeTakeFirst();
      return contact?.first_name === 'Ada' && contact.last_name === 'Lovelace';
    });
    // The profile is looked up once, for the new contact only.
    await fromPerson(page(), { text: 'again' }, person);
    expect(f.fake.requests.filter((r) => r.path.endsWith(`/${person}`))).toHaveLength(1);
    expect(f.fake.requests.find((r) => r.path.endsWith(`/${person}`))?.query.fields).toBe('first_name,last_name');
  });

  it('reads attachments (one message each, fetched without the token), quick replies, postbacks, reactions and replies', async () => {
    const person = metaId();
    const image = Buffer.from('\x89PNG fake');
    const url = f.fake.addAttachment(image, 'image/png');
    const { mid: imageMid } = await fromPerson(
      page(),
      {
        attachments: [
          { type: 'image', payload: { url } },
          { type: 'fallback', payload: { url: null } },
        ],
      },
      person,
    );
    const [imageRow] = await byProviderId(imageMid);
    expect(imageRow).toMatchObject({ type: 'image' });
    expect((await byProviderId(`${imageMid}/1`))[0]).toMatchObject({ type: 'unsupported' });
    await until(async () => {
      const media = await db().selectFrom('media').selectAll().where('message_id', '=', imageRow.id).executeTakeFirst();
      return media?.storage_key != null;
    });
    const download = f.fake.requests.find((r) => r.path.startsWith('/cdn/'));
    expect(download?.headers.authorization).toBeUndefined();

    const { mid: quickMid } = await fromPerson(page(), { text: 'Yes please', quick_reply: { payload: 'YES' } }, person);
    expect((await byProviderId(quickMid))[0]).toMatchObject({ type: 'button', text: 'Yes please' });
    expect((await byProviderId(quickMid))[0].metadata).toMatchObject({
      button: { text: 'Yes please', payload: 'YES' },
    });

    const postback = {
      sender: { id: person },
      recipient: { id: page().account },
      timestamp: Date.now(),
      postback: { mid: `m_pb_${metaId()}`, title: 'Get started', payload: 'GET_STARTED' },
    };
    expect((await f.post(page(), messengerBody([postback]))).statusCode).toBe(200);
    const [postbackRow] = await byProviderId(postback.postback.mid);
    expect(postbackRow).toMatchObject({ type: 'button', text: 'Get started' });
    expect(postbackRow.metadata).toMatchObject({ button: { payload: 'GET_STARTED' } });

    const { mid: replyMid } = await fromPerson(page(), { text: 'about that', reply_to: { mid: quickMid } }, person);
    expect((await byProviderId(replyMid))[0].reply_to_id).toBe((await byProviderId(quickMid))[0].id);

    const reaction = {
      sender: { id: person },
      recipient: { id: page().account },
      timestamp: Date.now(),
      reaction: { mid: quickMid, action: 'react', reaction: 'love', emoji: '\u2764' },
    };
    expect((await f.post(page(), messengerBody([reaction]))).statusCode).toBe(200);
    const reactions = await db()
      .selectFrom('messages')
      .selectAll()
      .where('business_id', '=', f.tenant.businessId)
      .where('type', '=', 'reaction')
      .execute();
    expect(reactions).toHaveLength(1);
    expect(reactions[0].metadata).toMatchObject({ reaction: { emoji: '\u2764', provider_message_id: quickMid } });
  });

  it('stores a redelivered mid once', async () => {
    const event = messageEvent(metaId(), page().account, { text: 'twice' });
    expect((await f.post(page(), messengerBody([event]))).statusCode).toBe(200);
    expect((await f.post(page(), messengerBody([event, event]))).statusCode).toBe(200);
    expect(await byProviderId(event.message.mid)).toHaveLength(1);
  });

  it('refuses a wrong signature and another business page with 401, storing nothing', async () => {
    const before = await ofBusiness();
    const event = messageEvent(metaId(), page().account, { text: 'forged' });
    const forged = await f.post(page(), messengerBody([event]), 'not-the-secret');
    expect(forged.statusCode).toBe(401);
    expect(forged.json()).toMatchObject({ error: expect.any(Object) });
    const unsigned = await f.t.app.inject({
      method: 'POST',
      url: '/channels/messenger/webhook',
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify(messengerBody([event])),
    });
    expect(unsigned.statusCode).toBe(401);
    // Another business's page, signed with its own secret, cannot name this business's page.
    const other = await createTenant(f.t.app, 'Other');
    const theirs = await createMetaChannel(f.t, other.businessId, f.fake, 'messenger');
    const mixed = messagingNotification('page', page().account, [
      event,
      messageEvent(metaId(), theirs.account, { text: 'mine' }),
    ]);
    expect((await f.post(theirs, mixed)).statusCode).toBe(401);
    expect(await ofBusiness()).toBe(before);
    expect(await byProviderId(event.message.mid)).toHaveLength(0);
  });

  it('answers 400 to a body that is not a Messenger notification, and to an Instagram one', async () => {
    const res = await f.post(page(), { object: 'instagram', entry: [] });
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toBeDefined();
    expect((await f.post(page(), { hello: 'world' })).statusCode).toBe(400);
  });

  it("answers Meta's hub.challenge with the channel's verify token, 403 otherwise", async () => {
    const ask = (token: string) =>
      f.t.app.inject({
        method: 'GET',
        url: `/channels/messenger/webhook?hub.mode=subscribe&hub.verify_token=${token}&hub.challenge=1158201444`,
      });
    const ok = await ask(page().verifyToken);
    expect(ok.statusCode).toBe(200);
    expect(ok.body).toBe('1158201444');
    expect((await ask('wrong')).statusCode).toBe(403);
    // Instagram's token does not verify Messenger's webhook.
    expect((await ask(f.instagram.verifyToken)).statusCode).toBe(403);
  });
});

describe('Messenger webhook: echoes, standby, receipts', () => {
  it('stores the echo of a message sent elsewhere as outbound, once, with one message_created', async () => {
    const person = metaId();
    await fromPerson(page(), { text: 'hi' }, person);
    const echo = echoEvent(page().account, person, { text: 'Sent from the Page inbox' });
    expect((await f.post(page(), messengerBody([echo]))).statusCode).toBe(200);
    expect((await f.post(page(), messengerBody([echo]))).statusCode).toBe(200);
    const rows = await byProviderId(echo.message.mid);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      direction: 'outbound',
      sender_type: 'human',
      status: 'SENT',
      text: 'Sent from the Page inbox',
      sender_address: page().account,
      recipient_address: person,
    });
    expect((await eventTypes(rows[0].id)).map((e) => e.type)).toEqual(['message_created']);
  });

  it('stores a message on standby, marked so, and its message_created says so (no AI run)', async () => {
    const event = messageEvent(metaId(), page().account, { text: 'while another app talks' });
    expect((await f.post(page(), messengerBody([event], 'standby'))).statusCode).toBe(200);
    const [row] = await byProviderId(event.message.mid);
    expect(row).toMatchObject({ direction: 'inbound', text: 'while another app talks' });
    expect(row.metadata).toMatchObject({ handed_over: true });
    const [created] = await eventTypes(row.id);
    expect(created).toMatchObject({ type: 'message_created', data: { handed_over: true } });
  });

  it('moves outbound messages by delivery mids and read watermarks', async () => {
    const person = metaId();
    await fromPerson(page(), { text: 'send me something' }, person);
    const send = await f.t.app.inject({
      method: 'POST',
      url: '/external/v2/messages/send',
      headers: f.tenant.headers,
      payload: { from: 'messenger', channel_uuid: page().id, to: person, type: 'text', content: { text: 'one' } },
    });
    expect(send.statusCode, send.body).toBe(200);
    const id = send.json().message.uuid as string;
    let mid = '';
    await until(async () => {
      const row = await db().selectFrom('messages').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
      mid = row.provider_message_id ?? '';
      return row.status === 'SENT';
    });
    // The echo of this send (its id in metadata, its mid) is the message sent, not a new one.
    const before = await ofBusiness();
    const echo = echoEvent(page().account, person, { mid, text: 'one', metadata: id });
    expect((await f.post(page(), messengerBody([echo]))).statusCode).toBe(200);
    const plain = echoEvent(page().account, person, { mid, text: 'one' });
    expect((await f.post(page(), messengerBody([plain]))).statusCode).toBe(200);
    expect(await ofBusiness()).toBe(before);
    expect(await byProviderId(mid)).toHaveLength(1);

    const receipt = (part: Record<string, unknown>) => ({
      sender: { id: person },
      recipient: { id: page().account },
      timestamp: Date.now() + 1000,
      ...part,
    });
    const status = async () =>
      (await db().selectFrom('messages').select('status').where('id', '=', id).executeTakeFirstOrThrow()).status;
    expect(
      (await f.post(page(), messengerBody([receipt({ delivery: { mids: [mid], watermark: Date.now() + 1000 } })])))
        .statusCode,
    ).toBe(200);
    expect(await status()).toBe('DELIVERED');
    expect(
      (await f.post(page(), messengerBody([receipt({ read: { watermark: Date.now() + 1000 } })]))).statusCode,
    ).toBe(200);
    expect(await status()).toBe('READ');
  });
});

describe('Instagram webhook', () => {
  it("stores a direct message with its IGSID identity, and accepts the dashboard's test events (changes[])", async () => {
    const person = metaId();
    f.fake.setProfile(person, { name: 'Grace Hopper', username: 'grace' });
    const { mid } = await fromPerson(f.instagram, { text: 'Hi from IG' }, person);
    const [row] = await byProviderId(mid);
    expect(row).toMatchObject({ channel: 'instagram', channel_id: f.instagram.id, type: 'text', text: 'Hi from IG' });
    const identity = await db()
      .selectFrom('contact_identities')
      .selectAll()
      .where('value', '=', person)
      .executeTakeFirstOrThrow();
    expect(identity.kind).toBe('instagram_scoped_id');
    await until(async () => {
      const contact = await db().selectFrom('contacts').selectAll().where('id', '=', row.contact_id).executeTakeFirst();
      return contact?.first_name === 'Grace';
    });

    const test = {
      object: 'instagram',
      entry: [
        {
          id: '0',
          time: Math.floor(Date.now() / 1000),
          changes: [
            {
              field: 'messages',
              value: {
                sender: { id: metaId() },
                recipient: { id: f.instagram.account },
                timestamp: String(Math.floor(Date.now() / 1000)),
                message: { mid: `random_mid_${metaId()}`, text: 'random_text' },
              },
            },
          ],
        },
      ],
    };
    expect((await f.post(f.instagram, test)).statusCode).toBe(200);
    expect(await byProviderId(test.entry[0].changes[0].value.message.mid)).toHaveLength(1);
    // Instagram's read receipt names its message.
    const send = await f.t.app.inject({
      method: 'POST',
      url: '/external/v2/messages/send',
      headers: f.tenant.headers,
      payload: { from: 'instagram', channel_uuid: f.instagram.id, to: person, type: 'text', content: { text: 'hi' } },
    });
    expect(send.statusCode, send.body).toBe(200);
    const sentId = send.json().message.uuid as string;
    let sentMid = '';
    await until(async () => {
      const sent = await db().selectFrom('messages').selectAll().where('id', '=', sentId).executeTakeFirstOrThrow();
      sentMid = sent.provider_message_id ?? '';
      return sent.status === 'SENT';
    });
    const read = {
      sender: { id: person },
      recipient: { id: f.instagram.account },
      timestamp: Date.now(),
      read: { mid: sentMid },
    };
    expect(
      (await f.post(f.instagram, messagingNotification('instagram', f.instagram.account, [read]))).statusCode,
    ).toBe(200);
    expect(
      (await db().selectFrom('messages').select('status').where('id', '=', sentId).executeTakeFirstOrThrow()).status,
    ).toBe('READ');

    // The export names each message's channel type.
    const since = new Date(Date.now() - 86_400_000).toISOString();
    const until_ = new Date(Date.now() + 86_400_000).toISOString();
    const { records } = await walk(f.t, f.tenant, 'messages', `since=${since}&until=${until_}&limit=100`);
    expect(records.find((r) => r.id === row.id)).toMatchObject({ channel: 'instagram' });
    expect(new Set(records.map((r) => r.channel))).toEqual(new Set(['messenger', 'instagram']));
    // A Messenger body on Instagram's webhook is refused.
    expect((await f.post(f.instagram, messengerBody([]))).statusCode).toBe(400);
  });
});
