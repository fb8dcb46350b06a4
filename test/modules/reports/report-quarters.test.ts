import { sql } from 'kysely';
import { v7 } from 'uuid';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertContact, insertConversation, insertMessage } from '../../helpers/factories.ts';
import { movesEnded } from '../../helpers/merges.ts';
import { createTenant, type Tenant } from '../../helpers/tenants.ts';
import { buildTestApp, type TestApp } from '../../helpers/test-app.ts';
import { postImport } from '../import/import-helpers.ts';
import { getReport, insertEvent, setTimeZone } from './report-helpers.ts';

/**
 * The reports' kept figures (the quarter hours of message_quarters and user_reply_quarters, the
 * conversation days of conversation_days) stay what counting the stored messages and events afresh
 * gives, whatever wrote or changed them: the import, a merge, a contact made a test contact, a message
 * found to be a copy, a deletion, a new time zone.
 */

let t: TestApp;
let tenant: Tenant;

beforeAll(async () => {
  t = await buildTestApp();
  tenant = await createTenant(t.app);
});
afterAll(() => t.close());

type Row = Record<string, unknown>;
const snapshot = async (businessId: string) => {
  const db = t.database.db;
  const quarters = await sql<Row>`
    select conversation_id, quarter, channel, messages_in, messages_out, ai_replies, person_replies
    from message_quarters where business_id = ${businessId} order by 1, 2, 3`.execute(db);
  const users = await sql<Row>`
    select conversation_id, quarter, user_id, replies from user_reply_quarters
    where business_id = ${businessId} order by 1, 2, 3`.execute(db);
  const days = await sql<Row>`
    select conversation_id, day::text as day, asked_at, ai_replied, person_replied, reply_at, reply_id, reply_sender,
      reply_user, resolved_at, previous_day::text as previous_day, previous_ai_day::text as previous_ai_day,
      previous_person_day::text as previous_person_day
    from conversation_days
    where business_id = ${businessId} order by 1, 2`.execute(db);
  return { quarters: quarters.rows, users: users.rows, days: days.rows };
};

/** The kept figures, and the figures of every quarter counted afresh from the messages. */
async function keptAndRecounted(businessId: string) {
  const kept = await snapshot(businessId);
  await sql`
    select message_quarters_recount(k.business_id, k.conversation_id, k.quarter) from (
      select business_id, conversation_id, report_quarter(created_at) as quarter from messages
      where business_id = ${businessId}
      union
      select business_id, conversation_id, quarter from message_quarters where business_id = ${businessId}
      union
      select business_id, conversation_id, quarter from user_reply_quarters where business_id = ${businessId}) k
  `.execute(t.database.db);
  await sql`
    select conversation_days_recount(business_id, id) from conversations where business_id = ${businessId}
  `.execute(t.database.db);
  return { kept, recounted: await snapshot(businessId) };
}

const messagesIn = async (businessId: string) =>
  (await getReport(t.app, businessId, 'volume', 'since=2026-08-04&until=2026-08-04')).json().tables.by_channel.rows;

describe('the quarter-hour figures of the reports', () => {
  it('count an import, out of order and sent twice, as the messages it stored', async () => {
    const b = (await createTenant(t.app, 'Import')).businessId;
    const contactId = v7();
    const conversationId = v7();
    const at = (minute: number, second: number) =>
      `2026-08-04T10:${String(minute).padStart(2, '0')}:${String(second).padStart(2, '0')}.000000Z`;
    const message = (minute: number, second: number, sender: 'contact' | 'ai_agent' | 'api') => ({
      type: 'message',
      id: v7(),
      conversation_id: conversationId,
      direction: sender === 'contact' ? 'inbound' : 'outbound',
      sender_type: sender,
      text: 'x',
      status: sender === 'contact' ? 'RECEIVED' : 'SENT',
      created_at: at(minute, second),
    });
    // Replies before and after the contact's first message of a quarter, across three quarters, shuffled.
    const messages = [
      message(31, 0, 'api'),
      message(0, 30, 'api'),
      message(14, 59, 'contact'),
      message(2, 0, 'ai_agent'),
      message(5, 0, 'contact'),
      message(20, 0, 'ai_agent'),
      message(1, 0, 'contact'),
      message(7, 30, 'api'),
    ];
    const records = [
      { type: 'contact', id: contactId, first_name: 'Ana', created_at: at(0, 0) },
      { type: 'conversation', id: conversationId, contact_id: contactId, channel: 'whatsapp', created_at: at(0, 1) },
      ...messages,
    ];
    const resolved = {
      type: 'event',
      id: v7(),
      conversation_id: conversationId,
      contact_id: contactId,
      event_type: 'conversation_resolved',
      actor_type: 'api',
      created_at: at(40, 0),
    };
    // The resolution first, in a batch of its own, before the messages it follows.
    expect((await postImport(t.app, b, [...records.slice(0, 2), resolved])).statusCode).toBe(200);
    for (let i = 0; i < 2; i++) expect((await postImport(t.app, b, records)).statusCode).toBe(200);

    const { kept, recounted } = await keptAndRecounted(b);
    expect(kept).toEqual(recounted);
    expect(kept.quarters.map((q) => [q.messages_in, q.messages_out, q.ai_replies, q.person_replies])).toEqual([
      [3, 3, 1, 2], // 10:00-10:15: the contact at :01, :05 and :14:59; the API at :00:30 and :07:30, the AI at :02
      [0, 1, 1, 0],
      [0, 1, 0, 1],
    ]);
    expect(kept.days).toMatchObject([
      { day: '2026-08-04', reply_sender: 'ai_agent', reply_user: null, previous_day: null },
    ]);
    expect(await messagesIn(b)).toEqual([
      { channel: 'whatsapp', conversations_opened: 1, messages_in: 3, messages_out: 5 },
    ]);
    // The first answer after the contact's first message is the AI's at 10:02, though the API replied
    // earlier in its quarter.
    const speed = (await getReport(t.app, b, 'speed', 'since=2026-08-04&until=2026-08-04')).json().tables.summary.rows;
    expect(speed.find((r: Row) => r.answered_first_by === 'all')).toMatchObject({
      conversations: 1,
      first_response_median: 60,
      resolution_median: 39 * 60,
    });
    expect(speed.find((r: Row) => r.answered_first_by === 'ai')).toMatchObject({ conversations: 1 });
  });

  it('follow a merge, a contact made a test contact, a copy found, and deletions', async () => {
    const db = t.database.db;
    const b = tenant.businessId;
    const [ana, ann, tess] = [await insertContact(db, b), await insertContact(db, b), await insertContact(db, b)];
    const talk = async (contactId: string, minute: number) => {
      const conversation = await insertConversation(db, b, contactId, {
        created_at: `2026-08-04T11:${minute}:00.000000Z`,
      });
      const inbound = await insertMessage(db, b, conversation, { created_at: `2026-08-04T11:${minute}:01.000000Z` });
      const reply = await insertMessage(db, b, conversation, {
        direction: 'outbound',
        sender_type: 'ai_agent',
        status: 'SENT',
        created_at: `2026-08-04T11:${minute}:02.000000Z`,
      });
      const resolution = await insertEvent(db, b, conversation, {
        type: 'conversation_resolved',
        created_at: `2026-08-04T11:${minute}:30.000000Z`,
      });
      return { conversation, inbound, reply, resolution };
    };
    await talk(ana.id, 10);
    const second = await talk(ann.id, 20);
    await talk(tess.id, 30);
    const before = await messagesIn(b);
    expect(before).toEqual([{ channel: 'whatsapp', conversations_opened: 3, messages_in: 3, messages_out: 3 }]);

    const merged = await t.app.inject({
      method: 'POST',
      url: '/external/v2/contacts/merge',
      headers: tenant.headers,
      payload: { survivor_id: ana.id, loser_id: ann.id },
    });
    expect(merged.statusCode, merged.body).toBe(200);
    await movesEnded(db);
    expect(await messagesIn(b)).toEqual(before);

    // A contact made a test contact leaves the figures; its messages are flagged by the export triggers.
    await db
      .updateTable('contacts')
      .set({ is_test: true })
      .where('business_id', '=', b)
      .where('id', '=', tess.id)
      .execute();
    expect(await messagesIn(b)).toEqual([
      { channel: 'whatsapp', conversations_opened: 2, messages_in: 2, messages_out: 2 },
    ]);

    // A message found to be another channel's copy stops counting; deleted messages too.
    await db
      .updateTable('messages')
      .set({ duplicate: true })
      .where('business_id', '=', b)
      .where('id', '=', second.reply.id)
      .execute();
    await db.deleteFrom('messages').where('business_id', '=', b).where('id', '=', second.inbound.id).execute();
    // A resolution removed: the wait it ended is open again.
    const first = await db
      .selectFrom('conversations')
      .select('id')
      .where('business_id', '=', b)
      .where('contact_id', '=', ana.id)
      .orderBy('created_at')
      .executeTakeFirstOrThrow();
    await db.deleteFrom('events').where('business_id', '=', b).where('conversation_id', '=', first.id).execute();
    expect(await messagesIn(b)).toEqual([
      { channel: 'whatsapp', conversations_opened: 2, messages_in: 1, messages_out: 1 },
    ]);

    const { kept, recounted } = await keptAndRecounted(b);
    expect(kept).toEqual(recounted);
    expect(kept.quarters).toHaveLength(1);
    expect(kept.days).toMatchObject([{ conversation_id: first.id, resolved_at: null }]);
  });

  it("count the days again in the business's new time zone", async () => {
    const db = t.database.db;
    const b = (await createTenant(t.app, 'Zones')).businessId;
    const contact = await insertContact(db, b);
    const conversation = await insertConversation(db, b, contact.id, { created_at: '2026-08-04T23:00:00.000000Z' });
    await insertMessage(db, b, conversation, { created_at: '2026-08-04T23:30:00.000000Z' });
    await insertMessage(db, b, conversation, {
      direction: 'outbound',
      sender_type: 'human',
      status: 'SENT',
      created_at: '2026-08-04T23:31:00.000000Z',
    });
    expect((await snapshot(b)).days).toMatchObject([{ day: '2026-08-04', previous_day: null }]);
    // Days written out of order: the AI's follow-up on the 7th, the 6th, then the 2nd; each links to the
    // day before it with a contact's message, an AI reply, a person's reply.
    await insertMessage(db, b, conversation, {
      direction: 'outbound',
      sender_type: 'ai_agent',
      status: 'SENT',
      created_at: '2026-08-07T12:00:00.000000Z',
    });
    await insertMessage(db, b, conversation, { created_at: '2026-08-06T12:00:00.000000Z' });
    await insertMessage(db, b, conversation, { created_at: '2026-08-02T12:00:00.000000Z' });
    const links = async () =>
      (await snapshot(b)).days.map((d) => [d.day, d.previous_day, d.previous_ai_day, d.previous_person_day]);
    expect(await links()).toEqual([
      ['2026-08-02', null, null, null],
      ['2026-08-04', '2026-08-02', null, null],
      ['2026-08-06', '2026-08-04', null, '2026-08-04'],
      ['2026-08-07', '2026-08-06', null, '2026-08-04'],
    ]);
    const ai = async (period: string) => (await getReport(t.app, b, 'ai', period)).json().tables.summary.rows[0] as Row;
    expect(await ai('since=2026-08-07&until=2026-08-07')).toMatchObject({ conversations: 1, handled_by_ai_only: 1 });
    expect(await ai('since=2026-08-03&until=2026-08-07')).toMatchObject({ conversations: 1, handled_by_ai_only: 0 });
    // A period from the 3rd starts the conversation at the 4th's message, answered in 60 s.
    const fromThird = (await getReport(t.app, b, 'speed', 'since=2026-08-03&until=2026-08-06')).json().tables.summary
      .rows;
    expect(fromThird.find((r: Row) => r.answered_first_by === 'person')).toMatchObject({
      conversations: 1,
      first_response_median: 60,
    });
    await setTimeZone(t.app, b, 'Asia/Tokyo');
    const { kept, recounted } = await keptAndRecounted(b);
    expect(kept).toEqual(recounted);
    expect(await links()).toEqual([
      ['2026-08-02', null, null, null],
      ['2026-08-05', '2026-08-02', null, null],
      ['2026-08-06', '2026-08-05', null, '2026-08-05'],
      ['2026-08-07', '2026-08-06', null, '2026-08-05'],
    ]);
    const speed = (await getReport(t.app, b, 'speed', 'since=2026-08-05&until=2026-08-05')).json().tables.summary.rows;
    expect(speed.find((r: Row) => r.answered_first_by === 'person')).toMatchObject({
      conversations: 1,
      first_response_median: 60,
    });
  });
});
