import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inboundMessage, signedNotification } from '../../helpers/fake-graph-api.ts';
import { adminHeaders, createTenant, type Tenant } from '../../helpers/tenants.ts';
import type { TestApp } from '../../helpers/test-app.ts';
import {
  createWhatsAppChannel,
  notificationFor,
  postSigned,
  WEBHOOK,
  withWhatsAppChannel,
  type TestChannel,
  type WhatsAppFixture,
} from './whatsapp-helpers.ts';

let t: TestApp;
let tenant: Tenant;
let channel: TestChannel;
let post: WhatsAppFixture['post'];

beforeAll(async () => {
  ({ t, tenant, channel, post } = await withWhatsAppChannel());
});
afterAll(() => t.close());

const verify = (query: Record<string, string>) => t.app.inject({ method: 'GET', url: WEBHOOK, query });

/** Rows anything inbound could write. */
async function counts() {
  const db = t.database.db;
  const count = async (table: 'contacts' | 'conversations' | 'messages' | 'events' | 'media' | 'outbox') =>
    Number(
      (
        await db
          .selectFrom(table)
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );
  return {
    contacts: await count('contacts'),
    conversations: await count('conversations'),
    messages: await count('messages'),
    events: await count('events'),
    media: await count('media'),
    outbox: await count('outbox'),
  };
}

const textNotification = () =>
  notificationFor(channel, {
    contacts: [{ waId: '5491122334455', name: 'Eve' }],
    messages: [inboundMessage('5491122334455', 'text', { body: 'hi' })],
  });

describe('GET /channels/whatsapp/webhook (verification handshake)', () => {
  it("answers the challenge as plain text when the verify token is a channel's", async () => {
    const res = await verify({
      'hub.mode': 'subscribe',
      'hub.verify_token': channel.verifyToken,
      'hub.challenge': '1158201444',
    });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain/);
    expect(res.body).toBe('1158201444');
  });

  it.each([
    ['a wrong token', { 'hub.mode': 'subscribe', 'hub.verify_token': 'nope', 'hub.challenge': '1' }],
    ['another mode', { 'hub.mode': 'unsubscribe', 'hub.verify_token': 'TOKEN', 'hub.challenge': '1' }],
    ['no challenge', { 'hub.mode': 'subscribe', 'hub.verify_token': 'TOKEN' }],
    ['no token', { 'hub.mode': 'subscribe', 'hub.challenge': '1' }],
  ])('answers 403 for %s', async (_case, query) => {
    const res = await verify(
      Object.fromEntries(Object.entries(query).map(([k, v]) => [k, v === 'TOKEN' ? channel.verifyToken : v])),
    );
    expect(res.statusCode).toBe(403);
    expect(res.json().error.code).toBe('forbidden');
  });

  it('needs no API key', async () => {
    const res = await verify({
      'hub.mode': 'subscribe',
      'hub.verify_token': channel.verifyToken,
      'hub.challenge': 'abc',
    });
    expect(res.statusCode).toBe(200);
  });
});

describe('POST /channels/whatsapp/webhook refuses what is not signed by the channel', () => {
  it('accepts a correctly signed notification (the control case)', async () => {
    const before = await counts();
    const res = await post(textNotification());
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ success: true });
    const after = await counts();
    expect(after.messages).toBe(before.messages + 1);
  });

  const cases: [string, () => { payload: string; headers: Record<string, string> }][] = [
    [
      'a missing signature',
      () => {
        const { payload, headers } = signedNotification(textNotification(), channel.appSecret);
        return { payload, headers: { 'content-type': headers['content-type'] } };
      },
    ],
    [
      'a malformed signature',
      () => {
        const { payload, headers } = signedNotification(textNotification(), channel.appSecret);
        return { payload, headers: { ...headers, 'x-hub-signature-256': 'sha1=abcdef' } };
      },
    ],
    ['a signature with the wrong secret', () => signedNotification(textNotification(), 'not-the-app-secret')],
    [
      'a body altered after signing',
      () => {
        const { payload, headers } = signedNotification(textNotification(), channel.appSecret);
        return { payload: payload.replace('"hi"', '"HI"'), headers };
      },
    ],
    [
      'a body re-serialised after signing',
      () => {
        const { payload, headers } = signedNotification(JSON.stringify(textNotification(), null, 2), channel.appSecret);
        return { payload: JSON.stringify(JSON.parse(payload)), headers };
      },
    ],
    [
      'an unknown phone_number_id',
      () =>
        signedNotification(
          {
            ...textNotification(),
            entry: notificationFor(
              { ...channel, phoneNumberId: '999000999' },
              { messages: [inboundMessage('5491122334455', 'text', { body: 'x' })] },
            ).entry,
          },
          channel.appSecret,
        ),
    ],
    [
      'one signed part plus an unknown phone_number_id',
      () => {
        const body = textNotification();
        const stranger = notificationFor(
          { ...channel, phoneNumberId: '999000998' },
          { messages: [inboundMessage('5491122334455', 'text', { body: 'x' })] },
        );
        return signedNotification(
          { ...body, entry: [...(body.entry as unknown[]), ...(stranger.entry as unknown[])] },
          channel.appSecret,
        );
      },
    ],
  ];

  it.each(cases)('answers 401 for %s and stores nothing', async (_case, build) => {
    const before = await counts();
    const { payload, headers } = build();
    const res = await t.app.inject({ method: 'POST', url: WEBHOOK, headers, payload });
    expect(res.statusCode).toBe(401);
    expect(res.json().error.code).toBe('unauthorized');
    expect(await counts()).toEqual(before);
  });

  it('answers 400 for a body that is not JSON or not a WhatsApp notification, storing nothing', async () => {
    const before = await counts();
    const notJson = await t.app.inject({
      method: 'POST',
      url: WEBHOOK,
      headers: { 'content-type': 'application/json' },
      payload: '{"object":',
    });
    expect(notJson.statusCode).toBe(400);
    const other = await post({ object: 'page', entry: [] });
    expect(other.statusCode).toBe(400);
    const empty = await t.app.inject({
      method: 'POST',
      url: WEBHOOK,
      headers: { 'content-type': 'application/json' },
      payload: '',
    });
    expect(empty.statusCode).toBe(400);
    expect(await counts()).toEqual(before);
  });

  it('answers 413 for a body over 3 MB', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: WEBHOOK,
      headers: { 'content-type': 'application/json' },
      payload: 'x'.repeat(3 * 1024 * 1024 + 1),
    });
    expect(res.statusCode).toBe(413);
  });

  it('accepts a signed notification of about 2 MB (above the API body limit)', async () => {
    const body = notificationFor(channel, {
      messages: [inboundMessage('5491122334455', 'text', { body: 'y'.repeat(2 * 1024 * 1024) })],
    });
    const res = await post(body);
    expect(res.statusCode).toBe(200);
  });

  it('checks the bytes whatever the content type says', async () => {
    const { payload, headers } = signedNotification(textNotification(), channel.appSecret);
    const res = await t.app.inject({
      method: 'POST',
      url: WEBHOOK,
      headers: { ...headers, 'content-type': 'text/plain' },
      payload,
    });
    expect(res.statusCode).toBe(200);
  });

  it('answers 200 and stores nothing for a change that names no number (e.g. account updates)', async () => {
    const before = await counts();
    const body = {
      object: 'whatsapp_business_account',
      entry: [{ id: '1', changes: [{ field: 'account_update', value: { event: 'VERIFIED_ACCOUNT' } }] }],
    };
    const res = await t.app.inject({
      method: 'POST',
      url: WEBHOOK,
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify(body),
    });
    expect(res.statusCode).toBe(200);
    expect(await counts()).toEqual(before);
  });
});

describe('channel changes apply to the webhook at once', () => {
  it('uses the rotated app secret and refuses the old one', async () => {
    const rotating = await createWhatsAppChannel(t.app, tenant.businessId);
    const body = () =>
      notificationFor(rotating, { messages: [inboundMessage('5491122334455', 'text', { body: 'r' })] });
    expect((await postSigned(t.app, body(), rotating.appSecret)).statusCode).toBe(200);
    const patch = await t.app.inject({
      method: 'PATCH',
      url: `/admin/v1/businesses/${tenant.businessId}/channels/${rotating.id}`,
      headers: adminHeaders,
      payload: { provider: { app_secret: 'new-app-secret' } },
    });
    expect(patch.statusCode).toBe(200);
    expect((await postSigned(t.app, body(), rotating.appSecret)).statusCode).toBe(401);
    expect((await postSigned(t.app, body(), 'new-app-secret')).statusCode).toBe(200);
  });

  it('refuses notifications for a deleted channel', async () => {
    const doomed = await createWhatsAppChannel(t.app, tenant.businessId);
    const body = () => notificationFor(doomed, { messages: [inboundMessage('5491122334455', 'text', { body: 'd' })] });
    expect((await postSigned(t.app, body(), doomed.appSecret)).statusCode).toBe(200);
    const del = await t.app.inject({
      method: 'DELETE',
      url: `/admin/v1/businesses/${tenant.businessId}/channels/${doomed.id}`,
      headers: adminHeaders,
    });
    expect(del.statusCode).toBe(200);
    expect((await postSigned(t.app, body(), doomed.appSecret)).statusCode).toBe(401);
  });
});

describe('channel changes made by another server process (this one keeps the channel it read for a while)', () => {
  /** Deletes the channel's row as another process would: this one is not told. */
  const deleteElsewhere = (ch: TestChannel) =>
    t.database.db.deleteFrom('channels').where('business_id', '=', ch.businessId).where('id', '=', ch.id).execute();
  const messagesOf = async (businessId: string, text: string) =>
    (
      await t.database.db
        .selectFrom('messages')
        .select('id')
        .where('business_id', '=', businessId)
        .where('text', '=', text)
        .execute()
    ).length;

  it.each([
    ['the same app secret (one Meta app serves both businesses)', true],
    ['another app secret', false],
  ])('a number given to another business is stored under that business at once, with %s', async (_, sameSecret) => {
    const newOwner = await createTenant(t.app, 'New owner');
    const before = await createWhatsAppChannel(t.app, tenant.businessId);
    const first = notificationFor(before, {
      messages: [inboundMessage('5491122334455', 'text', { body: 'for the first owner' })],
    });
    expect((await postSigned(t.app, first, before.appSecret)).statusCode).toBe(200);

    await deleteElsewhere(before);
    const after = await createWhatsAppChannel(t.app, newOwner.businessId, {
      phoneNumberId: before.phoneNumberId,
      ...(sameSecret ? { appSecret: before.appSecret } : {}),
    });
    const text = `for the new owner ${sameSecret}`;
    const second = notificationFor(after, { messages: [inboundMessage('5491122334456', 'text', { body: text })] });
    expect((await postSigned(t.app, second, after.appSecret)).statusCode).toBe(200);
    expect(await messagesOf(newOwner.businessId, text)).toBe(1);
    expect(await messagesOf(tenant.businessId, text)).toBe(0);
    if (!sameSecret) expect((await postSigned(t.app, second, before.appSecret)).statusCode).toBe(401);
  });

  it('a number deleted elsewhere is refused at once, and nothing of the notification is stored', async () => {
    const doomed = await createWhatsAppChannel(t.app, tenant.businessId);
    const body = (text: string) =>
      notificationFor(doomed, { messages: [inboundMessage('5491122334457', 'text', { body: text })] });
    expect((await postSigned(t.app, body('before'), doomed.appSecret)).statusCode).toBe(200);
    await deleteElsewhere(doomed);
    const before = await counts();
    const res = await postSigned(t.app, body('after'), doomed.appSecret);
    expect(res.statusCode).toBe(401);
    expect(res.json().error.code).toBe('unauthorized');
    expect(await counts()).toEqual(before);
  });

  it('a notification naming a moved number among concurrent ones fails alone: the others are stored', async () => {
    const newOwner = await createTenant(t.app, 'Concurrent owner');
    const moving = await createWhatsAppChannel(t.app, tenant.businessId);
    const staying = await createWhatsAppChannel(t.app, tenant.businessId);
    expect(
      (
        await postSigned(
          t.app,
          notificationFor(moving, { messages: [inboundMessage('5491122334458', 'text', { body: 'warm' })] }),
          moving.appSecret,
        )
      ).statusCode,
    ).toBe(200);
    await deleteElsewhere(moving);
    const moved = await createWhatsAppChannel(t.app, newOwner.businessId, {
      phoneNumberId: moving.phoneNumberId,
      appSecret: moving.appSecret,
    });
    const answers = await Promise.all([
      ...[1, 2, 3].map((n) =>
        postSigned(
          t.app,
          notificationFor(staying, { messages: [inboundMessage(`549112233450${n}`, 'text', { body: `stays ${n}` })] }),
          staying.appSecret,
        ),
      ),
      postSigned(
        t.app,
        notificationFor(moved, { messages: [inboundMessage('5491122334459', 'text', { body: 'moved' })] }),
        moved.appSecret,
      ),
    ]);
    expect(answers.map((a) => a.statusCode)).toEqual([200, 200, 200, 200]);
    for (const n of [1, 2, 3]) expect(await messagesOf(tenant.businessId, `stays ${n}`)).toBe(1);
    expect(await messagesOf(newOwner.businessId, 'moved')).toBe(1);
    expect(await messagesOf(tenant.businessId, 'moved')).toBe(0);
  });
});

describe('OpenAPI', () => {
  it('documents the webhook and the channels operator routes', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/openapi.json' });
    expect(res.statusCode).toBe(200);
    const paths = res.json().paths as Record<string, Record<string, unknown>>;
    expect(Object.keys(paths[WEBHOOK] ?? {}).sort()).toEqual(['get', 'post']);
    expect(Object.keys(paths['/admin/v1/businesses/{bid}/channels/{id}'] ?? {}).sort()).toEqual([
      'delete',
      'get',
      'patch',
    ]);
    expect(Object.keys(paths['/admin/v1/businesses/{bid}/channels'] ?? {}).sort()).toEqual(['get', 'post']);
  });
});
