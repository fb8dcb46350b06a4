import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { at, insertContact, insertConversation, insertMessage } from '../../helpers/factories.ts';
import { createTenant, type Tenant } from '../../helpers/tenants.ts';
import { createWhatsAppChannel } from '../inbound/whatsapp-helpers.ts';
import { buildTestApp, type TestApp } from '../../helpers/test-app.ts';

let t: TestApp;
let tenant: Tenant;
let other: Tenant;

beforeAll(async () => {
  t = await buildTestApp();
  tenant = await createTenant(t.app);
  other = await createTenant(t.app, 'Other');
});
afterAll(() => t.close());

const list = (contactId: string, query = '', headers: Record<string, string> = tenant.headers) =>
  t.app.inject({ method: 'GET', url: `/external/v2/contacts/${contactId}/messages${query}`, headers });

describe('GET /contacts/:uuid/messages', () => {
  it("lists the messages of all the contact's conversations, newest first, in the per-contact form", async () => {
    const db = t.database.db;
    const contact = await insertContact(db, tenant.businessId, {
      phone_number: '5491123450001',
      email: 'ada@example.com',
    });
    const whatsapp = await insertConversation(db, tenant.businessId, contact.id, { channel: 'whatsapp' });
    const email = await insertConversation(db, tenant.businessId, contact.id, { channel: 'email' });
    const inbound = await insertMessage(db, tenant.businessId, whatsapp, { text: 'hi', created_at: at(1, 1) });
    const sent = await insertMessage(db, tenant.businessId, email, {
      direction: 'outbound',
      sender_type: 'api',
      status: 'DELIVERED',
      text: 'welcome',
      metadata: { order: 'A-1', n: 2 },
      created_at: at(2, 2),
    });
    const failed = await insertMessage(db, tenant.businessId, whatsapp, {
      direction: 'outbound',
      sender_type: 'ai_agent',
      status: 'ERROR',
      error: 'expired window',
      text: '',
      created_at: at(3, 3),
    });
    const addressed = await insertMessage(db, tenant.businessId, whatsapp, {
      text: 'from another phone',
      sender_address: '+5491199999999',
      recipient_address: '+5491100000000',
      created_at: at(4, 4),
    });
    const emailIn = await insertMessage(db, tenant.businessId, email, { text: 'reply by mail', created_at: at(5, 5) });

    const res = await list(contact.id);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      messages: [
        {
          uuid: emailIn.id,
          status: 'received',
          channel: 'email',
          createdAt: '2026-01-01T00:00:05.000005Z',
          from: 'ada@example.com',
          to: '',
          text: 'reply by mail',
          attachments: [],
          media: [],
          metadata: {},
        },
        {
          uuid: addressed.id,
          status: 'received',
          channel: 'whatsapp',
          createdAt: '2026-01-01T00:00:04.000004Z',
          from: '+5491199999999',
          to: '+5491100000000',
          text: 'from another phone',
          attachments: [],
          media: [],
          metadata: {},
        },
        {
          uuid: failed.id,
          status: 'failed',
          channel: 'whatsapp',
          createdAt: '2026-01-01T00:00:03.000003Z',
          from: '',
          to: '5491123450001',
          text: '',
          attachments: [],
          media: [],
          metadata: {},
        },
        {
          uuid: sent.id,
          status: 'sent',
          channel: 'email',
          createdAt: '2026-01-01T00:00:02.000002Z',
          from: '',
          to: 'ada@example.com',
          text: 'welcome',
          attachments: [],
          media: [],
          metadata: { order: 'A-1', n: 2 },
        },
        {
          uuid: inbound.id,
          status: 'received',
          channel: 'whatsapp',
          createdAt: '2026-01-01T00:00:01.000001Z',
          from: '5491123450001',
          to: '',
          text: 'hi',
          attachments: [],
          media: [],
          metadata: {},
        },
      ],
    });
  });

  it("addresses messages without recorded addresses as the channel records them: phone digits and the channel's number", async () => {
    const db = t.database.db;
    const channel = await createWhatsAppChannel(t.app, tenant.businessId, { identifier: '15550001111' });
    const contact = await insertContact(db, tenant.businessId, { phone_number: '5491123450002' });
    const conversation = await insertConversation(db, tenant.businessId, contact.id, {
      channel: 'whatsapp',
      channel_id: channel.id,
    });
    // As imported: no addresses recorded, the channel known through the conversation.
    const inbound = await insertMessage(db, tenant.businessId, conversation, { text: 'hola', created_at: at(1, 1) });
    const reply = await insertMessage(db, tenant.businessId, conversation, {
      direction: 'outbound',
      sender_type: 'human',
      status: 'SENT',
      text: 'hola!',
      created_at: at(2, 2),
    });
    // As received: what the channel recorded.
    const received = await insertMessage(db, tenant.businessId, conversation, {
      text: 'live',
      sender_address: '5491123450002',
      recipient_address: '15550001111',
      created_at: at(3, 3),
    });
    const byId = new Map((await list(contact.id)).json().messages.map((m: { uuid: string }) => [m.uuid, m]));
    expect(byId.get(inbound.id)).toMatchObject({ from: '5491123450002', to: '15550001111' });
    expect(byId.get(reply.id)).toMatchObject({ from: '15550001111', to: '5491123450002' });
    expect(byId.get(received.id)).toMatchObject({ from: '5491123450002', to: '15550001111' });
  });

  it("leaves the business's address empty, never the channel's name, for a business without a channel", async () => {
    const db = t.database.db;
    const lone = await createTenant(t.app, 'No channel');
    const contact = await insertContact(db, lone.businessId, { phone_number: '5491123450010' });
    const conversation = await insertConversation(db, lone.businessId, contact.id, { channel: 'whatsapp' });
    const inbound = await insertMessage(db, lone.businessId, conversation, { text: 'hola', created_at: at(1, 1) });
    const reply = await insertMessage(db, lone.businessId, conversation, {
      direction: 'outbound',
      sender_type: 'human',
      status: 'SENT',
      text: 'hola!',
      created_at: at(2, 2),
    });
    const byId = new Map(
      (await list(contact.id, '', lone.headers)).json().messages.map((m: { uuid: string }) => [m.uuid, m]),
    );
    expect(byId.get(inbound.id)).toMatchObject({ from: '5491123450010', to: '' });
    expect(byId.get(reply.id)).toMatchObject({ from: '', to: '5491123450010' });
  });

  it('lists the files of a message as signed addresses that serve the bytes', async () => {
    const db = t.database.db;
    const contact = await insertContact(db, tenant.businessId, { phone_number: '5491123450077' });
    const conversation = await insertConversation(db, tenant.businessId, contact.id, { channel: 'whatsapp' });
    const message = await insertMessage(db, tenant.businessId, conversation, {
      type: 'image',
      text: '',
      created_at: at(9, 9),
    });
    const media = await db
      .insertInto('media')
      .values({
        business_id: tenant.businessId,
        message_id: message.id,
        content_type: 'image/png',
        filename: 'a.png',
        storage_key: null,
        provider_media_id: 'm1',
      })
      .returning('id')
      .executeTakeFirstOrThrow();

    const [item] = (await list(contact.id)).json().messages;
    expect(item.media).toEqual([
      {
        id: media.id,
        url: expect.stringMatching(/^http:\/\/dashboard\.test\/files\//),
        filename: 'a.png',
        contentType: 'image/png',
      },
    ]);
    expect(item.attachments).toEqual([item.media[0].url]);
    const signed = new URL(item.attachments[0]);
    // Not fetched from the provider yet: the address is valid, the file is not there.
    const file = await t.app.inject({ url: signed.pathname + signed.search });
    expect(file.statusCode).toBe(404);
    const sig = signed.searchParams.get('sig')!;
    signed.searchParams.set('sig', (sig[0] === 'A' ? 'B' : 'A') + sig.slice(1));
    expect((await t.app.inject({ url: signed.pathname + signed.search })).statusCode).toBe(403);
  });

  it('answers an empty list for a contact without messages', async () => {
    const contact = await insertContact(t.database.db, tenant.businessId, { email: 'quiet@example.com' });
    const res = await list(contact.id);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ messages: [] });
  });

  it('returns 100 messages by default, `limit` of them when asked, up to 200', async () => {
    const db = t.database.db;
    const contact = await insertContact(db, tenant.businessId, { phone_number: '5491123450002' });
    const conversation = await insertConversation(db, tenant.businessId, contact.id);
    const ids: string[] = [];
    for (let i = 0; i < 205; i++)
      ids.push((await insertMessage(db, tenant.businessId, conversation, { created_at: at(i) })).id);
    const newestFirst = [...ids].reverse();
    expect((await list(contact.id)).json().messages.map((m: { uuid: string }) => m.uuid)).toEqual(
      newestFirst.slice(0, 100),
    );
    expect((await list(contact.id, '?limit=3')).json().messages.map((m: { uuid: string }) => m.uuid)).toEqual(
      newestFirst.slice(0, 3),
    );
    expect((await list(contact.id, '?limit=200')).json().messages).toHaveLength(200);
  });

  it('orders messages of the same instant by id', async () => {
    const db = t.database.db;
    const contact = await insertContact(db, tenant.businessId, { phone_number: '5491123450003' });
    const conversation = await insertConversation(db, tenant.businessId, contact.id);
    const a = await insertMessage(db, tenant.businessId, conversation, { created_at: at(7) });
    const b = await insertMessage(db, tenant.businessId, conversation, { created_at: at(7) });
    expect((await list(contact.id)).json().messages.map((m: { uuid: string }) => m.uuid)).toEqual(
      [b.id, a.id].sort().reverse(),
    );
  });

  it("does not show another contact's messages", async () => {
    const db = t.database.db;
    const mine = await insertContact(db, tenant.businessId, { phone_number: '5491123450004' });
    const theirs = await insertContact(db, tenant.businessId, { phone_number: '5491123450005' });
    await insertMessage(db, tenant.businessId, await insertConversation(db, tenant.businessId, theirs.id), {
      created_at: at(1),
    });
    expect((await list(mine.id)).json().messages).toEqual([]);
  });

  it("answers 404 for an unknown contact and for another business's contact", async () => {
    const foreign = await insertContact(t.database.db, other.businessId, { phone_number: '5491123450006' });
    await insertMessage(
      t.database.db,
      other.businessId,
      await insertConversation(t.database.db, other.businessId, foreign.id),
      { created_at: at(1) },
    );
    for (const id of [foreign.id, '0190f6a0-0000-7000-8000-000000000000']) {
      const res = await list(id);
      expect(res.statusCode).toBe(404);
      expect(res.json().error.code).toBe('not_found');
    }
    expect((await list(foreign.id, '', other.headers)).json().messages).toHaveLength(1);
  });

  it.each([
    ['limit over 200', '?limit=201'],
    ['limit 0', '?limit=0'],
    ['a negative limit', '?limit=-1'],
    ['limit not a number', '?limit=many'],
    ['an unknown parameter', '?since=2026-01-01'],
  ])('answers 400 for %s', async (_name, query) => {
    const contact = await insertContact(t.database.db, tenant.businessId, {});
    const res = await list(contact.id, query);
    expect(res.statusCode).toBe(400);
    expect(res.json().error.code).toBe('validation_error');
  });

  it('answers 400 for a malformed uuid and 401 without a key', async () => {
    expect((await list('not-a-uuid')).statusCode).toBe(400);
    const contact = await insertContact(t.database.db, tenant.businessId, {});
    expect((await list(contact.id, '', {})).statusCode).toBe(401);
  });
});
