import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { buildApp } from '../../../src/app.ts';
import { outboxRepository } from '../../../src/jobs/outbox.repository.ts';
import { messageStatusRepository } from '../../../src/modules/messages/message-status.repository.ts';
import { newId } from '../../../src/lib/ids.ts';
import { insertContact, insertConversation, insertMessage } from '../../helpers/factories.ts';
import { signedNotification, statusReceipt } from '../../helpers/fake-graph-api.ts';
import { createTenant, type Tenant } from '../../helpers/tenants.ts';
import { engine, type TestApp } from '../../helpers/test-app.ts';
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
let conversation: { id: string; contact_id: string; channel: string };
const recipient = '5491155667788';

beforeAll(async () => {
  ({ t, tenant, channel, post, notify } = await withWhatsAppChannel());
  const contact = await insertContact(t.database.db, tenant.businessId, { phone_number: recipient });
  conversation = await insertConversation(t.database.db, tenant.businessId, contact.id, { channel_id: channel.id });
});
afterAll(() => t.close());

const db = () => t.database.db;

/** An outbound message the provider accepted under a fresh wamid. */
async function outbound(status = 'SENT', onChannel = channel) {
  const providerId = `wamid.${newId()}`;
  const row = await insertMessage(db(), onChannel.businessId, conversation, {
    direction: 'outbound',
    sender_type: 'api',
    status,
    channel_id: onChannel.id,
    provider_message_id: providerId,
    text: 'out',
  });
  return { id: row.id, providerId };
}
async function receipts(...statuses: Record<string, unknown>[]) {
  const res = await notify({ statuses });
  expect(res.statusCode, res.body).toBe(200);
}
const stored = (id: string) =>
  db()
    .selectFrom('messages')
    .select(['status', 'status_at', 'error', 'metadata'])
    .where('id', '=', id)
    .executeTakeFirstOrThrow();

describe('delivery receipts', () => {
  it('moves a message through SENT, DELIVERED, READ with the receipt times', async () => {
    const m = await outbound('PENDING');
    await receipts(statusReceipt(m.providerId, 'sent', recipient, { timestamp: '1700000010' }));
    expect(await stored(m.id)).toMatchObject({ status: 'SENT', status_at: '2023-11-14T22:13:30.000000Z', error: null });
    await receipts(statusReceipt(m.providerId, 'delivered', recipient, { timestamp: '1700000011' }));
    expect(await stored(m.id)).toMatchObject({ status: 'DELIVERED', status_at: '2023-11-14T22:13:31.000000Z' });
    await receipts(statusReceipt(m.providerId, 'read', recipient, { timestamp: '1700000012' }));
    expect(await stored(m.id)).toMatchObject({ status: 'READ', status_at: '2023-11-14T22:13:32.000000Z' });
  });

  it('never moves backwards: read before delivered stays READ, late sent stays too', async () => {
    const m = await outbound();
    await receipts(statusReceipt(m.providerId, 'read', recipient, { timestamp: '1700000022' }));
    await receipts(
      statusReceipt(m.providerId, 'delivered', recipient, { timestamp: '1700000021' }),
      statusReceipt(m.providerId, 'sent', recipient, { timestamp: '1700000020' }),
    );
    expect(await stored(m.id)).toMatchObject({ status: 'READ', status_at: '2023-11-14T22:13:42.000000Z' });
    // A failed receipt after the message was read contradicts it and is ignored.
    await receipts(
      statusReceipt(m.providerId, 'failed', recipient, { errors: [{ code: 131026, title: 'Message undeliverable' }] }),
    );
    expect(await stored(m.id)).toMatchObject({ status: 'READ', error: null });
  });

  it('applies receipts in the order of one notification', async () => {
    const m = await outbound();
    await receipts(
      statusReceipt(m.providerId, 'delivered', recipient, { timestamp: '1700000031' }),
      statusReceipt(m.providerId, 'read', recipient, { timestamp: '1700000032' }),
    );
    expect((await stored(m.id)).status).toBe('READ');
  });

  it('records a failure with the error detail, and a failed message stays ERROR', async () => {
    const m = await outbound();
    await receipts(
      statusReceipt(m.providerId, 'failed', recipient, {
        timestamp: '1700000040',
        errors: [
          {
            code: 131026,
            title: 'Message undeliverable',
            message: 'Message undeliverable',
            error_data: { details: 'Message could not be delivered: recipient is not on WhatsApp.' },
          },
        ],
      }),
    );
    expect(await stored(m.id)).toMatchObject({
      status: 'ERROR',
      status_at: '2023-11-14T22:14:00.000000Z',
      error: '131026: Message undeliverable - Message could not be delivered: recipient is not on WhatsApp.',
    });
    await receipts(statusReceipt(m.providerId, 'delivered', recipient), statusReceipt(m.providerId, 'read', recipient));
    expect((await stored(m.id)).status).toBe('ERROR');
  });

  it('records a failure without errors with a generic detail', async () => {
    const m = await outbound('PENDING');
    await receipts(statusReceipt(m.providerId, 'failed', recipient));
    const row = await stored(m.id);
    expect(row.status).toBe('ERROR');
    expect(row.error).toMatch(/^failed/);
  });

  it('ignores receipts for unknown ids and for inbound messages, storing nothing', async () => {
    const before = await db().selectFrom('messages').select(['id', 'status', 'status_at']).orderBy('id').execute();
    await receipts(
      statusReceipt('wamid.never-sent', 'delivered', recipient),
      statusReceipt('wamid.never-sent-2', 'failed', recipient),
    );
    expect(await db().selectFrom('messages').select(['id', 'status', 'status_at']).orderBy('id').execute()).toEqual(
      before,
    );

    const inbound = await insertMessage(db(), tenant.businessId, conversation, {
      channel_id: channel.id,
      provider_message_id: `wamid.in${newId()}`,
    });
    await receipts(statusReceipt(inbound.provider_message_id!, 'read', recipient));
    expect((await stored(inbound.id)).status).toBe('RECEIVED');
  });

  it('only touches messages of the channel the receipt came from', async () => {
    const otherTenant = await createTenant(t.app, 'Other');
    const otherChannel = await createWhatsAppChannel(t.app, otherTenant.businessId);
    const contact = await insertContact(db(), otherTenant.businessId, { phone_number: recipient });
    const conv = await insertConversation(db(), otherTenant.businessId, contact.id, { channel_id: otherChannel.id });
    const providerId = `wamid.${newId()}`;
    const foreign = await insertMessage(db(), otherTenant.businessId, conv, {
      direction: 'outbound',
      sender_type: 'api',
      status: 'SENT',
      channel_id: otherChannel.id,
      provider_message_id: providerId,
    });
    await receipts(statusReceipt(providerId, 'read', recipient));
    expect((await stored(foreign.id)).status).toBe('SENT');
  });

  it('handles messages and receipts of one notification together', async () => {
    const m = await outbound();
    const inboundId = `wamid.${newId()}`;
    const body = notificationFor(channel, {
      contacts: [{ waId: recipient, name: 'Both' }],
      messages: [{ from: recipient, id: inboundId, timestamp: '1700000050', type: 'text', text: { body: 'got it' } }],
      statuses: [statusReceipt(m.providerId, 'read', recipient)],
    });
    expect((await post(body)).statusCode).toBe(200);
    expect((await stored(m.id)).status).toBe('READ');
    const reply = await db()
      .selectFrom('messages')
      .selectAll()
      .where('provider_message_id', '=', inboundId)
      .executeTakeFirstOrThrow();
    expect(reply).toMatchObject({
      conversation_id: conversation.id,
      contact_id: conversation.contact_id,
      text: 'got it',
      status: 'RECEIVED',
    });
  });
});

describe('receipts found by the echoed reference (biz_opaque_callback_data)', () => {
  /** An outbound message whose send's answer was not stored: no provider id. */
  async function unanswered(
    status: 'PENDING' | 'ERROR',
    onChannel = channel,
    businessId = tenant.businessId,
    conv = conversation,
  ) {
    const row = await insertMessage(db(), businessId, conv, {
      direction: 'outbound',
      sender_type: 'api',
      status,
      channel_id: onChannel.id,
      provider_message_id: null,
      text: 'out',
      send_attempts: 1,
      error: status === 'ERROR' ? 'outcome unknown: network_error: timeout; not resent' : null,
    });
    return row.id;
  }
  const withProviderId = (id: string) =>
    db()
      .selectFrom('messages')
      .select(['status', 'error', 'provider_message_id'])
      .where('id', '=', id)
      .executeTakeFirstOrThrow();

  it('recovers a send whose outcome was unknown: the receipt proves the provider had it', async () => {
    const id = await unanswered('ERROR');
    const wamid = `wamid.${newId()}`;
    await receipts(
      statusReceipt(wamid, 'delivered', recipient, { biz_opaque_callback_data: id, timestamp: '1700000100' }),
    );
    expect(await withProviderId(id)).toEqual({ status: 'DELIVERED', error: null, provider_message_id: wamid });
    // Later receipts find it by its provider id.
    await receipts(statusReceipt(wamid, 'read', recipient, { biz_opaque_callback_data: id }));
    expect((await stored(id)).status).toBe('READ');
  });

  it('records the provider id a receipt names, whatever its bytes', async () => {
    // A wamid whose bytes read as a binary of a length past the int range once made reading its
    // key, in the update that records it, fail the notification.
    const id = await unanswered('ERROR');
    const wamid = 'wamid.01a1a5a5-3a40-7291-b484-90677ad21886';
    await receipts(statusReceipt(wamid, 'delivered', recipient, { biz_opaque_callback_data: id }));
    expect(await withProviderId(id)).toEqual({ status: 'DELIVERED', error: null, provider_message_id: wamid });
  });

  it("applies a receipt that arrives before the send's answer is stored", async () => {
    const id = await unanswered('PENDING');
    const wamid = `wamid.${newId()}`;
    await receipts(statusReceipt(wamid, 'sent', recipient, { biz_opaque_callback_data: id, timestamp: '1700000200' }));
    expect(await withProviderId(id)).toEqual({ status: 'SENT', error: null, provider_message_id: wamid });
    expect((await stored(id)).status_at).toBe('2023-11-14T22:16:40.000000Z');
  });

  it("records a failed receipt's error on a send whose outcome was unknown", async () => {
    const id = await unanswered('ERROR');
    const wamid = `wamid.${newId()}`;
    await receipts(
      statusReceipt(wamid, 'failed', recipient, {
        biz_opaque_callback_data: id,
        errors: [{ code: 131026, title: 'Message undeliverable' }],
      }),
    );
    const row = await withProviderId(id);
    expect(row).toMatchObject({ status: 'ERROR', provider_message_id: wamid });
    expect(row.error).toContain('131026');
  });

  it("touches only an outbound message of the receipt's channel without a provider id", async () => {
    const answered = await outbound('SENT');
    const wamid = `wamid.${newId()}`;
    await receipts(statusReceipt(wamid, 'read', recipient, { biz_opaque_callback_data: answered.id }));
    expect(await withProviderId(answered.id)).toMatchObject({
      status: 'SENT',
      provider_message_id: answered.providerId,
    });

    const inbound = await insertMessage(db(), tenant.businessId, conversation, {
      channel_id: channel.id,
      provider_message_id: null,
    });
    await receipts(statusReceipt(`wamid.${newId()}`, 'read', recipient, { biz_opaque_callback_data: inbound.id }));
    expect(await withProviderId(inbound.id)).toMatchObject({ status: 'RECEIVED', provider_message_id: null });

    const otherChannel = await createWhatsAppChannel(t.app, tenant.businessId);
    const elsewhere = await unanswered('ERROR', otherChannel);
    await receipts(statusReceipt(`wamid.${newId()}`, 'delivered', recipient, { biz_opaque_callback_data: elsewhere }));
    expect(await withProviderId(elsewhere)).toMatchObject({ status: 'ERROR', provider_message_id: null });

    const otherTenant = await createTenant(t.app, 'Other business');
    const foreignChannel = await createWhatsAppChannel(t.app, otherTenant.businessId);
    const contact = await insertContact(db(), otherTenant.businessId, { phone_number: recipient });
    const conv = await insertConversation(db(), otherTenant.businessId, contact.id, { channel_id: foreignChannel.id });
    const foreign = await unanswered('ERROR', foreignChannel, otherTenant.businessId, conv);
    await receipts(statusReceipt(`wamid.${newId()}`, 'delivered', recipient, { biz_opaque_callback_data: foreign }));
    expect(await withProviderId(foreign)).toMatchObject({ status: 'ERROR', provider_message_id: null });
  });

  it('leaves a message that never went to the provider alone: no receipt can be its', async () => {
    const queued = await insertMessage(db(), tenant.businessId, conversation, {
      direction: 'outbound',
      sender_type: 'api',
      status: 'PENDING',
      channel_id: channel.id,
      provider_message_id: null,
      text: 'queued',
    });
    await receipts(statusReceipt(`wamid.${newId()}`, 'read', recipient, { biz_opaque_callback_data: queued.id }));
    expect(await withProviderId(queued.id)).toEqual({ status: 'PENDING', error: null, provider_message_id: null });
  });

  it("changes nothing when the receipt's wamid is another message's, and applies the rest of the notification", async () => {
    const held = await outbound('DELIVERED');
    const id = await unanswered('ERROR');
    const other = await outbound('SENT');
    await receipts(
      statusReceipt(held.providerId, 'sent', recipient, { biz_opaque_callback_data: id }),
      statusReceipt(other.providerId, 'read', recipient),
    );
    expect(await withProviderId(id)).toMatchObject({ status: 'ERROR', provider_message_id: null });
    expect(await withProviderId(held.id)).toMatchObject({ status: 'DELIVERED', provider_message_id: held.providerId });
    expect((await stored(other.id)).status).toBe('READ');
  });

  it('reports a receipt for a second message of one send: the provider carried out a call that was retried', async () => {
    const sent = await outbound('SENT');
    const second = `wamid.${newId()}`;
    const { payload, headers } = signedNotification(
      notificationFor(channel, {
        statuses: [statusReceipt(second, 'delivered', recipient, { biz_opaque_callback_data: sent.id })],
      }),
      channel.appSecret,
    );
    const summary = await t.app.services.inbound.receive('whatsapp_cloud', Buffer.from(payload), headers);
    expect(summary.duplicateSends).toEqual([{ messageId: sent.id, providerMessageIds: [sent.providerId, second] }]);
    expect(summary.unknownStatusIds).toEqual([]);
    expect(await withProviderId(sent.id)).toMatchObject({ status: 'SENT', provider_message_id: sent.providerId });
  });

  it('ignores a reference that is no message id', async () => {
    for (const reference of ['campaign-7', '', 'x'.repeat(512), '01900000-0000-7000-8000-000000000000']) {
      await receipts(
        statusReceipt(`wamid.${newId()}`, 'delivered', recipient, { biz_opaque_callback_data: reference }),
      );
    }
  });
});

// The interleavings below need a second connection: the send worker, or a second process sharing
// the database. Each test wraps a repository call to commit the other side's real statement at
// the exact point of the race (the statements themselves are not replaced).
describe.runIf(engine === 'postgres')("receipts racing the send's answer (PostgreSQL)", () => {
  it("applies a receipt when the send's answer is stored between its two lookups", async () => {
    const row = await insertMessage(db(), tenant.businessId, conversation, {
      direction: 'outbound',
      sender_type: 'api',
      status: 'PENDING',
      channel_id: channel.id,
      provider_message_id: null,
      text: 'out',
      send_attempts: 1,
      provider_call_at: new Date().toISOString(),
    });
    const jobId = newId();
    await db()
      .insertInto('outbox')
      .values({
        business_id: tenant.businessId,
        id: jobId,
        kind: 'send',
        ref_id: row.id,
        state: 'running',
        attempts: 1,
        run_at: new Date().toISOString(),
        locked_until: null,
        last_error: null,
        created_at: new Date().toISOString(),
      })
      .execute();
    const wamid = `wamid.${newId()}`;
    const moveStatus = messageStatusRepository.moveStatus.bind(messageStatusRepository);
    let answered = false;
    const hook = vi.spyOn(messageStatusRepository, 'moveStatus').mockImplementation(async (...args) => {
      const result = await moveStatus(...args);
      if (!answered) {
        answered = true;
        await t.database.db.transaction().execute(async (trx) => {
          await messageStatusRepository.markSent(trx, [
            { businessId: tenant.businessId, id: row.id, providerMessageId: wamid },
          ]);
          await outboxRepository.completeMany(trx, [{ businessId: tenant.businessId, id: jobId }]);
        });
      }
      return result;
    });
    try {
      await receipts(statusReceipt(wamid, 'delivered', recipient, { biz_opaque_callback_data: row.id }));
    } finally {
      hook.mockRestore();
    }
    expect(
      await db()
        .selectFrom('messages')
        .select(['status', 'provider_message_id'])
        .where('id', '=', row.id)
        .executeTakeFirstOrThrow(),
    ).toEqual({ status: 'DELIVERED', provider_message_id: wamid });
  });

  it('applies both of two receipts of one lost answer handled by two processes at once', async () => {
    const row = await insertMessage(db(), tenant.businessId, conversation, {
      direction: 'outbound',
      sender_type: 'api',
      status: 'ERROR',
      channel_id: channel.id,
      provider_message_id: null,
      text: 'out',
      send_attempts: 1,
      error: 'outcome unknown: network_error: timeout; not resent',
    });
    const wamid = `wamid.${newId()}`;
    const other = await buildApp(t.config, { database: t.database, logger: false, workers: false });
    await other.ready();
    const recordByReference = messageStatusRepository.recordByReference.bind(messageStatusRepository);
    let second: Promise<{ statusCode: number }> | undefined;
    const hook = vi.spyOn(messageStatusRepository, 'recordByReference').mockImplementation(async (...args) => {
      const result = await recordByReference(...args);
      if (!second) {
        // This process has recorded "sent", not committed; the other receives "delivered" now.
        second = postSigned(
          other,
          notificationFor(channel, {
            statuses: [statusReceipt(wamid, 'delivered', recipient, { biz_opaque_callback_data: row.id })],
          }),
          channel.appSecret,
        );
        await new Promise((resolve) => setTimeout(resolve, 300));
      }
      return result;
    });
    try {
      await receipts(statusReceipt(wamid, 'sent', recipient, { biz_opaque_callback_data: row.id }));
      expect((await second!).statusCode).toBe(200);
    } finally {
      hook.mockRestore();
      await other.close();
    }
    expect((await stored(row.id)).status).toBe('DELIVERED');
  });
});
