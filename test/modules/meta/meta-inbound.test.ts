import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { echoEvent, messageEvent, messagingNotification, metaId } from '../../helpers/fake-meta-messaging-api.ts';
import { createTenant } from '../../helpers/tenants.ts';
import { PUBLIC_URL } from '../../helpers/test-app.ts';
import { AVATAR_MAX_BYTES } from '../../../src/modules/media/media.avatars.ts';
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
    f.fake.setProfile(person, { first_name: 'Ada', last_name: 'Lovelace' });
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
    expect(f.fake.requests.find((r) => r.path.endsWith(`/${person}`))?.query.fields).toBe(
      'first_name,last_name,profile_pic',
    );
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
  it("takes the echo of a send told before the send's answer as that send's receipt, not a person's message", async () => {
    const person = metaId();
    await fromPerson(f.instagram, { text: 'Is it in stock?' }, person);
    const held = f.fake.holdNextSend();
    const send = await f.t.app.inject({
      method: 'POST',
      url: '/external/v2/messages/send',
      headers: f.tenant.headers,
      payload: {
        from: 'instagram',
        channel_uuid: f.instagram.id,
        to: person,
        type: 'text',
        content: { text: 'It is' },
      },
    });
    expect(send.statusCode, send.body).toBe(200);
    const id = send.json().message.uuid as string;
    const mid = await held.sent;
    const before = await ofBusiness();
    // Instagram's echo carries no id of ours; it comes while Meta has not answered the send yet.
    const echo = echoEvent(f.instagram.account, person, { mid, text: 'It is' });
    const posted = await f.post(f.instagram, messagingNotification('instagram', f.instagram.account, [echo]));
    expect(posted.statusCode, posted.body).toBe(200);
    expect(await ofBusiness()).toBe(before);
    const sent = () => db().selectFrom('messages').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    expect(await sent()).toMatchObject({ status: 'SENT', provider_message_id: mid, sender_type: 'api' });
    held.release();
    await until(async () => (await sent()).provider_call_at === null);
    expect(await sent()).toMatchObject({ status: 'SENT', provider_message_id: mid, error: null });
    expect(await byProviderId(mid)).toHaveLength(1);
    // An echo of something a person wrote in Instagram's app is still their message.
    const typed = echoEvent(f.instagram.account, person, { text: 'It is' });
    expect(
      (await f.post(f.instagram, messagingNotification('instagram', f.instagram.account, [typed]))).statusCode,
    ).toBe(200);
    expect(await byProviderId(typed.message.mid)).toMatchObject([{ direction: 'outbound', sender_type: 'human' }]);
  });

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

describe('Profile pictures', () => {
  // The smallest PNG: one transparent pixel.
  const png = Buffer.from(
    'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==',
    'base64',
  );
  const jpeg = Buffer.concat([Buffer.from('ffd8ffe000104a46494600', 'hex'), Buffer.alloc(64, 1)]);
  const contactOf = async (mid: string) => {
    const [row] = await byProviderId(mid);
    return db().selectFrom('contacts').selectAll().where('id', '=', row.contact_id).executeTakeFirstOrThrow();
  };
  const profileJob = async (mid: string) => {
    const [row] = await byProviderId(mid);
    return db()
      .selectFrom('outbox')
      .selectAll()
      .where('kind', '=', 'sender_profile')
      .where('ref_id', '=', row.id)
      .executeTakeFirstOrThrow();
  };
  /** The contact's avatarUrl as the API shows it (PATCH without changes answers the camelCase form). */
  const apiAvatar = async (contactId: string, headers = f.tenant.headers) => {
    const res = await f.t.app.inject({
      method: 'PATCH',
      url: `/external/v2/contacts/${contactId}`,
      headers,
      payload: {},
    });
    expect(res.statusCode, res.body).toBe(200);
    return res.json().contact[0].avatarUrl as string | null;
  };
  const download = (url: string) => f.t.app.inject({ method: 'GET', url: url.slice(PUBLIC_URL.length) });

  it("copies the profile's picture into the file store and serves it at the contact's avatarUrl, without a key", async () => {
    for (const [channel, fields, bytes, type, extension] of [
      [page(), { first_name: 'Alan', last_name: 'Turing' }, png, 'image/png', 'png'],
      [f.instagram, { name: 'Hedy Lamarr' }, jpeg, 'image/jpeg', 'jpg'],
    ] as const) {
      const person = metaId();
      const picture = f.fake.addAttachment(bytes, type);
      f.fake.setProfile(person, { ...fields, profile_pic: picture });
      const { mid } = await fromPerson(channel, { text: 'hello' }, person);
      await until(async () => (await profileJob(mid)).state === 'done');
      const contact = await contactOf(mid);
      expect(contact.first_name).not.toBe('');
      const url = await apiAvatar(contact.id);
      expect(url).toMatch(
        new RegExp(`^${PUBLIC_URL}/files/avatars/${f.tenant.businessId}/[A-Za-z0-9_-]{22}\\.${extension}$`),
      );
      expect(url).toBe(contact.avatar_url);
      // Meta signs the picture's URL itself: the token does not go with the download.
      const fetched = f.fake.requests.filter((r) => picture.includes(r.path));
      expect(fetched).toHaveLength(1);
      expect(fetched[0].headers.authorization).toBeUndefined();

      const res = await download(url!);
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toBe(type);
      expect(res.headers['x-content-type-options']).toBe('nosniff');
      expect(res.rawPayload.equals(bytes)).toBe(true);
      // One contact_field_changed names both fields the profile filled.
      const [event] = await db().selectFrom('events').selectAll().where('contact_id', '=', contact.id).execute();
      expect((event.data as { changes: { field: string }[] }).changes.map((c) => c.field)).toContain('avatar_url');
    }
  });

  it("answers 404 for another business's id or an unknown name, and 400 for a malformed one", async () => {
    const person = metaId();
    f.fake.setProfile(person, { first_name: 'Lin', profile_pic: f.fake.addAttachment(png, 'image/png') });
    const { mid } = await fromPerson(page(), { text: 'hello' }, person);
    await until(async () => (await profileJob(mid)).state === 'done');
    const url = (await contactOf(mid)).avatar_url!;
    const other = await createTenant(f.t.app);
    expect((await download(url.replace(f.tenant.businessId, other.businessId))).statusCode).toBe(404);
    expect((await download(url.replace(/[^/]{22}\.png$/, `${'A'.repeat(22)}.png`))).statusCode).toBe(404);
    expect((await download(url.replace(/\.png$/, '.svg'))).statusCode).toBe(400);
    expect((await download(url.replace(/[^/]{22}\.png$/, '..%2F..%2Fx.png'))).statusCode).toBe(400);
  });

  it('leaves the contact without a picture when it is gone, no image, or too large, and ends the job', async () => {
    const origin = new URL(f.fake.baseUrl).origin;
    const pictures = {
      gone: `${origin}/cdn/0000000000000000?oh=1`,
      html: f.fake.addAttachment(Buffer.from('<html><script>alert(1)</script></html>'), 'text/html'),
      htmlAsPng: f.fake.addAttachment(Buffer.from('<html><script>alert(1)</script></html>'), 'image/png'),
      svg: f.fake.addAttachment(Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"/>'), 'image/svg+xml'),
      large: f.fake.addAttachment(Buffer.concat([png, Buffer.alloc(AVATAR_MAX_BYTES)]), 'image/png'),
    };
    for (const [name, picture] of Object.entries(pictures)) {
      const person = metaId();
      f.fake.setProfile(person, { first_name: name, profile_pic: picture });
      const { mid } = await fromPerson(page(), { text: 'hello' }, person);
      await until(async () => (await profileJob(mid)).state !== 'running' && (await profileJob(mid)).attempts > 0);
      expect(await profileJob(mid), name).toMatchObject({ state: 'done', last_error: null });
      const contact = await contactOf(mid);
      expect(contact, name).toMatchObject({ first_name: name, avatar_url: null });
      expect(await apiAvatar(contact.id)).toBeNull();
    }
  });

  it('keeps a picture the contact has, and tries a download that failed for a passing reason again', async () => {
    // The profile is not there yet: the lookup fails for good and the job ends.
    const person = metaId();
    const { mid } = await fromPerson(page(), { text: 'hello' }, person);
    await until(async () => (await profileJob(mid)).state === 'failed');
    const contact = await contactOf(mid);
    const own = 'https://cdn.example.com/own.png';
    await db().updateTable('contacts').set({ avatar_url: own }).where('id', '=', contact.id).execute();
    const picture = f.fake.addAttachment(png, 'image/png');
    f.fake.setProfile(person, { first_name: 'Kept', profile_pic: picture });
    const { id } = await profileJob(mid);
    await db()
      .updateTable('outbox')
      .set({ state: 'pending', run_at: new Date().toISOString() })
      .where('id', '=', id)
      .execute();
    await until(async () => (await profileJob(mid)).state === 'done');
    expect(await contactOf(mid)).toMatchObject({ first_name: 'Kept', avatar_url: own });
    // The contact had a picture: none was downloaded.
    expect(f.fake.requests.filter((r) => picture.includes(r.path))).toHaveLength(0);

    // Meta's CDN answers 503: the name is taken now, the picture is tried again later.
    const second = metaId();
    f.fake.setProfile(second, { first_name: 'Later', profile_pic: f.fake.addAttachment(png, 'image/png', 503) });
    const { mid: secondMid } = await fromPerson(page(), { text: 'hello' }, second);
    await until(async () => (await profileJob(secondMid)).last_error !== null);
    const job = await profileJob(secondMid);
    expect(job).toMatchObject({ state: 'pending', attempts: 1 });
    expect(job.last_error).toMatch(/503/);
    expect(await contactOf(secondMid)).toMatchObject({ first_name: 'Later', avatar_url: null });
    f.fake.setProfile(second, { first_name: 'Later', profile_pic: f.fake.addAttachment(png, 'image/png') });
    await db().updateTable('outbox').set({ run_at: new Date().toISOString() }).where('id', '=', job.id).execute();
    await until(async () => (await profileJob(secondMid)).state === 'done');
    const url = (await contactOf(secondMid)).avatar_url;
    expect(url).toMatch(/\/files\/avatars\//);
    expect((await download(url!)).rawPayload.equals(png)).toBe(true);
  });
});
