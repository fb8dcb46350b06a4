import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertContact, insertConversation, insertMessage } from '../../helpers/factories.ts';
import { inboundMessage } from '../../helpers/fake-graph-api.ts';
import { adminHeaders, createTenant, type Tenant } from '../../helpers/tenants.ts';
import type { TestApp } from '../../helpers/test-app.ts';
import { createAgent, createNamedUser } from '../conversations/inbox-helpers.ts';
import { withWhatsAppChannel, type WhatsAppFixture } from '../inbound/whatsapp-helpers.ts';

let t: TestApp;
let tenant: Tenant;
let notify: WhatsAppFixture['notify'];
const waId = '5491133445566';
/** Unix seconds of the messages received, in order. */
const base = Math.floor(Date.UTC(2026, 0, 1) / 1000);
let received = 0;

beforeAll(async () => {
  ({ t, tenant, notify } = await withWhatsAppChannel({ workers: false }));
});
afterAll(() => t.close());

/** A message received from the contact, a second after the previous one; answers its stored row. */
async function receive(type: string, content: unknown, extra: Record<string, unknown> = {}) {
  const m = inboundMessage(waId, type, content, { timestamp: String(base + ++received), ...extra });
  const res = await notify({ contacts: [{ waId, name: 'Thread Tester' }], messages: [m] });
  expect(res.statusCode, res.body).toBe(200);
  return t.database.db
    .selectFrom('messages')
    .selectAll()
    .where('provider_message_id', '=', m.id as string)
    .executeTakeFirstOrThrow();
}

const thread = (
  conversationId: string,
  query: { limit?: number; cursor?: string } = {},
  businessId = tenant.businessId,
) => t.app.services.thread.list(businessId, conversationId, { limit: 50, ...query });

describe('the thread of a conversation', () => {
  it('shows every message as the dashboard does and merges the events in time order', async () => {
    const db = t.database.db;
    const b = tenant.businessId;
    const user = await createNamedUser(t.app, b, 'Dana Desk');
    const agent = await createAgent(t.app, b, 'Concierge');
    const hello = await receive('text', { body: 'hello there' });
    const photo = await receive('image', { id: '7001', mime_type: 'image/jpeg', sha256: 'ab', caption: 'my receipt' });
    const place = await receive('location', { latitude: -34.6, longitude: -58.38, name: 'Obelisco', address: null });
    const card = await receive('contacts', [
      { name: { formatted_name: 'Ada Lovelace', first_name: 'Ada' }, phones: [{ phone: '+44 20', wa_id: '4420' }] },
    ]);
    const quoting = await receive(
      'text',
      { body: 'about that' },
      { context: { from: waId, id: hello.provider_message_id, forwarded: true } },
    );
    const conversation = { id: hello.conversation_id, contact_id: hello.contact_id, channel: 'whatsapp' };

    const fromUser = await insertMessage(db, b, conversation, {
      created_at: new Date((base + 10) * 1000).toISOString(),
      direction: 'outbound',
      sender_type: 'human',
      user_id: user.id,
      status: 'READ',
      text: 'on it',
    });
    const failed = await insertMessage(db, b, conversation, {
      created_at: new Date((base + 11) * 1000).toISOString(),
      direction: 'outbound',
      sender_type: 'ai_agent',
      agent_id: agent.id,
      type: 'document',
      status: 'ERROR',
      error: '131047: Re-engagement message - more than 24 hours',
      text: 'the invoice',
      outbound_content: { kind: 'media', mediaKind: 'document', url: 'https://files.test/i.pdf', filename: 'i.pdf' },
    });
    // Operations of the dashboard, each with its event (now, after the messages).
    const op = (path: string, payload: object, method: 'POST' | 'PUT' = 'POST') =>
      t.app.inject({
        method,
        url: `/admin/v1/businesses/${b}/conversations/${conversation.id}/${path}`,
        headers: adminHeaders,
        payload,
      });
    expect((await op('manual-control', { user_id: user.id, active: true })).statusCode).toBe(200);
    expect((await op('agent', { agent_id: agent.id }, 'PUT')).statusCode).toBe(200);
    expect((await op('resolve', { user_id: user.id, reason: 'done' })).statusCode).toBe(200);
    expect((await op('archive', {})).statusCode).toBe(200);

    const page = await thread(conversation.id);
    expect(page.next_cursor).toBeNull();
    expect(page.items.map((i) => (i.kind === 'event' ? i.type : i.id))).toEqual([
      'conversation_archived',
      'conversation_resolved',
      'agent_assigned',
      'manual_control_activated',
      failed.id,
      fromUser.id,
      quoting.id,
      card.id,
      place.id,
      photo.id,
      hello.id,
    ]);
    const byId = new Map(page.items.map((i) => [i.id, i]));
    const photoItem = byId.get(photo.id)!;
    expect(photoItem).toMatchObject({
      kind: 'message',
      direction: 'inbound',
      type: 'image',
      text: 'my receipt',
      status: 'RECEIVED',
      error: null,
      forwarded: false,
      reply_to: null,
      sender: { type: 'contact', user: null, agent: null },
    });
    const [file] = (photoItem as { media: { id: number; url: string; expires_at: string }[] }).media;
    expect(file).toMatchObject({ content_type: 'image/jpeg', filename: null, expires_at: expect.any(String) });
    expect(file.url).toMatch(new RegExp(`^http://dashboard\\.test/files/${file.id}\\?b=${b}&exp=\\d+&sig=`));
    // The signed address serves (the file is still being fetched, so: not found, not forbidden).
    const served = await t.app.inject({ method: 'GET', url: file.url.replace('http://dashboard.test', '') });
    expect(served.statusCode).toBe(404);
    expect(byId.get(place.id)).toMatchObject({
      type: 'location',
      location: { latitude: -34.6, longitude: -58.38, name: 'Obelisco', address: null, url: null },
      contacts: [],
      media: [],
    });
    expect(byId.get(card.id)).toMatchObject({
      location: null,
      contacts: [
        {
          formatted_name: 'Ada Lovelace',
          first_name: 'Ada',
          last_name: null,
          organization: null,
          phones: [{ phone: '+44 20', wa_id: '4420', type: null }],
          emails: [],
          urls: [],
        },
      ],
    });
    expect(byId.get(quoting.id)).toMatchObject({
      text: 'about that',
      forwarded: true,
      reply_to: { id: hello.id, type: 'text', text: 'hello there', direction: 'inbound' },
    });
    expect(byId.get(fromUser.id)).toMatchObject({
      direction: 'outbound',
      status: 'READ',
      sender: { type: 'human', user: { id: user.id, name: 'Dana Desk' }, agent: null },
    });
    expect(byId.get(failed.id)).toMatchObject({
      status: 'ERROR',
      error: '131047: Re-engagement message - more than 24 hours',
      sender: { type: 'ai_agent', user: null, agent: { id: agent.id, name: 'Concierge' } },
      media: [{ id: null, url: 'https://files.test/i.pdf', filename: 'i.pdf', content_type: null, expires_at: null }],
    });
    expect(page.items[2]).toMatchObject({
      kind: 'event',
      type: 'agent_assigned',
      actor_type: 'system',
      user: null,
      agent: { id: agent.id, name: 'Concierge' },
      data: { from_agent: null, to_agent: agent.id },
    });
    expect(page.items[3]).toMatchObject({
      kind: 'event',
      type: 'manual_control_activated',
      actor_type: 'human',
      user: { id: user.id, name: 'Dana Desk' },
    });
  });

  it('pages from the newest to the oldest, each item once, across messages and events at the same instant', async () => {
    const db = t.database.db;
    const { businessId: b } = await createTenant(t.app, 'Pages');
    const contact = await insertContact(db, b);
    const conversation = await insertConversation(db, b, contact.id);
    const instant = '2026-03-01T10:00:00.000001Z';
    const expected: string[] = [];
    for (let i = 0; i < 7; i++) {
      const message = await insertMessage(db, b, conversation, { created_at: i < 4 ? instant : undefined });
      expected.push(message.id);
    }
    const { rows } = await (
      await import('kysely')
    ).sql<{
      id: string;
    }>`insert into events (business_id, id, type, conversation_id, contact_id, channel, actor_type, created_at)
        select ${b}, gen_random_uuid(), t, ${conversation.id}, ${contact.id}, 'whatsapp', 'system', ${instant}
        from unnest(array['conversation_resolved', 'conversation_archived', 'sentiment_analyzed']) t returning id`.execute(
      db,
    );
    // An event the thread does not show.
    const hidden = rows[2].id;
    const all = await db
      .selectFrom('messages')
      .select(['id', 'created_at'])
      .where('conversation_id', '=', conversation.id)
      .unionAll(
        db
          .selectFrom('events')
          .select(['id', 'created_at'])
          .where('conversation_id', '=', conversation.id)
          .where('id', '<>', hidden),
      )
      .execute();
    const order = all
      .sort((x, y) => (x.created_at === y.created_at ? (x.id < y.id ? 1 : -1) : x.created_at < y.created_at ? 1 : -1))
      .map((r) => r.id);
    expect(order).toHaveLength(9);

    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await thread(conversation.id, { limit: 2, cursor }, b);
      seen.push(...page.items.map((i) => i.id));
      cursor = page.next_cursor ?? undefined;
    } while (cursor);
    expect(seen).toEqual(order);
  });

  it("refuses another business's conversation and a cursor of another thread", async () => {
    const db = t.database.db;
    const { businessId: b } = await createTenant(t.app, 'Elsewhere');
    const contact = await insertContact(db, b);
    const mine = await insertConversation(db, b, contact.id);
    const second = await insertConversation(db, b, contact.id);
    for (let i = 0; i < 3; i++) await insertMessage(db, b, mine);
    await expect(thread(mine.id, {}, tenant.businessId)).rejects.toMatchObject({ kind: 'not_found' });
    const { next_cursor: cursor } = await thread(mine.id, { limit: 1 }, b);
    await expect(thread(second.id, { cursor: cursor! }, b)).rejects.toMatchObject({
      status: 400,
      message: 'invalid cursor',
    });
    expect(await thread(second.id, {}, b)).toEqual({ items: [], next_cursor: null });
  });
});
