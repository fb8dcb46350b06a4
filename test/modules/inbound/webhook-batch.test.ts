import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { phoneKey } from '../../../src/lib/phone.ts';
import { insertContact, insertConversation } from '../../helpers/factories.ts';
import { inboundMessage } from '../../helpers/fake-graph-api.ts';
import type { Tenant } from '../../helpers/tenants.ts';
import type { TestApp } from '../../helpers/test-app.ts';
import {
  notificationFor,
  postSigned,
  withWhatsAppChannel,
  type TestChannel,
  type WhatsAppFixture,
} from './whatsapp-helpers.ts';

// Notifications that arrive together are written in one transaction (InboundService's batches):
// the same rules must hold as when they arrive one by one.

let t: TestApp;
let tenant: Tenant;
let channel: TestChannel;
let notify: WhatsAppFixture['notify'];

beforeAll(async () => {
  ({ t, tenant, channel, notify } = await withWhatsAppChannel());
});
afterAll(() => t.close());

const db = () => t.database.db;
let seq = 0;
const freshWaId = () => `54911${String(41_000_000 + ++seq).padStart(8, '0')}`;

describe('notifications posted at the same time', () => {
  it('store every message once, one contact per phone (country variants included), counters that add up', async () => {
    const senders = Array.from({ length: 8 }, freshWaId);
    // An unnamed contact stored in the 54 form, and one whose only conversation is closed.
    const unnamed = await insertContact(db(), tenant.businessId, {
      phone_number: `54${senders[0].slice(3)}`,
      first_name: '',
      last_name: '',
    });
    const closedOwner = await insertContact(db(), tenant.businessId, {
      phone_number: senders[1],
      first_name: 'Closed',
      last_name: 'Owner',
    });
    const closed = await insertConversation(db(), tenant.businessId, closedOwner.id, {
      channel_id: channel.id,
      closed_at: '2026-01-01T00:00:00.000000Z',
    });

    const messages = Array.from({ length: 24 }, (_, i) => ({
      from: senders[i % senders.length],
      message: inboundMessage(senders[i % senders.length], 'text', { body: `m${i}` }),
    }));
    const redelivered = messages[5];
    const posts = [...messages, redelivered, redelivered].map(({ from, message }) =>
      notify({
        contacts: [{ waId: from, name: `Profile ${from.slice(-3)}` }],
        messages: [message],
      }),
    );
    const answers = await Promise.all(posts);
    expect(answers.map((a) => a.statusCode)).toEqual(answers.map(() => 200));

    const stored = await db()
      .selectFrom('messages')
      .select(['provider_message_id', 'contact_id', 'conversation_id'])
      .where('channel_id', '=', channel.id)
      .execute();
    expect(stored.map((m) => m.provider_message_id).sort()).toEqual(messages.map((m) => m.message.id as string).sort());

    for (const waId of senders) {
      const contacts = await db()
        .selectFrom('contacts')
        .selectAll()
        .where('business_id', '=', tenant.businessId)
        .where('phone_key', '=', phoneKey(waId))
        .execute();
      expect(contacts, waId).toHaveLength(1);
      const conversations = await db()
        .selectFrom('conversations')
        .selectAll()
        .where('contact_id', '=', contacts[0].id)
        .execute();
      expect(conversations, waId).toHaveLength(1);
      expect(conversations[0]).toMatchObject({ closed_at: null, channel_id: channel.id, message_count: 3 });
    }
    // The unnamed contact took the profile name once; the closed conversation was reopened once.
    const renamed = await db()
      .selectFrom('contacts')
      .selectAll()
      .where('id', '=', unnamed.id)
      .executeTakeFirstOrThrow();
    expect(renamed).toMatchObject({ first_name: 'Profile', last_name: senders[0].slice(-3) });
    const events = await db()
      .selectFrom('events')
      .select(['type', 'contact_id', 'conversation_id'])
      .where('business_id', '=', tenant.businessId)
      .execute();
    expect(events.filter((e) => e.type === 'contact_field_changed' && e.contact_id === unnamed.id)).toHaveLength(1);
    expect(events.filter((e) => e.type === 'conversation_unarchived')).toEqual([
      { type: 'conversation_unarchived', contact_id: closedOwner.id, conversation_id: closed.id },
    ]);
    expect(stored.filter((m) => m.contact_id === closedOwner.id).every((m) => m.conversation_id === closed.id)).toBe(
      true,
    );
  });

  it('flag for the exports the messages of test contacts and internal chats, and only those (rule 4)', async () => {
    const [tester, internal, plain] = [freshWaId(), freshWaId(), freshWaId()];
    await insertContact(db(), tenant.businessId, { phone_number: tester, is_test: true });
    const internalOwner = await insertContact(db(), tenant.businessId, { phone_number: internal });
    await insertConversation(db(), tenant.businessId, internalOwner.id, { channel_id: channel.id, is_internal: true });
    const sent = [tester, internal, plain, tester, plain].map((from, i) => ({
      from,
      message: inboundMessage(from, 'text', { body: `r${i}` }),
    }));
    const answers = await Promise.all(
      sent.map(({ from, message }) => notify({ contacts: [{ waId: from, name: 'Rule' }], messages: [message] })),
    );
    expect(answers.map((a) => a.statusCode)).toEqual(answers.map(() => 200));

    const stored = await db()
      .selectFrom('messages')
      .select(['provider_message_id', 'excluded', 'duplicate'])
      .where(
        'provider_message_id',
        'in',
        sent.map((s) => s.message.id as string),
      )
      .execute();
    const flags = new Map(stored.map((m) => [m.provider_message_id, [m.excluded, m.duplicate]]));
    expect(sent.map(({ from, message }) => [from, flags.get(message.id as string)])).toEqual(
      sent.map(({ from }) => [from, [from !== plain, false]]),
    );
  });

  it('a refused notification among concurrent ones is refused alone, and nothing of it is stored', async () => {
    const good = Array.from({ length: 6 }, () => {
      const from = freshWaId();
      return notify({
        contacts: [{ waId: from, name: 'Good' }],
        messages: [inboundMessage(from, 'text', { body: 'ok' })],
      });
    });
    const badMessage = inboundMessage(freshWaId(), 'text', { body: 'x' });
    const bad = postSigned(t.app, notificationFor(channel, { messages: [badMessage] }), 'not-the-secret');
    const [badAnswer, ...goodAnswers] = await Promise.all([bad, ...good]);
    expect(badAnswer.statusCode).toBe(401);
    expect(goodAnswers.map((a) => a.statusCode)).toEqual(goodAnswers.map(() => 200));
    expect(
      await db()
        .selectFrom('messages')
        .select('id')
        .where('provider_message_id', '=', badMessage.id as string)
        .execute(),
    ).toEqual([]);
  });
});
