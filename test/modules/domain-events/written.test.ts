import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  contactsChanged,
  conversationsChanged,
  messagesCreated,
} from '../../../src/modules/domain-events/domain-events.writer.ts';
import { newId } from '../../../src/lib/ids.ts';
import { insertContact, insertConversation, insertMessage } from '../../helpers/factories.ts';
import { inboundMessage, statusReceipt } from '../../helpers/fake-graph-api.ts';
import { adminHeaders, createTenant, type Tenant } from '../../helpers/tenants.ts';
import { buildTestApp, type TestApp } from '../../helpers/test-app.ts';
import { createWhatsAppChannel, notificationFor, postSigned, type TestChannel } from '../inbound/whatsapp-helpers.ts';

// Domain events are written in the transaction that causes them: by every path that changes a
// message, a conversation or a contact, and not at all when that transaction rolls back.

let t: TestApp;
let tenant: Tenant;
let channel: TestChannel;

beforeAll(async () => {
  t = await buildTestApp();
  tenant = await createTenant(t.app);
  channel = await createWhatsAppChannel(t.app, tenant.businessId);
});
afterAll(async () => {
  await t.close();
});

const db = () => t.database.db;

/** The domain events about `subjectId`, in id order, with the subscribers they are pending for. */
async function eventsOf(subjectId: string) {
  const rows = await db()
    .selectFrom('domain_events')
    .select(['id', 'business_id', 'type', 'conversation_id', 'subject_id', 'data'])
    .where('subject_id', '=', subjectId)
    .orderBy('id')
    .execute();
  return rows.map(({ id: _, ...row }) => row);
}

const countOf = async (table: 'domain_events' | 'domain_event_pending') =>
  Number(
    (
      await db()
        .selectFrom(table)
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  );

describe('domain events are written with their cause', () => {
  it('an inbound message writes message_created (and contact_changed for its new sender); a receipt message_status_changed', async () => {
    const waId = '5491100001111';
    const wamid = `wamid.${newId()}`;
    const res = await postSigned(
      t.app,
      notificationFor(channel, {
        contacts: [{ waId, name: 'Rita' }],
        messages: [inboundMessage(waId, 'text', { body: 'hi' }, { id: wamid })],
      }),
      channel.appSecret,
    );
    expect(res.statusCode, res.body).toBe(200);
    const message = await db()
      .selectFrom('messages')
      .selectAll()
      .where('provider_message_id', '=', wamid)
      .executeTakeFirstOrThrow();
    expect(await eventsOf(message.id)).toEqual([
      {
        business_id: tenant.businessId,
        type: 'message_created',
        conversation_id: message.conversation_id,
        subject_id: message.id,
        data: { contact_id: message.contact_id, direction: 'inbound', sender_type: 'contact', status: 'RECEIVED' },
      },
    ]);
    expect(await eventsOf(message.contact_id)).toEqual([
      {
        business_id: tenant.businessId,
        type: 'contact_changed',
        conversation_id: null,
        subject_id: message.contact_id,
        data: { change: 'created' },
      },
    ]);

    const providerId = `wamid.${newId()}`;
    const sent = await insertMessage(
      db(),
      tenant.businessId,
      { id: message.conversation_id, contact_id: message.contact_id, channel: 'whatsapp' },
      {
        direction: 'outbound',
        sender_type: 'api',
        status: 'SENT',
        channel_id: channel.id,
        provider_message_id: providerId,
      },
    );
    const receipt = await postSigned(
      t.app,
      notificationFor(channel, {
        statuses: [statusReceipt(providerId, 'delivered', waId), statusReceipt(providerId, 'read', waId)],
      }),
      channel.appSecret,
    );
    expect(receipt.statusCode).toBe(200);
    // A receipt that does not move the status (read again) writes nothing.
    await postSigned(
      t.app,
      notificationFor(channel, { statuses: [statusReceipt(providerId, 'read', waId)] }),
      channel.appSecret,
    );
    const changes = await eventsOf(sent.id);
    expect(changes.map((e) => [e.type, e.conversation_id, e.data.status])).toEqual([
      ['message_status_changed', message.conversation_id, 'DELIVERED'],
      ['message_status_changed', message.conversation_id, 'READ'],
    ]);
  });

  it('a send through the API writes message_created', async () => {
    const contact = await insertContact(db(), tenant.businessId, { phone_number: '5491100003333' });
    const conversation = await insertConversation(db(), tenant.businessId, contact.id);
    await db().updateTable('conversations').set({ channel_id: channel.id }).where('id', '=', conversation.id).execute();
    await insertMessage(db(), tenant.businessId, conversation, { channel_id: channel.id });
    const sent = await t.app.inject({
      method: 'POST',
      url: '/external/v2/messages/send',
      headers: tenant.headers,
      payload: {
        to: '+5491100003333',
        from: 'whatsapp',
        type: 'text',
        content: { text: 'out' },
        channel_uuid: channel.id,
      },
    });
    expect(sent.statusCode, sent.body).toBe(200);
    const id = sent.json().message.uuid;
    expect(await eventsOf(id)).toEqual([
      {
        business_id: tenant.businessId,
        type: 'message_created',
        conversation_id: conversation.id,
        subject_id: id,
        data: { contact_id: contact.id, direction: 'outbound', sender_type: 'api', status: 'PENDING' },
      },
    ]);
  });

  it('conversation operations write conversation_changed with what changed', async () => {
    const contact = await insertContact(db(), tenant.businessId);
    const conversation = await insertConversation(db(), tenant.businessId, contact.id);
    const op = (path: string, payload: object, method: 'POST' | 'PUT' = 'POST') =>
      t.app.inject({
        method,
        url: `/admin/v1/businesses/${tenant.businessId}/conversations/${conversation.id}/${path}`,
        headers: adminHeaders,
        payload,
      });
    expect((await op('manual-control', { active: true })).statusCode).toBe(200);
    expect((await op('resolve', {})).statusCode).toBe(200);
    expect((await op('archive', {})).statusCode).toBe(200);
    expect((await op('archive', {})).statusCode).toBe(200); // no change: no event
    const agent = await db()
      .insertInto('agents')
      .values({ business_id: tenant.businessId, id: newId(), name: 'Helper' })
      .returning('id')
      .executeTakeFirstOrThrow();
    expect((await op('agent', { agent_id: agent.id }, 'PUT')).statusCode).toBe(200);
    const events = await eventsOf(conversation.id);
    expect(events.every((e) => e.type === 'conversation_changed' && e.conversation_id === conversation.id)).toBe(true);
    expect(events.map((e) => [e.data.change, e.data.event])).toEqual([
      ['manual_control', 'manual_control_activated'],
      ['resolution', 'conversation_resolved'],
      ['archive', 'conversation_archived'],
      ['assignment', 'agent_assigned'],
    ]);
  });

  it('contact creation, update, merge and deletion write contact_changed', async () => {
    const create = (payload: object) =>
      t.app.inject({ method: 'POST', url: '/external/v2/contacts', headers: tenant.headers, payload });
    const a = (await create({ first_name: 'Ann', email: 'ann@example.com' })).json().contact.id as string;
    const b = (await create({ first_name: 'Bob', email: 'bob@example.com' })).json().contact.id as string;
    const c = (await create({ first_name: 'Cid', email: 'cid@example.com' })).json().contact.id as string;
    const patched = await t.app.inject({
      method: 'PATCH',
      url: `/external/v2/contacts/${a}`,
      headers: tenant.headers,
      payload: { name: 'Ann Lee' },
    });
    expect(patched.statusCode, patched.body).toBe(200);
    const merged = await t.app.inject({
      method: 'POST',
      url: '/external/v2/contacts/merge',
      headers: tenant.headers,
      payload: { survivor_id: a, loser_id: b },
    });
    expect(merged.statusCode, merged.body).toBe(200);
    expect(
      (await t.app.inject({ method: 'DELETE', url: `/external/v2/contacts/${c}`, headers: tenant.headers })).statusCode,
    ).toBe(200);
    const changes = async (id: string) => (await eventsOf(id)).map((e) => e.data.change);
    // The merge changed no field of the survivor (emails become aliases): no update of its own.
    expect(await changes(a)).toEqual(['created', 'updated', 'merged']);
    expect(await changes(b)).toEqual(['created', 'merged']);
    expect(await changes(c)).toEqual(['created', 'deleted']);
    const [update] = (await eventsOf(a)).slice(1, 2);
    expect(update.data).toEqual({ change: 'updated', source: 'api', fields: ['last_name'] });
    expect((await eventsOf(b))[1].data).toEqual({ change: 'merged', survivor_id: a, loser_id: b });
  });

  it('a transaction that rolls back leaves no event and nothing pending', async () => {
    const [events, pending] = [await countOf('domain_events'), await countOf('domain_event_pending')];
    const contact = await insertContact(db(), tenant.businessId);
    const conversation = await insertConversation(db(), tenant.businessId, contact.id);
    await expect(
      db()
        .transaction()
        .execute(async (trx) => {
          const message = await insertMessage(trx, tenant.businessId, conversation);
          await messagesCreated(trx, tenant.businessId, [message.id]);
          await conversationsChanged(trx, tenant.businessId, [{ conversationId: conversation.id, change: 'archive' }]);
          await contactsChanged(trx, tenant.businessId, [contact.id], 'updated');
          expect(
            await trx.selectFrom('domain_events').select('id').where('subject_id', '=', message.id).execute(),
          ).toHaveLength(1);
          throw new Error('rolled back');
        }),
    ).rejects.toThrow('rolled back');
    expect([await countOf('domain_events'), await countOf('domain_event_pending')]).toEqual([events, pending]);

    // Read in its own transaction: once it commits, the dispatcher may hand the event to a subscriber
    // and take its pending row before the test looks.
    const { message, pendingFor } = await db()
      .transaction()
      .execute(async (trx) => {
        const row = await insertMessage(trx, tenant.businessId, conversation);
        await messagesCreated(trx, tenant.businessId, [row.id]);
        // Pending for the subscribers that take message_created: the AI agent's runs and its timers, the
        // live stream, the mirroring of customers' messages and the webhook deliveries.
        const pending = await trx
          .selectFrom('domain_event_pending as p')
          .innerJoin('domain_events as e', 'e.id', 'p.event_id')
          .select('p.subscriber')
          .where('e.subject_id', '=', row.id)
          .orderBy('p.subscriber')
          .execute();
        return { message: row, pendingFor: pending };
      });
    expect((await eventsOf(message.id)).map((e) => e.type)).toEqual(['message_created']);
    expect(pendingFor).toEqual([
      { subscriber: 'ai_agent' },
      { subscriber: 'ai_timers' },
      { subscriber: 'live-stream' },
      { subscriber: 'mirroring' },
      { subscriber: 'webhooks' },
    ]);
  });
});
