import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Tenant } from '../../helpers/tenants.ts';
import type { TestApp } from '../../helpers/test-app.ts';
import { withWhatsAppChannel, type WhatsAppFixture } from './whatsapp-helpers.ts';

// One signed notification may carry thousands of messages (Meta batches a backlog): every row of
// every step travels in a fixed number of parameters, never one per column per row, so PostgreSQL's
// limit of 65 535 parameters in a statement is never reached.

let t: TestApp;
let tenant: Tenant;
let notify: WhatsAppFixture['notify'];

beforeAll(async () => {
  ({ t, tenant, notify } = await withWhatsAppChannel());
});
afterAll(() => t.close());

const db = () => t.database.db;

describe('a notification of 10 000 messages', () => {
  it('is stored whole: every message, one contact and one conversation per sender, media and replies', async () => {
    const total = 10_000;
    const senders = Array.from({ length: 2_500 }, (_, i) => `54911${String(50_000_000 + i).padStart(8, '0')}`);
    const timestamp = String(Math.floor(Date.now() / 1000));
    const messages = Array.from({ length: total }, (_, i) => {
      const from = senders[i % senders.length];
      const id = `wamid.large${i}`;
      if (i % 500 === 7)
        return { from, id, timestamp, type: 'image', image: { id: `${9_000 + i}`, mime_type: 'image/jpeg' } };
      // A reply to the message this sender sent just before, in the same notification.
      if (i % 1_000 === 1 && i >= senders.length)
        return {
          from,
          id,
          timestamp,
          type: 'text',
          text: { body: `r${i}` },
          context: { from, id: `wamid.large${i - senders.length}` },
        };
      return { from, id, timestamp, type: 'text', text: { body: `m${i}` } };
    });
    const res = await notify({ contacts: senders.map((waId) => ({ waId, name: `P ${waId.slice(-4)}` })), messages });
    expect(res.statusCode, res.body.slice(0, 300)).toBe(200);

    const stored = await db()
      .selectFrom('messages')
      .select(['id', 'provider_message_id', 'reply_to_id', 'contact_id'])
      .where('business_id', '=', tenant.businessId)
      .execute();
    expect(stored).toHaveLength(total);
    const byProviderId = new Map(stored.map((m) => [m.provider_message_id, m]));
    expect(messages.every((m) => byProviderId.has(m.id))).toBe(true);
    const replies = messages.filter((m) => 'context' in m);
    expect(replies.length).toBeGreaterThan(0);
    for (const reply of replies)
      expect(byProviderId.get(reply.id)!.reply_to_id).toBe(byProviderId.get(reply.context!.id)!.id);

    const counts = await db()
      .selectFrom('contacts')
      .leftJoin('conversations', 'conversations.contact_id', 'contacts.id')
      .select((eb) => [
        eb.fn.countAll<string>().as('n'),
        eb.fn.sum<string>('conversations.message_count').as('messages'),
      ])
      .where('contacts.business_id', '=', tenant.businessId)
      .executeTakeFirstOrThrow();
    expect({ contacts: Number(counts.n), messages: Number(counts.messages) }).toEqual({
      contacts: senders.length,
      messages: total,
    });
    const media = await db()
      .selectFrom('media')
      .select('message_id')
      .where('business_id', '=', tenant.businessId)
      .execute();
    const images = messages.filter((m) => m.type === 'image');
    expect(media.map((m) => m.message_id).sort()).toEqual(images.map((m) => byProviderId.get(m.id)!.id).sort());
    const jobs = await db()
      .selectFrom('outbox')
      .select('ref_id')
      .where('business_id', '=', tenant.businessId)
      .where('kind', '=', 'media_fetch')
      .execute();
    expect(jobs).toHaveLength(images.length);
  }, 300_000);
});
