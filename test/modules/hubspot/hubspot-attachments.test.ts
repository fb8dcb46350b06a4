import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readHubSpotNotification } from '../../../src/channels/hubspot/hubspot.notifications.ts';
import { HubSpotProvider } from '../../../src/channels/hubspot/hubspot.provider.ts';
import {
  inboundMessage,
  metaNotification,
  signedNotification,
  startFakeGraphApi,
  type FakeGraphApi,
} from '../../helpers/fake-graph-api.ts';
import {
  outgoingMessageEvent,
  signedHubSpotWebhook,
  startFakeHubSpotApi,
  type FakeHubSpotApi,
} from '../../helpers/fake-hubspot-api.ts';
import {
  receivedMessage,
  signedEvent,
  startFakeTikTokApi,
  tiktokPerson,
  type FakeTikTokApi,
} from '../../helpers/fake-tiktok-api.ts';
import { adminHeaders, createTenant, type Tenant } from '../../helpers/tenants.ts';
import { buildTestApp, PUBLIC_URL, type TestApp } from '../../helpers/test-app.ts';
import { createChannel, newPhone, until, type TestChannel } from '../sending/sending.fixtures.ts';
import { createTikTokChannel, type TikTokChannel } from '../tiktok/tiktok-helpers.ts';

const HUBSPOT_WEBHOOK = '/channels/hubspot/webhook';
const CLIENT_SECRET = 'hubspot-client-secret-0123456789';

// A real 1x1 PNG and a small PDF: file-type reads their types from these bytes.
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==',
  'base64',
);
const PDF = Buffer.from('%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n');

let t: TestApp;
let graph: FakeGraphApi;
let hubspot: FakeHubSpotApi;
let tiktok: FakeTikTokApi;
let tenant: Tenant;
let other: Tenant;
let whatsapp: TestChannel;
let otherWhatsapp: TestChannel;
let tiktokChannel: TikTokChannel;
const hub = { id: '', channelId: '4242', accountId: '91001' };

const db = () => t.database.db;

/** A customer's WhatsApp message to the channel, as Meta posts it; answers its row once stored. */
async function customerWrites(channel: TestChannel, from: string, type: string, content: Record<string, unknown>) {
  const message = inboundMessage(from, type, content);
  const body = metaNotification({
    phoneNumberId: channel.phoneNumberId,
    contacts: [{ waId: from, name: 'Ana Lima' }],
    messages: [message],
  });
  const { payload, headers } = signedNotification(body, 'app-secret');
  const res = await t.app.inject({ method: 'POST', url: '/channels/whatsapp_cloud/webhook', payload, headers });
  expect(res.statusCode, res.body).toBe(200);
  return db()
    .selectFrom('messages')
    .selectAll()
    .where('provider_message_id', '=', message.id as string)
    .executeTakeFirstOrThrow();
}

const postReply = (body: unknown, secret = CLIENT_SECRET) => {
  const { payload, headers } = signedHubSpotWebhook(`${PUBLIC_URL}${HUBSPOT_WEBHOOK}`, body, secret);
  return t.app.inject({ method: 'POST', url: HUBSPOT_WEBHOOK, payload, headers });
};

/** A reply written in HubSpot with files attached (their HubSpot ids), as HubSpot lists them. */
const reply = (threadId: string, text: string, fileIds: string[]) =>
  outgoingMessageEvent({
    channelId: hub.channelId,
    channelAccountId: hub.accountId,
    threadId,
    text,
    attachments: fileIds.map((fileId) => ({ type: 'FILE', fileId, fileUsageType: 'OTHER' })),
  });

const keyOf = (event: Record<string, unknown>) => (event.message as { id: string }).id;

/** The requests for files (signed URLs and downloads) HubSpot received. */
const fileRequests = () =>
  hubspot.requests.filter((r) => r.path.endsWith('/signed-url') || r.path.startsWith('/hubfs-signed/')).length;

/** The bytes the service serves at a file address it handed a channel. */
async function served(url: string): Promise<Buffer> {
  const res = await t.app.inject({ method: 'GET', url: url.slice(PUBLIC_URL.length) });
  expect(res.statusCode, res.body).toBe(200);
  return res.rawPayload;
}

/** Makes a job's retry due now and wakes its worker. */
async function runAgain(kind: string, refId: string) {
  await db().updateTable('outbox').set({ run_at: new Date().toISOString() }).where('ref_id', '=', refId).execute();
  t.app.worker.wake(kind);
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 300));

beforeAll(async () => {
  graph = await startFakeGraphApi();
  hubspot = await startFakeHubSpotApi();
  tiktok = await startFakeTikTokApi();
  t = await buildTestApp({ ALLOW_PRIVATE_WEBHOOK_TARGETS: 'true' });
  tenant = await createTenant(t.app, 'Acme');
  other = await createTenant(t.app, 'Other');
  whatsapp = await createChannel(t.app, tenant, graph);
  otherWhatsapp = await createChannel(t.app, other, graph);
  tiktokChannel = await createTikTokChannel(t, tenant.businessId, tiktok);
  const created = await t.app.inject({
    method: 'POST',
    url: `/admin/v1/businesses/${tenant.businessId}/channels`,
    headers: adminHeaders,
    payload: {
      type: 'hubspot_chat',
      identifier: hub.accountId,
      provider: {
        kind: 'hubspot',
        channel_id: hub.channelId,
        channel_account_id: hub.accountId,
        access_token: hubspot.accessToken,
        client_secret: CLIENT_SECRET,
        api_base_url: hubspot.baseUrl,
      },
    },
  });
  expect(created.statusCode, created.body).toBe(201);
  hub.id = created.json().channel.id as string;
});
afterAll(async () => {
  await t.close();
  await graph.close();
  await hubspot.close();
  await tiktok.close();
});

describe('HubSpot attachments: mirroring a customer file', () => {
  it('uploads the customer’s image and publishes it attached, once, when the publish is retried', async () => {
    const media = graph.addMedia({ bytes: PNG, mimeType: 'image/png' });
    hubspot.failNextPublishes(1, 503);
    const row = await customerWrites(whatsapp, newPhone(), 'image', {
      id: media.id,
      mime_type: 'image/png',
      sha256: media.sha256,
      caption: 'The box arrived like this',
    });
    const job = () =>
      db()
        .selectFrom('outbox')
        .select(['state', 'last_error'])
        .where('ref_id', '=', row.id)
        .where('kind', '=', 'mirror')
        .executeTakeFirst();
    const publishes = () => hubspot.publishes().filter((r) => r.body.integrationIdempotencyId === row.id);
    await until(() => publishes().length >= 1);
    // The job's own retry may come first on a slow machine; else the test runs it now.
    await until(async () => ['pending', 'done'].includes((await job())?.state ?? ''));
    if ((await job())?.state === 'pending') await runAgain('mirror', row.id);
    await until(async () => (await job())?.state === 'done');

    // Every try uploaded; HubSpot answered the later ones with the file of the first (RETURN_EXISTING).
    // A retry of the job's own may come before the one run here, on a slow machine: two tries or more.
    const uploads = hubspot.uploads().filter((r) => r.body.folderPath === `/customer-files/${row.conversation_id}`);
    expect(uploads.length).toBeGreaterThanOrEqual(2);
    expect(uploads[0].headers.authorization).toBe(`Bearer ${hubspot.accessToken}`);
    expect(JSON.parse(String(uploads[0].body.options))).toEqual({
      access: 'PRIVATE',
      duplicateValidationStrategy: 'RETURN_EXISTING',
      duplicateValidationScope: 'EXACT_FOLDER',
    });
    const files = hubspot.files().filter((f) => f.folderPath === `/customer-files/${row.conversation_id}`);
    expect(files).toHaveLength(1);
    expect(files[0].bytes.equals(PNG)).toBe(true);
    expect(files[0]).toMatchObject({ contentType: 'image/png', access: 'PRIVATE', extension: 'png' });

    expect(publishes().length).toBe(uploads.length);
    expect(publishes().at(-1)!.body).toMatchObject({
      text: 'The box arrived like this',
      attachments: [{ type: 'FILE', fileId: files[0].id, fileUsageType: 'IMAGE' }],
      integrationThreadId: row.conversation_id,
    });
    expect(hubspot.messages().filter((m) => m.integrationIdempotencyId === row.id)).toHaveLength(1);
  });

  it('holds the copy back while its file is being fetched, and publishes it as soon as the file is stored', async () => {
    const media = graph.addMedia({ bytes: PNG, mimeType: 'image/png' });
    // Meta answers slowly: the copy's first try finds the download still running.
    graph.setDelay(1000);
    try {
      const row = await customerWrites(whatsapp, newPhone(), 'image', {
        id: media.id,
        mime_type: 'image/png',
        sha256: media.sha256,
      });
      const job = () =>
        db()
          .selectFrom('outbox')
          .select(['state', 'last_error'])
          .where('ref_id', '=', row.id)
          .where('kind', '=', 'mirror')
          .executeTakeFirst();
      await until(async () => (await job())?.last_error === "waiting for the message's files to be fetched");
      const publishes = () => hubspot.publishes().filter((r) => r.body.integrationIdempotencyId === row.id);
      expect(publishes()).toHaveLength(0);
      // The download's commit makes the copy due at once, long before its 30 s backoff.
      await until(() => publishes().length === 1, 10_000);
      expect(publishes()[0].body).toMatchObject({ text: '[image]', attachments: [{ type: 'FILE' }] });
    } finally {
      graph.setDelay(0);
    }
  });

  it('mirrors the text with a note when the file could not be fetched from the customer’s channel', async () => {
    // A media id Meta does not know: the download fails for good.
    const row = await customerWrites(whatsapp, newPhone(), 'document', {
      id: '999000111222333',
      mime_type: 'application/pdf',
      filename: 'invoice.pdf',
    });
    // The copy waited for the download; once that failed for good, its next try mirrors the text.
    const fetch = () =>
      db()
        .selectFrom('outbox')
        .select('state')
        .where('ref_id', '=', row.id)
        .where('kind', '=', 'media_fetch')
        .executeTakeFirst();
    await until(async () => (await fetch())?.state === 'failed');
    await runAgain('mirror', row.id);
    await until(() => hubspot.publishes().some((r) => r.body.integrationIdempotencyId === row.id));
    const publish = hubspot.publishes().find((r) => r.body.integrationIdempotencyId === row.id)!;
    expect(publish.body.attachments).toBeUndefined();
    expect(String(publish.body.text)).toContain('(invoice.pdf could not be fetched from the customer');
    expect(hubspot.uploads().some((r) => String(r.body.folderPath).endsWith(row.conversation_id))).toBe(false);
  });

  it('names a file over the media limit in a note instead of uploading it', async () => {
    const provider = new HubSpotProvider(
      {
        kind: 'hubspot',
        channel_id: hub.channelId,
        channel_account_id: hub.accountId,
        access_token: hubspot.accessToken,
        client_secret: CLIENT_SECRET,
        api_base_url: hubspot.baseUrl,
      },
      { maxMediaBytes: 64 },
    );
    const id = '0190a6f8-0000-7000-8000-0000000000aa';
    await provider.mirror({
      id,
      conversationId: '0190a6f8-0000-7000-8000-0000000000bb',
      channelType: 'whatsapp',
      text: '[video]',
      createdAt: new Date().toISOString(),
      sender: { address: '14155550100', addressKind: 'phone', name: null },
      to: '15550001111',
      files: [
        {
          id: '7',
          kind: 'video',
          filename: 'clip.mp4',
          contentType: 'video/mp4',
          size: 65,
          read: () => Promise.reject(new Error('an oversize file is not read')),
        },
      ],
    });
    const publish = hubspot.publishes().find((r) => r.body.integrationIdempotencyId === id)!;
    expect(publish.body.text).toBe('[video]\n\n(clip.mp4 is not attached: larger than 64 bytes)');
    expect(publish.body.attachments).toBeUndefined();
  });
});

describe('HubSpot attachments: replies with files', () => {
  it('sends an image and a PDF through WhatsApp, one message each with the text as the first one’s caption, once', async () => {
    const from = newPhone();
    const inbound = await customerWrites(whatsapp, from, 'text', { body: 'Can I see the invoice?' });
    const image = hubspot.addFile(PNG, { name: 'photo', extension: 'png', contentType: 'image/png' });
    const pdf = hubspot.addFile(PDF, { name: 'invoice', extension: 'pdf', contentType: 'application/pdf' });
    const event = reply(inbound.conversation_id, 'Here you go', [image, pdf]);
    expect((await postReply(event)).statusCode).toBe(200);
    // A redelivery fetches and sends nothing.
    const fetched = fileRequests();
    expect((await postReply(event)).statusCode).toBe(200);
    expect(fileRequests()).toBe(fetched);

    const sends = () => graph.sends().filter((r) => (r.body as { to?: string }).to === from);
    await until(() => sends().length === 2);
    await settle();
    expect(sends()).toHaveLength(2);
    const bodies = sends().map((r) => r.body as Record<string, Record<string, string>>);
    const first = bodies.find((b) => (b.type as unknown as string) === 'image')!;
    const second = bodies.find((b) => (b.type as unknown as string) === 'document')!;
    expect(first.image.caption).toBe('Here you go');
    expect(second.document.filename).toBe('invoice.pdf');
    expect(second.document.caption).toBeUndefined();
    // HubSpot's signed URLs were downloaded without the app's token, which goes to its API alone.
    const downloads = hubspot.requests.filter((r) => r.path.startsWith('/hubfs-signed/'));
    expect(downloads.length).toBeGreaterThanOrEqual(2);
    expect(downloads.every((r) => r.headers.authorization === undefined)).toBe(true);
    // What the channel downloads is HubSpot's bytes, served from the service's signed address.
    expect((await served(first.image.link)).equals(PNG)).toBe(true);
    expect((await served(second.document.link)).equals(PDF)).toBe(true);

    const rows = await db()
      .selectFrom('messages')
      .select(['id', 'type', 'text', 'sender_type', 'metadata'])
      .where('conversation_id', '=', inbound.conversation_id)
      .where('direction', '=', 'outbound')
      .orderBy('id')
      .execute();
    expect(rows.map((r) => [r.type, r.text, r.sender_type])).toEqual([
      ['image', 'Here you go', 'human'],
      ['document', '', 'human'],
    ]);
    const media = await db()
      .selectFrom('media')
      .select(['message_id', 'content_type', 'filename'])
      .where(
        'message_id',
        'in',
        rows.map((r) => r.id),
      )
      .execute();
    expect(media).toHaveLength(2);
    expect(media.find((m) => m.message_id === rows[1].id)).toMatchObject({
      content_type: 'application/pdf',
      filename: 'invoice.pdf',
    });

    // HubSpot hears it went out once both parts did.
    const key = keyOf(event);
    await until(() => hubspot.reports().some((r) => r.messageId === key));
    await settle();
    // Parts that ended together may each report it: the same outcome.
    expect(
      new Set(
        hubspot
          .reports()
          .filter((r) => r.messageId === key)
          .map((r) => r.statusType),
      ),
    ).toEqual(new Set(['SENT']));
  });

  it('answers 503 while HubSpot cannot give the file, and sends it when the reply comes again', async () => {
    const from = newPhone();
    const inbound = await customerWrites(whatsapp, from, 'text', { body: 'The photo?' });
    const image = hubspot.addFile(PNG, { name: 'photo', extension: 'png', contentType: 'image/png' });
    const event = reply(inbound.conversation_id, '', [image]);
    hubspot.failNextSignedUrls(1, 502);
    expect((await postReply(event)).statusCode).toBe(503);
    expect((await postReply(event)).statusCode).toBe(200);
    await until(() => graph.sends().some((r) => (r.body as { to?: string }).to === from));
    const sent = graph.sends().find((r) => (r.body as { to?: string }).to === from)!.body as {
      image: { link: string; caption?: string };
    };
    expect(sent.image.caption).toBeUndefined();
    expect((await served(sent.image.link)).equals(PNG)).toBe(true);
  });

  it('sends nothing and reports FAILED for an unknown file, one over the media limit, or a type the channel does not send', async () => {
    const from = newPhone();
    const inbound = await customerWrites(whatsapp, from, 'text', { body: 'Files?' });
    const huge = hubspot.addFile(PNG, {
      name: 'scan',
      extension: 'png',
      contentType: 'image/png',
      size: 200 * 1024 * 1024,
    });
    const person = tiktokPerson();
    const written = await t.app.inject({
      method: 'POST',
      url: '/channels/tiktok/webhook',
      ...signedEvent(
        receivedMessage(tiktokChannel.businessId, person, { type: 'text', text: { body: 'Send the PDF' } }),
        tiktokChannel.appSecret,
      ),
    });
    expect(written.statusCode, written.body).toBe(200);
    const tiktokConversation = await db()
      .selectFrom('conversations')
      .select('id')
      .where('business_id', '=', tenant.businessId)
      .where('channel_id', '=', tiktokChannel.id)
      .executeTakeFirstOrThrow();
    const pdf = hubspot.addFile(PDF, { name: 'terms', extension: 'pdf', contentType: 'application/pdf' });
    const cases = [
      { event: reply(inbound.conversation_id, 'unknown', ['123456789012']), why: /OBJECT_NOT_FOUND|not found/i },
      { event: reply(inbound.conversation_id, 'too big', [huge]), why: /larger than/ },
      { event: reply(tiktokConversation.id, 'the terms', [pdf]), why: /does not send document messages/ },
    ];
    const sentBefore = graph.sends().length + tiktok.sends().length;
    for (const { event, why } of cases) {
      expect((await postReply(event)).statusCode).toBe(200);
      const report = hubspot.reports().find((r) => r.messageId === keyOf(event));
      expect(report?.statusType, JSON.stringify(report)).toBe('FAILED');
      expect(String(report?.errorMessage)).toMatch(why);
    }
    await settle();
    expect(graph.sends().length + tiktok.sends().length).toBe(sentBefore);
    // The oversize file was never downloaded: HubSpot's size refused it.
    expect(hubspot.requests.some((r) => r.path.startsWith(`/hubfs-signed/${huge}/`))).toBe(false);
  });

  it('refuses an attachment without its file id with 400, and a wrong signature with 401, fetching nothing', async () => {
    const inbound = await customerWrites(whatsapp, newPhone(), 'text', { body: 'Hi' });
    const image = hubspot.addFile(PNG, { name: 'photo', extension: 'png', contentType: 'image/png' });
    const before = fileRequests();
    const noId = outgoingMessageEvent({
      channelId: hub.channelId,
      channelAccountId: hub.accountId,
      threadId: inbound.conversation_id,
      text: 'see file',
      attachments: [{ type: 'FILE', name: 'photo.png' }],
    });
    const res = await postReply(noId);
    expect(res.statusCode).toBe(400);
    expect(res.json().error.code).toBe('validation_error');
    expect((await postReply(reply(inbound.conversation_id, 'x', [image]), 'not-the-secret')).statusCode).toBe(401);
    expect(fileRequests()).toBe(before);
  });

  it("fetches and sends nothing for another business's conversation", async () => {
    const theirs = await customerWrites(otherWhatsapp, newPhone(), 'text', { body: 'Hello there' });
    const image = hubspot.addFile(PNG, { name: 'photo', extension: 'png', contentType: 'image/png' });
    const before = { files: fileRequests(), graph: graph.sends().length };
    expect((await postReply(reply(theirs.conversation_id, 'not for you', [image]))).statusCode).toBe(200);
    await settle();
    expect(fileRequests()).toBe(before.files);
    expect(graph.sends().length).toBe(before.graph);
    const relayed = await db()
      .selectFrom('messages')
      .select('id')
      .where('business_id', '=', other.businessId)
      .where('direction', '=', 'outbound')
      .execute();
    expect(relayed).toHaveLength(0);
  });
});

describe('HubSpot attachments: reading a reply', () => {
  it("reads a reply's FILE attachments into its files, and a reply of files alone into a relayed item", () => {
    const event = outgoingMessageEvent({
      channelId: hub.channelId,
      channelAccountId: hub.accountId,
      threadId: '0190a6f8-0000-7000-8000-000000000001',
      text: '',
      attachments: [
        { type: 'FILE', fileId: 1234, name: 'a.png', fileUsageType: 'IMAGE' },
        { type: 'QUICK_REPLIES', quickReplies: [] },
        { type: 'FILE', fileId: '5678' },
      ],
    });
    expect(readHubSpotNotification(event).relayed).toEqual([
      {
        account: hub.accountId,
        conversationId: '0190a6f8-0000-7000-8000-000000000001',
        text: '',
        key: keyOf(event),
        files: [
          { ref: '1234', filename: 'a.png' },
          { ref: '5678', filename: null },
        ],
      },
    ]);
    expect(() =>
      readHubSpotNotification({ ...event, message: { ...(event.message as object), attachments: 'x' } }),
    ).toThrow(/not a list/);
  });
});
