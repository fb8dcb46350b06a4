import { createCipheriv, createHmac, randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Boom } from '@hapi/boom';
import { DisconnectReason, getMediaKeys, proto, type UserFacingSocketConfig, type WAMessage } from 'baileys';
import { MockAgent } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChannelLink } from '../../../src/channels/channel.types.ts';
import { inboundOf, mediaIdOf } from '../../../src/channels/whatsapp-web/whatsapp-web.inbound.ts';
import { WhatsAppWebProvider } from '../../../src/channels/whatsapp-web/whatsapp-web.provider.ts';
import { InboundPoller } from '../../../src/modules/inbound/inbound.poller.ts';
import { whatsAppWebTransport } from '../../../src/channels/whatsapp-web/whatsapp-web.socket.ts';
import { FakeSocket } from '../../helpers/fake-baileys-socket.ts';
import { inboundMessage, metaNotification, newKeyId, signedNotification, wamid } from '../../helpers/fake-graph-api.ts';
import { createTenant, type Tenant, adminHeaders } from '../../helpers/tenants.ts';
import { buildTestApp, testConfig, type TestApp } from '../../helpers/test-app.ts';
import { SecretBox } from '../../../src/lib/secret-box.ts';
import { ChannelLinksService } from '../../../src/modules/channels/channel-links.service.ts';
import { call, createUser, signIn, type Browser } from '../dashboard-auth/dashboard-helpers.ts';
import { until } from '../sending/sending.fixtures.ts';

const sockets: FakeSocket[] = [];
const pauses: number[] = [];
const latest = () => sockets[sockets.length - 1];

let t: TestApp;
let tenant: Tenant;
let other: Tenant;
let owner: Browser;
let otherOwner: Browser;
let channelId: string;
let media: Server;
let mediaUrl: string;
const NUMBER = '15550001111';
const db = () => t.database.db;

beforeAll(async () => {
  whatsAppWebTransport.makeSocket = (config: UserFacingSocketConfig) => {
    const socket = new FakeSocket(config.auth);
    sockets.push(socket);
    return socket;
  };
  whatsAppWebTransport.pause = async (ms) => void pauses.push(ms);
  media = createServer((_req, res) => res.writeHead(200, { 'content-type': 'image/png' }).end(Buffer.from('PNGDATA')));
  await new Promise<void>((resolve) => media.listen(0, '127.0.0.1', resolve));
  mediaUrl = `http://127.0.0.1:${(media.address() as AddressInfo).port}/photo.png`;
  t = await buildTestApp(
    { ALLOW_PRIVATE_WEBHOOK_TARGETS: 'true', POLLER_REFRESH_MS: '100', POLLER_INTERVAL_MS: '100' },
    { workers: true },
  );
  tenant = await createTenant(t.app, 'Acme');
  other = await createTenant(t.app, 'Other');
  await createUser(t.app, tenant.businessId, { email: 'owner@acme.test', password: 'correct horse', role: 'owner' });
  await createUser(t.app, other.businessId, { email: 'owner@other.test', password: 'correct horse', role: 'owner' });
  owner = await signIn(t.app, 'owner@acme.test', 'correct horse');
  otherOwner = await signIn(t.app, 'owner@other.test', 'correct horse');
  const res = await t.app.inject({
    method: 'POST',
    url: `/admin/v1/businesses/${tenant.businessId}/channels`,
    headers: adminHeaders,
    payload: {
      type: 'whatsapp_web',
      identifier: `+${NUMBER}`,
      provider: { kind: 'whatsapp_web', phone_number: NUMBER },
    },
  });
  if (res.statusCode !== 201) throw new Error(res.body);
  channelId = res.json().channel.id;
});
afterAll(async () => {
  await t?.close();
  await new Promise((resolve) => media?.close(resolve));
});

const link = () => call(t.app, owner, 'GET', `/channels/${channelId}/link`);
const linkState = async () => (await link()).json().state as string;
const upsert = (messages: WAMessage[]) => latest().ev.emit('messages.upsert', { messages, type: 'notify' });
const inbound = (direction: 'inbound' | 'outbound' = 'inbound') =>
  db()
    .selectFrom('messages')
    .selectAll()
    .where('channel_id', '=', channelId)
    .where('direction', '=', direction)
    .orderBy('created_at')
    .execute();
const now = () => Math.floor(Date.now() / 1000);

describe('linking a number', () => {
  it('waits for the operator, then shows the QR code as an image, and a pairing code for a number', async () => {
    const listed = await call(t.app, owner, 'GET', '/channels');
    const shown = (listed.json().channels as { id: string; linked: boolean; secrets: object }[]).find(
      (c) => c.id === channelId,
    );
    expect(shown).toMatchObject({ linked: true, secrets: {} });
    await until(async () => (await linkState()) === 'unlinked');
    // Nothing connects before the operator asks to link.
    expect(sockets).toHaveLength(0);
    const asked = await call(t.app, owner, 'POST', `/channels/${channelId}/link`, {});
    expect(asked.statusCode, asked.body).toBe(200);
    expect(asked.json()).toMatchObject({ state: 'unlinked', requested: true });
    await until(() => sockets.length === 1);
    latest().ev.emit('connection.update', { connection: 'connecting', qr: '2@abc,def,ghi,jkl' });
    await until(async () => (await linkState()) === 'qr');
    const qr = (await link()).json();
    expect(qr.qr).toBe('2@abc,def,ghi,jkl');
    expect(qr.qr_image).toMatch(/^data:image\/png;base64,/);

    const pairing = await call(t.app, owner, 'POST', `/channels/${channelId}/link`, {
      phone_number: '+1 555 000 1111',
    });
    expect(pairing.statusCode, pairing.body).toBe(200);
    await until(async () => (await link()).json().pairing_code === 'ABCD1234');
    expect(latest().pairingRequests).toEqual([NUMBER]);
  });

  it('is linked when the connection opens, with its credentials sealed in the database', async () => {
    latest().link(NUMBER);
    await until(async () => (await linkState()) === 'linked');
    expect((await link()).json()).toMatchObject({ state: 'linked', account: NUMBER, qr: null, requested: false });
    await until(async () => {
      const keys = await db().selectFrom('channel_link_keys').selectAll().where('channel_id', '=', channelId).execute();
      return keys.some((k) => k.key === 'creds' && k.value.startsWith('sb1.') && !k.value.includes(NUMBER));
    });
  });

  it('seals the link keys again with a new SECRET_KEY at start, and the new key alone opens them', async () => {
    const NEW_KEY = 'the-new-secret-key-after-the-rotation-0123456789';
    const oldKeys = testConfig().secretKeys;
    const { channels } = t.app.services;
    const rotated = new ChannelLinksService(db(), channels, new SecretBox([NEW_KEY, ...oldKeys], 'channel-links'));
    const stored = await db()
      .selectFrom('channel_link_keys')
      .select('key')
      .where('channel_id', '=', channelId)
      .execute();
    expect((await rotated.sealStored()).sealed).toBeGreaterThanOrEqual(stored.length);
    expect(await rotated.sealStored()).toEqual({ sealed: 0, unopened: 0 });
    const newOnly = new ChannelLinksService(db(), channels, new SecretBox([NEW_KEY], 'channel-links'));
    const link = newOnly.linkOf(await channels.get(tenant.businessId, channelId));
    expect((await link.read(['creds'])).get('creds')).toContain(NUMBER);
    // Back to the test app's key, which the running link writes with.
    const back = new ChannelLinksService(db(), channels, new SecretBox([...oldKeys, NEW_KEY], 'channel-links'));
    expect((await back.sealStored()).unopened).toBe(0);
  });

  it("refuses another business's channel, agents' sessions and bad input", async () => {
    const res = await call(t.app, otherOwner, 'GET', `/channels/${channelId}/link`);
    expect(res.statusCode).toBe(404);
    const asked = await call(t.app, otherOwner, 'POST', `/channels/${channelId}/link`, {});
    expect(asked.statusCode).toBe(404);
    const bad = await call(t.app, owner, 'POST', `/channels/${channelId}/link`, { phone_number: 'call me maybe' });
    expect(bad.statusCode).toBe(400);
    const extra = await call(t.app, owner, 'POST', `/channels/${channelId}/link`, { phone: '1' });
    expect(extra.statusCode).toBe(400);
    const notUuid = await call(t.app, owner, 'GET', `/channels/not-a-uuid/link`);
    expect(notUuid.statusCode).toBe(400);
  });
});

describe('messages of a linked number', () => {
  it("stores a customer's text under the phone number, and a phone's own message as sent by a person", async () => {
    upsert([
      {
        key: { remoteJid: '14155550123@s.whatsapp.net', fromMe: false, id: 'IN-TEXT-1' },
        messageTimestamp: now(),
        pushName: 'Ana Lopez',
        message: { conversation: 'Are you open on Sunday?' },
      },
      {
        key: { remoteJid: '14155550123@s.whatsapp.net', fromMe: true, id: 'PHONE-OUT-1' },
        messageTimestamp: now(),
        message: { extendedTextMessage: { text: 'Yes, from 10 am' } },
      },
    ]);
    await until(async () => (await inbound()).length === 1 && (await inbound('outbound')).length === 1);
    const [received] = await inbound();
    expect(received).toMatchObject({ text: 'Are you open on Sunday?', sender_address: '14155550123' });
    const [echo] = await inbound('outbound');
    expect(echo).toMatchObject({ text: 'Yes, from 10 am', provider_message_id: 'PHONE-OUT-1', sender_type: 'human' });
    expect(echo.conversation_id).toBe(received.conversation_id);
  });

  it('maps a LID sender to the phone number WhatsApp gave beside it, and keeps the LID otherwise', async () => {
    upsert([
      {
        key: {
          remoteJid: '201234567890123@lid',
          remoteJidAlt: '14155550123@s.whatsapp.net',
          fromMe: false,
          id: 'IN-LID-1',
        },
        messageTimestamp: now(),
        message: { conversation: 'Me again' },
      },
    ]);
    await until(async () => (await inbound()).length === 2);
    const rows = await inbound();
    expect(rows[1]).toMatchObject({ text: 'Me again', sender_address: '14155550123' });
    // One conversation per contact: the LID message found the same contact by phone.
    expect(rows[1].conversation_id).toBe(rows[0].conversation_id);
  });

  it('keeps a LID as the address when no phone number is known for it, and answers it at the LID', async () => {
    upsert([
      {
        key: { remoteJid: '209876543210987@lid', fromMe: false, id: 'IN-LID-ONLY-1' },
        messageTimestamp: now(),
        message: { conversation: 'Hidden number here' },
      },
    ]);
    await until(async () => (await inbound()).some((m) => m.provider_message_id === 'IN-LID-ONLY-1'));
    const row = (await inbound()).find((m) => m.provider_message_id === 'IN-LID-ONLY-1')!;
    expect(row.sender_address).toBe('209876543210987@lid');
    const channel = await t.app.services.channels.get(tenant.businessId, channelId);
    const provider = t.app.services.channels.providerFor(channel);
    // Its address as stored, and its digits alone (a contact's number field keeps digits), both reach the LID.
    for (const to of ['209876543210987@lid', '209876543210987']) {
      await provider.send({ to, content: { kind: 'text', text: 'Hello again' } });
      expect(latest().sent.pop()?.jid).toBe('209876543210987@lid');
      pauses.pop();
    }
  });

  it('finds the same contact by phone when the person writes through the Cloud API too', async () => {
    const cloud = await t.app.inject({
      method: 'POST',
      url: `/admin/v1/businesses/${tenant.businessId}/channels`,
      headers: adminHeaders,
      payload: {
        type: 'whatsapp',
        identifier: '+15550002222',
        provider: {
          kind: 'whatsapp_cloud',
          phone_number_id: '7001',
          access_token: 'EAAtoken',
          app_secret: 'cloud-secret',
          verify_token: 'v1',
        },
      },
    });
    expect(cloud.statusCode, cloud.body).toBe(201);
    const cloudId = cloud.json().channel.id as string;
    const { payload, headers } = signedNotification(
      metaNotification({
        phoneNumberId: '7001',
        contacts: [{ waId: '14155550123', name: 'Ana Lopez' }],
        messages: [inboundMessage('14155550123', 'text', { body: 'Through the other number' })],
      }),
      'cloud-secret',
    );
    const posted = await t.app.inject({ method: 'POST', url: '/channels/whatsapp_cloud/webhook', payload, headers });
    expect(posted.statusCode, posted.body).toBe(200);
    const [viaWeb] = await inbound();
    const viaCloud = await db()
      .selectFrom('messages')
      .selectAll()
      .where('channel_id', '=', cloudId)
      .executeTakeFirstOrThrow();
    expect(viaCloud.contact_id).toBe(viaWeb.contact_id);
    // The same number on the Cloud API too: a channel of the other type, beside the web client's.
    const both = await t.app.inject({
      method: 'POST',
      url: `/admin/v1/businesses/${tenant.businessId}/channels`,
      headers: adminHeaders,
      payload: {
        type: 'whatsapp',
        identifier: `+${NUMBER}`,
        provider: {
          kind: 'whatsapp_cloud',
          phone_number_id: '7002',
          access_token: 'EAAtoken',
          app_secret: 'x-secret',
          verify_token: 'v2',
        },
      },
    });
    expect(both.statusCode, both.body).toBe(201);
    expect(viaWeb.channel).toBe('whatsapp_web');
  });

  it('keeps one conversation per person with the Cloud API channel of the number, each message once', async () => {
    // The number is on the Cloud API too since the test above (phone number id 7002).
    const customer = '14155550199';
    const key = newKeyId();
    const cloudCopy = inboundMessage(customer, 'text', { body: 'Do you deliver?' }, { id: wamid(customer, key) });
    const { payload, headers } = signedNotification(
      metaNotification({ phoneNumberId: '7002', contacts: [{ waId: customer, name: 'Bo' }], messages: [cloudCopy] }),
      'x-secret',
    );
    expect(
      (await t.app.inject({ method: 'POST', url: '/channels/whatsapp_cloud/webhook', payload, headers })).statusCode,
    ).toBe(200);
    const cloudRow = await db()
      .selectFrom('messages')
      .selectAll()
      .where('business_id', '=', tenant.businessId)
      .where('provider_message_id', '=', String(cloudCopy.id))
      .executeTakeFirstOrThrow();
    // The linked phone records the same message under the key id the wamid carries, and one only it has.
    upsert([
      {
        key: { remoteJid: `${customer}@s.whatsapp.net`, fromMe: false, id: key },
        messageTimestamp: now(),
        message: { conversation: 'Do you deliver?' },
      },
      {
        key: { remoteJid: `${customer}@s.whatsapp.net`, fromMe: false, id: 'ONLY-ON-WEB-1' },
        messageTimestamp: now(),
        message: { conversation: 'To Porto?' },
      },
    ]);
    const webRows = async () =>
      db()
        .selectFrom('messages')
        .selectAll()
        .where('channel_id', '=', channelId)
        .where('contact_id', '=', cloudRow.contact_id)
        .orderBy('created_at')
        .execute();
    await until(async () => (await webRows()).length === 2);
    const [copy, only] = await webRows();
    expect(copy).toMatchObject({
      provider_message_id: key,
      duplicate: true,
      conversation_id: cloudRow.conversation_id,
    });
    expect(only).toMatchObject({
      duplicate: false,
      channel: 'whatsapp_web',
      conversation_id: cloudRow.conversation_id,
    });
    // The copy is announced by nothing: no webhook, no AI run, no second line in the dashboard.
    const announced = await db()
      .selectFrom('domain_events')
      .select('subject_id')
      .where('type', '=', 'message_created')
      .where('subject_id', 'in', [cloudRow.id, copy.id, only.id])
      .execute();
    expect(announced.map((e) => e.subject_id).sort()).toEqual([cloudRow.id, only.id].sort());
    const conversation = await db()
      .selectFrom('conversations')
      .selectAll()
      .where('id', '=', cloudRow.conversation_id)
      .executeTakeFirstOrThrow();
    expect(conversation.channel).toBe('whatsapp');
    const thread = await call(t.app, owner, 'GET', `/conversations/${conversation.id}/thread`);
    expect(thread.statusCode, thread.body).toBe(200);
    const shown = JSON.stringify(thread.json());
    const ids = [cloudRow.id, only.id, copy.id];
    expect(ids.map((id) => shown.includes(id))).toEqual([true, true, false]);
    const exported = await t.app.inject({
      method: 'GET',
      url: `/external/v2/messages?since=${new Date(Date.now() - 60_000).toISOString()}`,
      headers: tenant.headers,
    });
    const listed = (exported.json().messages as { id: string; channel: string }[]).filter((m) =>
      [cloudRow.id, copy.id, only.id].includes(m.id),
    );
    expect(listed.map((m) => [m.id, m.channel]).sort()).toEqual(
      [
        [cloudRow.id, 'whatsapp'],
        [only.id, 'whatsapp_web'],
      ].sort(),
    );
  });

  it('stores an image with its caption and a media id that downloads it later', async () => {
    upsert([
      {
        key: { remoteJid: '14155550123@s.whatsapp.net', fromMe: false, id: 'IN-IMG-1' },
        messageTimestamp: now(),
        message: {
          imageMessage: {
            url: 'https://mmg.whatsapp.net/v/t62.7118-24/abc.enc',
            directPath: '/v/t62.7118-24/abc.enc',
            mediaKey: randomBytes(32),
            mimetype: 'image/jpeg',
            caption: 'the broken part',
            fileSha256: randomBytes(32),
          },
        },
      },
    ]);
    await until(async () => (await inbound()).some((m) => m.provider_message_id === 'IN-IMG-1'));
    const image = (await inbound()).find((m) => m.provider_message_id === 'IN-IMG-1')!;
    expect(image).toMatchObject({ text: 'the broken part', type: 'image' });
    const file = await db()
      .selectFrom('media')
      .selectAll()
      .where('message_id', '=', image.id)
      .executeTakeFirstOrThrow();
    expect(file).toMatchObject({ content_type: 'image/jpeg' });
    expect(file.provider_media_id).toMatch(/^wamedia\./);
  });

  it("downloads and decrypts an inbound file from WhatsApp's media server through the dispatcher", async () => {
    const mediaKey = randomBytes(32);
    const plain = Buffer.from('JPEG bytes of the photo');
    const { iv, cipherKey, macKey } = await getMediaKeys(mediaKey, 'image');
    const cipher = createCipheriv('aes-256-cbc', cipherKey, iv);
    const encrypted = Buffer.concat([cipher.update(plain), cipher.final()]);
    const mac = createHmac('sha256', macKey!)
      .update(Buffer.concat([iv, encrypted]))
      .digest()
      .subarray(0, 10);
    const agent = new MockAgent();
    agent.disableNetConnect();
    agent
      .get('https://mmg.whatsapp.net')
      .intercept({ path: (p) => p.startsWith('/v/t62.7118-24/photo.enc') })
      .reply(200, Buffer.concat([encrypted, mac]));
    const provider = new WhatsAppWebProvider({ kind: 'whatsapp_web', phone_number: NUMBER }, { dispatcher: agent });
    const id = mediaIdOf({
      t: 'image',
      k: mediaKey.toString('base64'),
      p: '/v/t62.7118-24/photo.enc',
      u: 'https://mmg.whatsapp.net/v/t62.7118-24/photo.enc',
      m: 'image/jpeg',
    });
    const fetched = await provider.fetchMedia(id);
    expect(fetched).toMatchObject({ mimeType: 'image/jpeg', fileSize: plain.length });
    expect(fetched.bytes.toString()).toBe('JPEG bytes of the photo');
    await expect(provider.fetchMedia('wamedia.not-json')).rejects.toMatchObject({ code: 'invalid_media_id' });
    await agent.close();
  });

  it('sends text and media through the socket, paced with jitter, and applies receipts', async () => {
    const send = (body: Record<string, unknown>) =>
      t.app.inject({
        method: 'POST',
        url: '/external/v2/messages/send',
        headers: tenant.headers,
        payload: { to: '+14155550123', from: 'whatsapp_web', channel_uuid: channelId, ...body },
      });
    const text = await send({ type: 'text', content: { text: 'See you Sunday' } });
    expect(text.statusCode, text.body).toBeLessThan(300);
    const image = await send({ type: 'image', content: { url: mediaUrl, caption: 'the map' } });
    expect(image.statusCode, image.body).toBeLessThan(300);
    await until(() => latest().sent.length === 2);
    const [first, second] = latest().sent;
    expect(first).toEqual({
      jid: '14155550123@s.whatsapp.net',
      content: { text: 'See you Sunday', linkPreview: null },
    });
    expect(second.jid).toBe('14155550123@s.whatsapp.net');
    expect(Buffer.from(second.content.image as Buffer).toString()).toBe('PNGDATA');
    expect(second.content.caption).toBe('the map');
    expect(pauses).toHaveLength(2);
    for (const ms of pauses) expect(ms >= 500 && ms <= 2000).toBe(true);
    const id = text.json().message.uuid as string;
    await until(async () => {
      const row = await db().selectFrom('messages').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
      return row.status === 'SENT' && row.provider_message_id !== null;
    });
    const row = await db().selectFrom('messages').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    // The socket's echo of a message sent here is not stored again.
    latest().ev.emit('messages.upsert', {
      type: 'append',
      messages: [
        {
          key: { remoteJid: '14155550123@s.whatsapp.net', fromMe: true, id: row.provider_message_id! },
          message: { conversation: 'See you Sunday' },
        },
      ],
    });
    latest().ev.emit('messages.update', [
      {
        key: { remoteJid: '14155550123@s.whatsapp.net', fromMe: true, id: row.provider_message_id! },
        update: { status: proto.WebMessageInfo.Status.DELIVERY_ACK },
      },
    ]);
    await until(async () => {
      const r = await db().selectFrom('messages').select('status').where('id', '=', id).executeTakeFirstOrThrow();
      return r.status === 'DELIVERED';
    });
    latest().ev.emit('message-receipt.update', [
      {
        key: { remoteJid: '14155550123@s.whatsapp.net', fromMe: true, id: row.provider_message_id! },
        receipt: { userJid: '14155550123@s.whatsapp.net', readTimestamp: now() },
      },
    ]);
    await until(async () => {
      const r = await db().selectFrom('messages').select('status').where('id', '=', id).executeTakeFirstOrThrow();
      return r.status === 'READ';
    });
    const outbound = await inbound('outbound');
    expect(outbound.filter((m) => m.provider_message_id === row.provider_message_id)).toHaveLength(1);
  });

  it("refuses a send naming another business's channel, and bad input", async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/external/v2/messages/send',
      headers: other.headers,
      payload: {
        to: '+14155550123',
        from: 'whatsapp_web',
        channel_uuid: channelId,
        type: 'text',
        content: { text: 'x' },
      },
    });
    expect(res.statusCode).toBeGreaterThanOrEqual(400);
    expect(res.statusCode).toBeLessThan(500);
    const bad = await t.app.inject({
      method: 'POST',
      url: '/external/v2/messages/send',
      headers: tenant.headers,
      payload: {
        to: 'not a number',
        from: 'whatsapp_web',
        channel_uuid: channelId,
        type: 'text',
        content: { text: 'x' },
      },
    });
    expect(bad.statusCode).toBe(400);
  });
});

describe('the adapter alone', () => {
  /** A link's storage in memory, for an adapter run outside the app. */
  const memoryLink = (): ChannelLink & { values: Map<string, string> } => {
    const values = new Map<string, string>();
    return {
      values,
      read: async (keys) => new Map(keys.flatMap((k) => (values.has(k) ? [[k, values.get(k)!] as const] : []))),
      write: async (entries) => {
        for (const [k, v] of entries)
          if (v === null) values.delete(k);
          else values.set(k, v);
      },
      clear: async () => values.clear(),
      report: async () => undefined,
      requests: async () => ({ state: 'unlinked', requested: true, pairingPhone: null }),
    };
  };

  it('reads a message with a NUL or a lone surrogate as one the database can store', () => {
    const read = inboundOf(
      {
        key: { remoteJid: '14155550123@s.whatsapp.net', fromMe: false, id: 'IN-UNSTORABLE-1' },
        pushName: 'A\u0000na',
        message: { extendedTextMessage: { text: 'broken \ud800 text\u0000' } },
      },
      NUMBER,
    );
    expect(read).toMatchObject({
      text: 'broken \ufffd text',
      profileName: 'Ana',
      providerMessageId: 'IN-UNSTORABLE-1',
    });
  });

  it('refuses a send, writing nothing, while the link is not connected in this process', async () => {
    const provider = new WhatsAppWebProvider({ kind: 'whatsapp_web', phone_number: NUMBER });
    let before = 0;
    const refused = provider.send({
      to: '14155550123',
      content: { kind: 'text', text: 'hi' },
      beforeSend: async () => void before++,
    });
    await expect(refused).rejects.toMatchObject({ code: 'not_linked', retryable: true });
    expect(before).toBe(0);
    await expect(
      provider.send({ to: '14155550123', content: { kind: 'template', name: 'x', languageCode: 'en' } }),
    ).rejects.toMatchObject({ code: 'unsupported', retryable: false });
  });

  it('calls beforeSend once the socket is open, right before the message is written', async () => {
    const order: string[] = [];
    let socket: FakeSocket | undefined;
    const provider = new WhatsAppWebProvider({ kind: 'whatsapp_web', phone_number: NUMBER }, {}, (config) => {
      socket = new FakeSocket(config.auth);
      const send = socket.sendMessage;
      socket.sendMessage = (...args: Parameters<typeof send>) => {
        order.push('sendMessage');
        return send(...args);
      };
      return socket;
    });
    const abort = new AbortController();
    const watching = provider.watch(null, async () => undefined, {
      signal: abort.signal,
      intervalMs: 50,
      link: memoryLink(),
    });
    await until(() => socket !== undefined);
    socket!.link(NUMBER);
    await provider.send({
      to: '14155550123',
      content: { kind: 'text', text: 'hi' },
      beforeSend: async () => void order.push('beforeSend'),
    });
    expect(order).toEqual(['beforeSend', 'sendMessage']);
    pauses.pop();
    abort.abort();
    await watching;
    expect(socket!.ended).toBe(true);
  });
});

describe('reconnecting', () => {
  it('resumes with the stored credentials after a restart, without a QR code', async () => {
    const before = sockets.length;
    latest().close(new Boom('restart required', { statusCode: DisconnectReason.restartRequired }));
    await until(() => sockets.length === before + 1);
    // The new socket is given the credentials stored when the phone linked.
    expect(latest().auth.creds.me?.id).toBe(`${NUMBER}:7@s.whatsapp.net`);
    latest().user = { id: `${NUMBER}:7@s.whatsapp.net` };
    latest().ev.emit('connection.update', { connection: 'open' });
    await until(async () => (await linkState()) === 'linked');
  });

  it('is held by one process at a time, and another resumes it with the stored credentials', async () => {
    const { services } = t.app;
    const first = latest();
    await services.inboundPoller.stop();
    expect(first.ended).toBe(true);
    const second = new InboundPoller(
      t.database.db,
      services.channels,
      services.inbound,
      { refreshMs: 100, intervalMs: 100 },
      services.channelLinks,
    );
    second.start(t.app.log);
    try {
      await until(() => latest() !== first);
      expect(second.readingChannels()).toContain(channelId);
      expect(latest().auth.creds.me?.id).toBe(`${NUMBER}:7@s.whatsapp.net`);
      latest().ev.emit('connection.update', { connection: 'open' });
      latest().ev.emit('messages.upsert', {
        type: 'notify',
        messages: [
          {
            key: { remoteJid: '14155550123@s.whatsapp.net', fromMe: false, id: 'IN-SECOND-1' },
            messageTimestamp: now(),
            message: { conversation: 'Still there?' },
          },
        ],
      });
      await until(async () => (await inbound()).some((m) => m.provider_message_id === 'IN-SECOND-1'));
    } finally {
      await second.stop();
      services.inboundPoller.start(t.app.log);
    }
    const held = sockets.length;
    expect(latest().ended).toBe(true);
    await until(() => sockets.length === held + 1);
    latest().ev.emit('connection.update', { connection: 'open' });
  });

  it('shows a logout as such, clears the credentials and shows no new QR code until asked', async () => {
    const before = sockets.length;
    latest().close(new Boom('logged out', { statusCode: DisconnectReason.loggedOut }));
    await until(async () => (await linkState()) === 'logged_out');
    const keys = await db().selectFrom('channel_link_keys').selectAll().where('channel_id', '=', channelId).execute();
    expect(keys).toHaveLength(0);
    // Longer than a reconnection's first backoff (1 s): a link that reconnected would show a QR code.
    await new Promise((resolve) => setTimeout(resolve, 1_300));
    expect(sockets).toHaveLength(before);
    expect((await link()).json()).toMatchObject({ state: 'logged_out', qr: null });
    await call(t.app, owner, 'POST', `/channels/${channelId}/link`, {});
    await until(() => sockets.length === before + 1);
    // A fresh link: no credentials of the old one.
    expect(latest().auth.creds.me).toBeUndefined();
  });
});
