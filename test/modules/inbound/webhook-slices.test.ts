import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { sql } from 'kysely';
import { sliceSizes } from '../../../src/db/slices.ts';
import { newId } from '../../../src/lib/ids.ts';
import { messagesRepository } from '../../../src/modules/messages/messages.repository.ts';
import { insertContact, insertConversation, insertMessage } from '../../helpers/factories.ts';
import { statusReceipt } from '../../helpers/fake-graph-api.ts';
import { createTenant, type Tenant } from '../../helpers/tenants.ts';
import { buildTestApp, engine, type TestApp } from '../../helpers/test-app.ts';
import { createWhatsAppChannel, notificationFor, postSigned, type TestChannel } from './whatsapp-helpers.ts';

// A notification larger than one slice (src/db/slices.ts) is written in slices, one transaction
// each, so other callers of the database get their turn between two of them; it is answered once
// every slice has committed, and its redelivery stores nothing twice.

let t: TestApp;
let tenant: Tenant;
let channel: TestChannel;
const slice = sliceSizes(engine).inboundItems;

beforeAll(async () => {
  t = await buildTestApp();
  tenant = await createTenant(t.app);
  channel = await createWhatsAppChannel(t.app, tenant.businessId);
});
afterAll(() => t.close());

const db = () => t.database.db;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** `count` text messages from `senders` new senders, under ids that start with `tag`. */
function messagesOf(tag: string, count: number, senders: number) {
  const timestamp = String(Math.floor(Date.now() / 1000));
  return Array.from({ length: count }, (_, i) => ({
    from: `549116${tag.length}${String(i % senders).padStart(6, '0')}`,
    id: `wamid.${tag}.${i}`,
    timestamp,
    type: 'text',
    text: { body: `${tag} ${i}` },
  }));
}

async function storedCount(tag: string): Promise<number> {
  const row = await db()
    .selectFrom('messages')
    .select(sql<number>`count(*)::int`.as('n'))
    .where('business_id', '=', tenant.businessId)
    .where('provider_message_id', 'like', `wamid.${tag}.%`)
    .executeTakeFirstOrThrow();
  return row.n;
}

describe('a notification of many slices', () => {
  it('lets a request in between two slices: it is answered while the notification is still being written', async () => {
    const contact = await insertContact(db(), tenant.businessId, { email: 'reader@example.com' });
    const total = slice * 8;
    const messages = messagesOf('interleave', total, 40);
    let answered = false;
    const notification = postSigned(t.app, notificationFor(channel, { messages }), channel.appSecret).then((res) => {
      answered = true;
      return res;
    });
    // Reads while it is written: each one the request of another caller, a few ms apart.
    const seen: number[] = [];
    while (!answered) {
      const read = await t.app.inject({
        method: 'GET',
        url: `/external/v2/contacts/${contact.id}`,
        headers: tenant.headers,
      });
      expect(read.statusCode).toBe(200);
      if (!answered) seen.push(await storedCount('interleave'));
      await sleep(2);
    }
    expect((await notification).statusCode).toBe(200);
    expect(await storedCount('interleave')).toBe(total);
    // Some reads ran between two slices: part of the notification was committed, not all of it.
    const between = seen.filter((n) => n > 0 && n < total);
    expect(between.length, `stored counts seen while it was written: ${seen.join(' ')}`).toBeGreaterThan(0);
    // Each slice commits whole: never a part of one.
    expect(between.every((n) => n % slice === 0)).toBe(true);
  });

  it('stored in part when a slice fails: not answered 200, and the redelivery stores the rest once', async () => {
    const total = slice * 3;
    const messages = messagesOf('retry', total, 25);
    const body = notificationFor(channel, { messages });
    // The second slice's messages fail to be written, as in a crash between two slices.
    const insert = messagesRepository.insertMessages;
    let calls = 0;
    const spy = vi.spyOn(messagesRepository, 'insertMessages').mockImplementation((...args) => {
      calls += 1;
      if (calls === 2) return Promise.reject(new Error('the database went away'));
      return insert(...args);
    });
    try {
      const failed = await postSigned(t.app, body, channel.appSecret);
      expect(failed.statusCode).toBe(500);
    } finally {
      spy.mockRestore();
    }
    expect(await storedCount('retry')).toBe(slice);

    const retried = await postSigned(t.app, body, channel.appSecret);
    expect(retried.statusCode).toBe(200);
    const rows = await db()
      .selectFrom('messages')
      .select('provider_message_id')
      .where('business_id', '=', tenant.businessId)
      .where('provider_message_id', 'like', 'wamid.retry.%')
      .execute();
    expect(rows).toHaveLength(total);
    expect(new Set(rows.map((r) => r.provider_message_id)).size).toBe(total);
    // One message_created per message, none for the redelivered ones.
    const events = await db()
      .selectFrom('domain_events')
      .select(sql<number>`count(*)::int`.as('n'))
      .where('business_id', '=', tenant.businessId)
      .where('type', '=', 'message_created')
      .where(
        'subject_id',
        'in',
        db()
          .selectFrom('messages')
          .select('id')
          .where('business_id', '=', tenant.businessId)
          .where('provider_message_id', 'like', 'wamid.retry.%'),
      )
      .executeTakeFirstOrThrow();
    expect(events.n).toBe(total);
  });

  it("applies receipts across slices in order: each message's status moves forward, its events in order", async () => {
    const recipient = '5491155667700';
    const contact = await insertContact(db(), tenant.businessId, { phone_number: recipient });
    const conversation = await insertConversation(db(), tenant.businessId, contact.id, { channel_id: channel.id });
    const sent = [];
    for (let i = 0; i < 5; i++) {
      const providerId = `wamid.${newId()}`;
      const row = await insertMessage(db(), tenant.businessId, conversation, {
        direction: 'outbound',
        sender_type: 'api',
        status: 'SENT',
        channel_id: channel.id,
        provider_message_id: providerId,
        text: `out ${i}`,
      });
      sent.push({ id: row.id, providerId });
    }
    // Receipts for unknown messages fill the slices, so that each message's delivered and read fall
    // in different slices.
    const unknown = (n: number) =>
      Array.from({ length: n }, (_, i) => statusReceipt(`wamid.unknown.${newId()}.${i}`, 'delivered', recipient));
    const statuses = [
      ...sent.map((m) => statusReceipt(m.providerId, 'delivered', recipient, { timestamp: '1700000101' })),
      ...unknown(slice * 2),
      ...sent.map((m) => statusReceipt(m.providerId, 'read', recipient, { timestamp: '1700000102' })),
    ];
    const res = await postSigned(t.app, notificationFor(channel, { statuses }), channel.appSecret);
    expect(res.statusCode, res.body).toBe(200);

    const rows = await db()
      .selectFrom('messages')
      .select(['id', 'status'])
      .where(
        'id',
        'in',
        sent.map((m) => m.id),
      )
      .execute();
    expect(rows.map((r) => r.status)).toEqual(sent.map(() => 'READ'));
    const events = await db()
      .selectFrom('domain_events')
      .select(['subject_id', sql<string>`data->>'status'`.as('status')])
      .where('business_id', '=', tenant.businessId)
      .where('type', '=', 'message_status_changed')
      .where(
        'subject_id',
        'in',
        sent.map((m) => m.id),
      )
      .orderBy('id')
      .execute();
    for (const m of sent)
      expect(events.filter((e) => e.subject_id === m.id).map((e) => e.status)).toEqual(['DELIVERED', 'READ']);
  });
});
