import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../../src/lib/ids.ts';
import { phoneKey } from '../../../src/lib/phone.ts';
import { insertAliases, insertContact, insertConversation, insertMessage } from '../../helpers/factories.ts';
import { inboundMessage } from '../../helpers/fake-graph-api.ts';
import { createTenant, type Tenant } from '../../helpers/tenants.ts';
import type { TestApp } from '../../helpers/test-app.ts';
import {
  createWhatsAppChannel,
  notificationFor,
  postSigned,
  withWhatsAppChannel,
  type TestChannel,
  type WhatsAppFixture,
} from './whatsapp-helpers.ts';

let t: TestApp;
let tenant: Tenant;
let channel: TestChannel;
let post: WhatsAppFixture['post'];
let notify: WhatsAppFixture['notify'];
let other: Tenant;

beforeAll(async () => {
  ({ t, tenant, channel, post, notify } = await withWhatsAppChannel({ channel: { identifier: '15550783881' } }));
  other = await createTenant(t.app, 'Other');
});
afterAll(() => t.close());

let phoneSeq = 0;
/** A fresh Argentine mobile in WhatsApp's 549 form. */
const freshWaId = () => `54911${String(40_000_000 + ++phoneSeq).padStart(8, '0')}`;
const db = () => t.database.db;

async function deliver(messages: Record<string, unknown>[], contacts: { waId: string; name: string }[] = []) {
  const res = await notify({ contacts, messages });
  expect(res.statusCode, res.body).toBe(200);
}
const messageBy = (providerId: string) =>
  db().selectFrom('messages').selectAll().where('provider_message_id', '=', providerId).executeTakeFirstOrThrow();
const contactsWithKey = (waId: string) =>
  db()
    .selectFrom('contacts')
    .selectAll()
    .where('business_id', '=', tenant.businessId)
    .where('phone_key', '=', phoneKey(waId))
    .execute();
const conversation = (id: string) =>
  db().selectFrom('conversations').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
const eventsOf = (contactId: string) =>
  db().selectFrom('events').selectAll().where('contact_id', '=', contactId).orderBy('id').execute();

describe('inbound message: contact, conversation, message', () => {
  it('creates the contact with the profile name, a conversation, and the message as received', async () => {
    const waId = freshWaId();
    const m = inboundMessage(waId, 'text', { body: 'Hola, ¿tienen stock?' }, { timestamp: '1700000000' });
    await deliver([m], [{ waId, name: 'María José Pérez' }]);

    const [contact] = await contactsWithKey(waId);
    expect(contact).toMatchObject({
      first_name: 'María',
      last_name: 'José Pérez',
      phone_number: waId,
      source: 'whatsapp',
      business_id: tenant.businessId,
    });
    const row = await messageBy(m.id as string);
    expect(row).toMatchObject({
      business_id: tenant.businessId,
      contact_id: contact.id,
      channel: 'whatsapp',
      channel_id: channel.id,
      direction: 'inbound',
      sender_type: 'contact',
      type: 'text',
      text: 'Hola, ¿tienen stock?',
      status: 'RECEIVED',
      error: null,
      reply_to_id: null,
      metadata: {},
      sender_address: waId,
      recipient_address: '15550783881',
      created_at: '2023-11-14T22:13:20.000000Z',
    });
    const conv = await conversation(row.conversation_id);
    expect(conv).toMatchObject({
      contact_id: contact.id,
      channel: 'whatsapp',
      channel_id: channel.id,
      closed_at: null,
      message_count: 1,
      last_message_at: '2023-11-14T22:13:20.000000Z',
    });
    expect(await eventsOf(contact.id)).toEqual([]);
  });

  it('finds the contact stored without the Argentine 9 (54...) for a 549... sender, and aliases too', async () => {
    const waId = freshWaId();
    const stored = await insertContact(db(), tenant.businessId, {
      phone_number: `54${waId.slice(3)}`,
      first_name: 'Ana',
      last_name: '',
    });
    await deliver([inboundMessage(waId, 'text', { body: 'a' })], [{ waId, name: 'Someone Else' }]);
    expect((await contactsWithKey(waId)).map((c) => c.id)).toEqual([stored.id]);
    expect(
      await messageBy(
        (
          await db()
            .selectFrom('messages')
            .select('provider_message_id')
            .where('contact_id', '=', stored.id)
            .executeTakeFirstOrThrow()
        ).provider_message_id!,
      ),
    ).toMatchObject({ contact_id: stored.id });
    // A named contact keeps its name: no event.
    expect(
      (await db().selectFrom('contacts').select('first_name').where('id', '=', stored.id).executeTakeFirstOrThrow())
        .first_name,
    ).toBe('Ana');
    expect(await eventsOf(stored.id)).toEqual([]);

    const aliasOwner = await insertContact(db(), tenant.businessId, {
      phone_number: null,
      email: `alias${phoneSeq}@acme.test`,
    });
    const aliasWaId = freshWaId();
    await insertAliases(db(), {
      business_id: tenant.businessId,
      kind: 'phone',
      value: phoneKey(aliasWaId),
      contact_id: aliasOwner.id,
    });
    const m = inboundMessage(aliasWaId, 'text', { body: 'b' });
    await deliver([m]);
    expect((await messageBy(m.id as string)).contact_id).toBe(aliasOwner.id);
    expect(await contactsWithKey(aliasWaId)).toEqual([]);
  });

  it('finds the contact stored as 52... for a Mexican 521... sender', async () => {
    const stored = await insertContact(db(), tenant.businessId, { phone_number: '525512345678' });
    const m = inboundMessage('5215512345678', 'text', { body: 'hola' });
    await deliver([m], [{ waId: '5215512345678', name: 'Juan' }]);
    expect((await messageBy(m.id as string)).contact_id).toBe(stored.id);
    const count = await db()
      .selectFrom('contacts')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('business_id', '=', tenant.businessId)
      .where('phone_key', '=', phoneKey('525512345678'))
      .executeTakeFirstOrThrow();
    expect(Number(count.n)).toBe(1);
  });

  it('names an unnamed contact from the profile and records contact_field_changed (system, whatsapp)', async () => {
    const waId = freshWaId();
    const stored = await insertContact(db(), tenant.businessId, { phone_number: waId, first_name: '', last_name: '' });
    await deliver([inboundMessage(waId, 'text', { body: 'x' })], [{ waId, name: 'Lucía Gómez' }]);
    const row = await db().selectFrom('contacts').selectAll().where('id', '=', stored.id).executeTakeFirstOrThrow();
    expect([row.first_name, row.last_name]).toEqual(['Lucía', 'Gómez']);
    const events = await eventsOf(stored.id);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      type: 'contact_field_changed',
      actor_type: 'system',
      conversation_id: null,
      channel: null,
      data: {
        source: 'whatsapp',
        changes: [
          { field: 'first_name', custom: false, from: '', to: 'Lucía' },
          { field: 'last_name', custom: false, from: '', to: 'Gómez' },
        ],
      },
    });
    // Once named, a later profile name does not change it.
    await deliver([inboundMessage(waId, 'text', { body: 'y' })], [{ waId, name: 'Lu' }]);
    expect(
      (await db().selectFrom('contacts').select('first_name').where('id', '=', stored.id).executeTakeFirstOrThrow())
        .first_name,
    ).toBe('Lucía');
    expect(await eventsOf(stored.id)).toHaveLength(1);
  });

  it('stores a redelivered message once and counts it once', async () => {
    const waId = freshWaId();
    const m = inboundMessage(waId, 'text', { body: 'once' });
    await deliver([m, m], [{ waId, name: 'Rita' }]);
    await deliver([m], [{ waId, name: 'Rita' }]);
    await deliver([m], [{ waId, name: 'Rita' }]);
    const rows = await db()
      .selectFrom('messages')
      .selectAll()
      .where('provider_message_id', '=', m.id as string)
      .execute();
    expect(rows).toHaveLength(1);
    expect((await conversation(rows[0].conversation_id)).message_count).toBe(1);
    expect(await contactsWithKey(waId)).toHaveLength(1);
  });

  it('stores redeliveries that race each other once', async () => {
    const waId = freshWaId();
    const m = inboundMessage(waId, 'text', { body: 'race' });
    const body = notificationFor(channel, { contacts: [{ waId, name: 'Race' }], messages: [m] });
    const answers = await Promise.all([1, 2, 3].map(() => post(body)));
    expect(answers.map((a) => a.statusCode)).toEqual([200, 200, 200]);
    const rows = await db()
      .selectFrom('messages')
      .selectAll()
      .where('provider_message_id', '=', m.id as string)
      .execute();
    expect(rows).toHaveLength(1);
    expect((await conversation(rows[0].conversation_id)).message_count).toBe(1);
    expect(await contactsWithKey(waId)).toHaveLength(1);
  });

  it('puts several messages of one sender in one conversation, in one notification', async () => {
    const waId = freshWaId();
    const a = inboundMessage(waId, 'text', { body: '1' }, { timestamp: '1700000001' });
    const b = inboundMessage(waId, 'text', { body: '2' }, { timestamp: '1700000002' });
    await deliver([a, b], [{ waId, name: 'Two' }]);
    const [ra, rb] = [await messageBy(a.id as string), await messageBy(b.id as string)];
    expect(ra.conversation_id).toBe(rb.conversation_id);
    expect(await conversation(ra.conversation_id)).toMatchObject({
      message_count: 2,
      last_message_at: '2023-11-14T22:13:22.000000Z',
    });
  });

  it('reopens a closed conversation with conversation_unarchived (system, inbound_message)', async () => {
    const waId = freshWaId();
    const contact = await insertContact(db(), tenant.businessId, { phone_number: waId });
    const closed = await insertConversation(db(), tenant.businessId, contact.id, {
      channel_id: channel.id,
      closed_at: '2026-01-01T00:00:00.000000Z',
    });
    const old = await insertMessage(db(), tenant.businessId, closed, {
      channel_id: channel.id,
      provider_message_id: `wamid.old${phoneSeq}`,
    });
    // A redelivery of a message already stored does not reopen it.
    await deliver([inboundMessage(waId, 'text', { body: 'hello' }, { id: old.provider_message_id })]);
    expect((await conversation(closed.id)).closed_at).not.toBeNull();

    const m = inboundMessage(waId, 'text', { body: 'back again' });
    await deliver([m]);
    expect((await messageBy(m.id as string)).conversation_id).toBe(closed.id);
    expect(await conversation(closed.id)).toMatchObject({ closed_at: null, message_count: 2 });
    const events = await eventsOf(contact.id);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      type: 'conversation_unarchived',
      conversation_id: closed.id,
      channel: 'whatsapp',
      actor_type: 'system',
      data: { origin: 'inbound_message' },
    });
  });

  it('continues an imported conversation without channel id, binding it to the channel', async () => {
    const waId = freshWaId();
    const contact = await insertContact(db(), tenant.businessId, { phone_number: waId });
    const imported = await insertConversation(db(), tenant.businessId, contact.id, { channel_id: null });
    const m = inboundMessage(waId, 'text', { body: 'continuing' });
    await deliver([m]);
    expect((await messageBy(m.id as string)).conversation_id).toBe(imported.id);
    expect((await conversation(imported.id)).channel_id).toBe(channel.id);
  });

  it('keeps businesses apart: a sender known in another business is a new contact here', async () => {
    const waId = freshWaId();
    const foreign = await insertContact(db(), other.businessId, { phone_number: waId });
    const m = inboundMessage(waId, 'text', { body: 'x' });
    await deliver([m], [{ waId, name: 'New Here' }]);
    const row = await messageBy(m.id as string);
    expect(row.contact_id).not.toBe(foreign.id);
    expect(row.business_id).toBe(tenant.businessId);
  });

  it('resolves reply_to_id from the context when the replied message is known', async () => {
    const waId = freshWaId();
    const first = inboundMessage(waId, 'text', { body: 'first' });
    await deliver([first]);
    const reply = inboundMessage(waId, 'text', { body: 'reply' }, { context: { from: '15550783881', id: first.id } });
    const orphan = inboundMessage(
      waId,
      'text',
      { body: 'orphan' },
      { context: { from: '15550783881', id: 'wamid.unknown' } },
    );
    await deliver([reply, orphan]);
    expect((await messageBy(reply.id as string)).reply_to_id).toBe((await messageBy(first.id as string)).id);
    const orphanRow = await messageBy(orphan.id as string);
    expect(orphanRow.reply_to_id).toBeNull();
    expect(orphanRow.metadata).toEqual({ reply_to_provider_message_id: 'wamid.unknown' });
  });

  it('does not mix up the same provider id on another channel', async () => {
    const second = await createWhatsAppChannel(t.app, tenant.businessId);
    const waId = freshWaId();
    const id = `wamid.shared${newId()}`;
    await deliver([inboundMessage(waId, 'text', { body: 'a' }, { id })]);
    const res = await postSigned(
      t.app,
      notificationFor(second, { messages: [inboundMessage(waId, 'text', { body: 'b' }, { id })] }),
      second.appSecret,
    );
    expect(res.statusCode).toBe(200);
    const rows = await db()
      .selectFrom('messages')
      .select(['channel_id', 'conversation_id'])
      .where('provider_message_id', '=', id)
      .execute();
    expect(rows.map((r) => r.channel_id).sort()).toEqual([channel.id, second.id].sort());
    expect(rows[0].conversation_id).not.toBe(rows[1].conversation_id);
  });
});
