import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inboundMessage } from '../../helpers/fake-graph-api.ts';
import type { Tenant } from '../../helpers/tenants.ts';
import type { TestApp } from '../../helpers/test-app.ts';
import { withWhatsAppChannel, type TestChannel, type WhatsAppFixture } from './whatsapp-helpers.ts';

// Every inbound message is stored by one path, whatever it carries: within one notification, a
// reply or a reaction points at a message stored before or earlier in the same notification (as if
// its messages had come one by one), never at a later one; attachments get their media rows.

let t: TestApp;
let tenant: Tenant;
let channel: TestChannel;
let notify: WhatsAppFixture['notify'];

beforeAll(async () => {
  ({ t, tenant, channel, notify } = await withWhatsAppChannel());
});
afterAll(() => t.close());

const db = () => t.database.db;
const rowOf = (providerId: unknown) =>
  db()
    .selectFrom('messages')
    .selectAll()
    .where('business_id', '=', tenant.businessId)
    .where('provider_message_id', '=', providerId as string)
    .executeTakeFirstOrThrow();
const deliver = async (messages: Record<string, unknown>[], from: string) => {
  const res = await notify({ contacts: [{ waId: from, name: 'Ana Ruiz' }], messages });
  expect(res.statusCode, res.body).toBe(200);
  return res;
};

describe('messages of one notification that point at each other', () => {
  it('resolve replies and reactions to earlier messages of the notification, and to stored ones', async () => {
    const from = '5491160000001';
    const before = inboundMessage(from, 'text', { body: 'stored before' });
    await deliver([before], from);

    const first = inboundMessage(from, 'text', { body: 'first' });
    const photo = inboundMessage(
      from,
      'image',
      { id: '7001', mime_type: 'image/jpeg', caption: 'this one' },
      { context: { from: channel.identifier, id: first.id } },
    );
    const reaction = inboundMessage(from, 'reaction', { message_id: photo.id, emoji: '❤️' });
    const toStored = inboundMessage(from, 'text', { body: 'as I said' }, { context: { from, id: before.id } });
    const later = inboundMessage(from, 'text', { body: 'ahead' });
    const toLater = inboundMessage(from, 'reaction', { message_id: later.id, emoji: '👍' });
    await deliver([first, photo, reaction, toStored, before, toLater, later], from);

    const [firstRow, photoRow, reactionRow, toStoredRow, beforeRow, toLaterRow, laterRow] = await Promise.all(
      [first, photo, reaction, toStored, before, toLater, later].map((m) => rowOf(m.id)),
    );
    expect(photoRow).toMatchObject({ type: 'image', reply_to_id: firstRow.id });
    expect(reactionRow.metadata).toEqual({
      reaction: { message_id: photoRow.id, provider_message_id: photo.id, emoji: '❤️' },
    });
    expect(toStoredRow.reply_to_id).toBe(beforeRow.id);
    expect(toLaterRow.metadata).toEqual({
      reaction: { message_id: null, provider_message_id: later.id, emoji: '👍' },
    });
    expect(laterRow.text).toBe('ahead');

    const media = await db().selectFrom('media').selectAll().where('message_id', '=', photoRow.id).execute();
    expect(media).toMatchObject([{ provider_media_id: '7001', content_type: 'image/jpeg' }]);
    const jobs = await db().selectFrom('outbox').select(['kind', 'ref_id']).where('ref_id', '=', photoRow.id).execute();
    expect(jobs).toEqual([{ kind: 'media_fetch', ref_id: photoRow.id }]);
    // The redelivered message changed nothing: one row, and the conversation counts each message once.
    const conversation = await db()
      .selectFrom('conversations')
      .select('message_count')
      .where('id', '=', firstRow.conversation_id)
      .executeTakeFirstOrThrow();
    expect(conversation.message_count).toBe(7);
  });

  it('answer with every message of a notification stored in arrival order of ids', async () => {
    const from = '5491160000002';
    const messages = [
      inboundMessage(from, 'image', { id: '7002', mime_type: 'image/png' }),
      inboundMessage(from, 'text', { body: 'plain' }),
      inboundMessage(from, 'document', { id: '7003', mime_type: 'application/pdf', filename: 'a.pdf' }),
      inboundMessage(from, 'text', { body: 'plain again' }),
    ];
    await deliver(messages, from);
    const rows = await Promise.all(messages.map((m) => rowOf(m.id)));
    expect(rows.map((r) => r.id)).toEqual(rows.map((r) => r.id).sort());
  });
});
