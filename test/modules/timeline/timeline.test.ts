import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../../src/lib/ids.ts';
import { insertMessage } from '../../helpers/factories.ts';
import { buildTestApp, type TestApp } from '../../helpers/test-app.ts';
import { createTenant, type Tenant } from '../../helpers/tenants.ts';
import { aug, bulkMessages, contactWithConversation, insertEvent } from '../exports/export-helpers.ts';

let t: TestApp;
let tenant: Tenant;
let other: Tenant;

beforeAll(async () => {
  t = await buildTestApp({ RATE_LIMIT_EXPORTS_PER_MINUTE: '100000' });
  tenant = await createTenant(t.app);
  other = await createTenant(t.app, 'Other');
});
afterAll(() => t.close());

const get = (contactId: string, query = '', headers = tenant.headers) =>
  t.app.inject({ method: 'GET', url: `/external/v2/contacts/${contactId}/timeline${query}`, headers });

describe('GET /contacts/:uuid/timeline', () => {
  it('merges messages and events newest first, in their export forms', async () => {
    const db = t.database.db;
    const { contact, conversation } = await contactWithConversation(db, tenant.businessId);
    const second = await contactWithConversation(db, tenant.businessId, 'instagram');
    await db
      .updateTable('conversations')
      .set({ contact_id: contact.id })
      .where('id', '=', second.conversation.id)
      .execute();
    const m1 = await insertMessage(db, tenant.businessId, conversation, { created_at: aug(10) });
    const e1 = await insertEvent(db, tenant.businessId, {
      contact_id: contact.id,
      conversation_id: conversation.id,
      channel: 'whatsapp',
      created_at: aug(20),
    });
    const m2 = await insertMessage(
      db,
      tenant.businessId,
      { ...second.conversation, contact_id: contact.id },
      { created_at: aug(30), direction: 'outbound', sender_type: 'api', status: 'SENT' },
    );
    const f = await insertEvent(db, tenant.businessId, {
      contact_id: contact.id,
      type: 'contact_field_changed',
      data: JSON.stringify({ source: 'api', changes: [] }),
      created_at: aug(40),
    });
    await insertEvent(db, tenant.businessId, {
      contact_id: contact.id,
      type: 'followup_scheduled',
      created_at: aug(50),
    });
    const res = await get(contact.id);
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.next_cursor).toBeNull();
    expect(body.items.map((i: { kind: string; id: string }) => [i.kind, i.id])).toEqual([
      ['event', f.id],
      ['message', m2.id],
      ['event', e1.id],
      ['message', m1.id],
    ]);
    expect(body.items[1]).toEqual({
      kind: 'message',
      id: m2.id,
      conversation_id: second.conversation.id,
      contact_id: contact.id,
      channel: 'instagram',
      direction: 'outbound',
      sender_type: 'api',
      agent: null,
      user: null,
      type: 'text',
      text: 'hello',
      media: null,
      reply_to_id: null,
      status: 'SENT',
      error: null,
      created_at: aug(30),
    });
    expect(body.items[2]).toEqual({
      kind: 'event',
      id: e1.id,
      type: 'conversation_archived',
      conversation_id: conversation.id,
      contact_id: contact.id,
      channel: 'whatsapp',
      actor_type: 'system',
      agent: null,
      user: null,
      data: { origin: 'api' },
      created_at: aug(20),
    });
  });

  it('pages exactly once through ties shared by messages and events', async () => {
    const db = t.database.db;
    const { contact, conversation } = await contactWithConversation(db, tenant.businessId);
    const tie = aug(500, 7);
    const msgs = await bulkMessages(db, tenant.businessId, conversation, [
      ...Array.from({ length: 60 }, () => ({ created_at: tie })),
      ...Array.from({ length: 40 }, (_, i) => ({ created_at: aug(600 + i) })),
    ]);
    const evs = [];
    for (let i = 0; i < 30; i++)
      evs.push(
        (
          await insertEvent(db, tenant.businessId, {
            contact_id: contact.id,
            conversation_id: conversation.id,
            channel: 'whatsapp',
            created_at: i < 15 ? tie : aug(700 + i),
          })
        ).id,
      );
    const seen: string[] = [];
    const keys: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res = await get(contact.id, `?limit=17${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      expect(res.statusCode).toBe(200);
      const body: { items: { id: string; created_at: string }[]; next_cursor: string | null } = res.json();
      seen.push(...body.items.map((i) => i.id));
      keys.push(...body.items.map((i) => `${i.created_at}|${i.id}`));
      cursor = body.next_cursor;
      pages++;
    } while (cursor);
    expect(seen.length).toBe(130);
    expect(new Set(seen)).toEqual(new Set([...msgs.map((m) => m.id), ...evs]));
    expect(keys).toEqual([...keys].sort().reverse());
    expect(pages).toBe(Math.ceil(130 / 17));
  });

  it('defaults to 50 items', async () => {
    const { contact, conversation } = await contactWithConversation(t.database.db, tenant.businessId);
    await bulkMessages(
      t.database.db,
      tenant.businessId,
      conversation,
      Array.from({ length: 51 }, (_, i) => ({ created_at: aug(i) })),
    );
    const body = (await get(contact.id)).json();
    expect(body.items).toHaveLength(50);
    expect(body.next_cursor).toEqual(expect.any(String));
  });

  it("answers 404 for an unknown contact or another business's, 400 for bad input", async () => {
    const { contact } = await contactWithConversation(t.database.db, tenant.businessId);
    expect((await get(newId())).statusCode).toBe(404);
    expect((await get(contact.id, '', other.headers)).statusCode).toBe(404);
    const { contact: c2, conversation: v2 } = await contactWithConversation(t.database.db, tenant.businessId);
    await bulkMessages(t.database.db, tenant.businessId, v2, [{ created_at: aug(1) }, { created_at: aug(2) }]);
    const cursor = (await get(c2.id, '?limit=1')).json().next_cursor;
    for (const q of [
      '?limit=201',
      '?limit=0',
      '?limit=x',
      '?cursor=nope',
      `?cursor=${encodeURIComponent(cursor)}&x=1`,
    ]) {
      expect((await get(contact.id, q)).statusCode, q).toBe(400);
    }
    // A cursor of another contact.
    expect((await get(contact.id, `?cursor=${encodeURIComponent(cursor)}`)).statusCode).toBe(400);
    expect((await get('not-a-uuid')).statusCode).toBe(400);
    expect(
      (await t.app.inject({ method: 'GET', url: `/external/v2/contacts/${contact.id}/timeline` })).statusCode,
    ).toBe(401);
  });
});
