import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InboxQuery } from '../../../src/modules/conversations/inbox.schemas.ts';
import { at, insertAliases, insertContact, insertConversation, insertMessage } from '../../helpers/factories.ts';
import { buildTestApp, type TestApp } from '../../helpers/test-app.ts';
import { createTenant, type Tenant } from '../../helpers/tenants.ts';
import { createAgent, createTeam, createNamedUser, insertChannel } from './inbox-helpers.ts';

let t: TestApp;
let tenant: Tenant;
let other: Tenant;
let me: { id: string; name: string };
let colleague: { id: string; name: string };

beforeAll(async () => {
  t = await buildTestApp({}, { workers: false });
  tenant = await createTenant(t.app);
  other = await createTenant(t.app, 'Other');
  me = await createNamedUser(t.app, tenant.businessId, 'Maria Agent');
  colleague = await createNamedUser(t.app, tenant.businessId, 'Colleague');
});
afterAll(() => t.close());

const list = (query: Partial<InboxQuery> = {}, businessId = tenant.businessId, userId = me.id) =>
  t.app.services.inbox.list(businessId, { userId }, { limit: 30, ...query });
const ids = (page: { conversations: { id: string }[] }) => page.conversations.map((c) => c.id);

describe('the inbox list', () => {
  it('orders by activity, newest first, and shows each row as the dashboard needs it', async () => {
    const db = t.database.db;
    const b = tenant.businessId;
    const team = await createTeam(t.app, b, 'Support');
    const agent = await createAgent(t.app, b, 'Helper bot');
    const channel = await insertChannel(db, b, 'whatsapp', 'Sales line');
    const ada = await insertContact(db, b, { phone_number: '5491122223333', email: 'ada@example.com' });
    const bob = await insertContact(db, b, { first_name: 'Bob', last_name: 'Builder' });
    const quiet = await insertConversation(db, b, bob.id, { created_at: at(50) });
    const busy = await insertConversation(db, b, ada.id, {
      created_at: at(0),
      channel_id: channel.id,
      assigned_user_id: me.id,
      team_id: team.id,
      agent_id: agent.id,
      manual_control: true,
    });
    await insertMessage(db, b, busy, { created_at: at(10), text: 'first' });
    await insertMessage(db, b, busy, { created_at: at(20), text: 'second' });
    const reply = await insertMessage(db, b, busy, {
      created_at: at(100),
      direction: 'outbound',
      sender_type: 'human',
      user_id: me.id,
      status: 'DELIVERED',
      text: 'x'.repeat(300),
    });

    const page = await list();
    expect(ids(page)).toEqual([busy.id, quiet.id]);
    expect(page.next_cursor).toBeNull();
    expect(page.conversations[0]).toEqual({
      id: busy.id,
      contact: {
        id: ada.id,
        first_name: 'Ada',
        last_name: 'Lovelace',
        phone_number: '5491122223333',
        email: 'ada@example.com',
      },
      channel: { type: 'whatsapp', id: channel.id, name: 'Sales line' },
      last_message: {
        id: reply.id,
        type: 'text',
        text: 'x'.repeat(200),
        direction: 'outbound',
        status: 'DELIVERED',
        created_at: at(100),
      },
      last_activity_at: at(100),
      created_at: at(0),
      assignee: {
        user: { id: me.id, name: 'Maria Agent' },
        team: { id: team.id, name: 'Support' },
        agent: { id: agent.id, name: 'Helper bot' },
      },
      manual_control: true,
      manual_control_locked: false,
      closed: false,
      closed_at: null,
      unread_count: 2,
    });
    expect(page.conversations[1]).toMatchObject({
      id: quiet.id,
      last_message: null,
      last_activity_at: at(50),
      channel: { type: 'whatsapp', id: null, name: null },
      assignee: { user: null, team: null, agent: null },
      unread_count: 0,
    });
    // Another business sees none of them.
    expect(ids(await list({}, other.businessId))).toEqual([]);
  });
});

describe('paging', () => {
  it('walks every conversation once, in order, with ties on activity broken by id', async () => {
    const db = t.database.db;
    const { businessId } = await createTenant(t.app, 'Paging');
    const user = await createNamedUser(t.app, businessId, 'Pager');
    const contact = await insertContact(db, businessId);
    const made = [];
    for (let i = 0; i < 7; i++)
      made.push(await insertConversation(db, businessId, contact.id, { created_at: at(i % 3 === 0 ? 5 : i) }));
    const expected = [...made]
      .sort((a, b) => (a.created_at === b.created_at ? (a.id < b.id ? 1 : -1) : a.created_at < b.created_at ? 1 : -1))
      .map((c) => c.id);
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await list({ limit: 3, cursor }, businessId, user.id);
      expect(page.conversations.length).toBeLessThanOrEqual(3);
      seen.push(...ids(page));
      cursor = page.next_cursor ?? undefined;
    } while (cursor);
    expect(seen).toEqual(expected);
  });

  it('refuses a cursor made for other filters, another user or another business', async () => {
    const db = t.database.db;
    const { businessId } = await createTenant(t.app, 'Cursors');
    const user = await createNamedUser(t.app, businessId, 'Walker');
    const contact = await insertContact(db, businessId);
    for (let i = 0; i < 3; i++) await insertConversation(db, businessId, contact.id);
    const { next_cursor: cursor } = await list({ limit: 1 }, businessId, user.id);
    expect(cursor).toEqual(expect.any(String));
    const invalid = { status: 400, code: 'validation_error', message: 'invalid cursor' };
    await expect(list({ limit: 1, cursor: cursor!, status: 'closed' }, businessId, user.id)).rejects.toMatchObject(
      invalid,
    );
    await expect(list({ limit: 1, cursor: cursor! }, businessId, colleague.id)).rejects.toMatchObject(invalid);
    await expect(list({ limit: 1, cursor: cursor! }, tenant.businessId, user.id)).rejects.toMatchObject(invalid);
    await expect(list({ limit: 1, cursor: `${cursor!}x` }, businessId, user.id)).rejects.toMatchObject(invalid);
  });
});

describe('filters', () => {
  it('narrows by status, channel, assignee, team and control', async () => {
    const db = t.database.db;
    const { businessId: b } = await createTenant(t.app, 'Filters');
    const mine = await createNamedUser(t.app, b, 'Mine');
    const theirs = await createNamedUser(t.app, b, 'Theirs');
    const team = await createTeam(t.app, b, 'Billing');
    const line = await insertChannel(db, b, 'whatsapp', 'Line');
    const contact = await insertContact(db, b);
    const conv = (values: Parameters<typeof insertConversation>[3]) => insertConversation(db, b, contact.id, values);
    const plain = await conv({ created_at: at(1) });
    const closed = await conv({ created_at: at(2), closed_at: at(3) });
    const onLine = await conv({ created_at: at(4), channel_id: line.id });
    const insta = await conv({ created_at: at(5), channel: 'instagram' });
    const assigned = await conv({ created_at: at(6), assigned_user_id: mine.id, manual_control: true });
    const toThem = await conv({ created_at: at(7), assigned_user_id: theirs.id, team_id: team.id });
    const view = (query: Partial<InboxQuery>) => list(query, b, mine.id).then(ids);

    expect(await view({})).toEqual([toThem.id, assigned.id, insta.id, onLine.id, plain.id]);
    expect(await view({ status: 'open' })).toEqual(await view({}));
    expect(await view({ status: 'closed' })).toEqual([closed.id]);
    expect(await view({ channel: 'instagram' })).toEqual([insta.id]);
    expect(await view({ channel: 'whatsapp' })).toEqual([toThem.id, assigned.id, onLine.id, plain.id]);
    expect(await view({ channel: line.id })).toEqual([onLine.id]);
    expect(await view({ assignee: 'me' })).toEqual([assigned.id]);
    expect(await view({ assignee: theirs.id })).toEqual([toThem.id]);
    expect(await view({ assignee: team.id })).toEqual([toThem.id]);
    expect(await view({ assignee: 'unassigned' })).toEqual([insta.id, onLine.id, plain.id]);
    expect(await view({ control: 'manual' })).toEqual([assigned.id]);
    expect(await view({ control: 'ai' })).toEqual([toThem.id, insta.id, onLine.id, plain.id]);
    expect(await view({ control: 'ai', assignee: 'unassigned', channel: 'whatsapp' })).toEqual([onLine.id, plain.id]);
    // The filters of another business name nothing here.
    expect(await view({ channel: (await insertChannel(db, tenant.businessId, 'whatsapp', 'Theirs')).id })).toEqual([]);
    for (const assignee of [me.id, '0190a0a0-0000-7000-8000-000000000000'])
      await expect(view({ assignee })).rejects.toMatchObject({
        kind: 'invalid',
        details: [{ location: 'querystring', path: '/assignee', message: 'unknown user or team' }],
      });
  });

  it('narrows by team, alone or with a user: a queue and who works it', async () => {
    const db = t.database.db;
    const { businessId: b } = await createTenant(t.app, 'Queues');
    const mine = await createNamedUser(t.app, b, 'Mine');
    const theirs = await createNamedUser(t.app, b, 'Theirs');
    const billing = await createTeam(t.app, b, 'Billing');
    const sales = await createTeam(t.app, b, 'Sales');
    const contact = await insertContact(db, b);
    const conv = (values: Parameters<typeof insertConversation>[3]) => insertConversation(db, b, contact.id, values);
    const billedMine = await conv({ created_at: at(1), team_id: billing.id, assigned_user_id: mine.id });
    const billedTheirs = await conv({ created_at: at(2), team_id: billing.id, assigned_user_id: theirs.id });
    const billedNobody = await conv({ created_at: at(3), team_id: billing.id });
    const soldMine = await conv({ created_at: at(4), team_id: sales.id, assigned_user_id: mine.id });
    await conv({ created_at: at(5) });
    const view = (query: Partial<InboxQuery>) => list(query, b, mine.id).then(ids);

    expect(await view({ team: billing.id })).toEqual([billedNobody.id, billedTheirs.id, billedMine.id]);
    expect(await view({ team: billing.id, assignee: 'me' })).toEqual([billedMine.id]);
    expect(await view({ team: billing.id, assignee: theirs.id })).toEqual([billedTheirs.id]);
    expect(await view({ team: billing.id, assignee: 'unassigned' })).toEqual([billedNobody.id]);
    expect(await view({ team: sales.id, assignee: theirs.id })).toEqual([]);
    expect(await view({ team: sales.id, assignee: sales.id })).toEqual([soldMine.id]);
    // Paged under the filter, with a cursor bound to it.
    const first = await list({ team: billing.id, limit: 2 }, b, mine.id);
    expect(ids(first)).toEqual([billedNobody.id, billedTheirs.id]);
    const next = await list({ team: billing.id, limit: 2, cursor: first.next_cursor! }, b, mine.id);
    expect(ids(next)).toEqual([billedMine.id]);
    await expect(list({ team: sales.id, limit: 2, cursor: first.next_cursor! }, b, mine.id)).rejects.toMatchObject({
      message: 'invalid cursor',
    });

    await expect(view({ team: billing.id, assignee: sales.id })).rejects.toMatchObject({
      kind: 'invalid',
      details: [{ location: 'querystring', path: '/team', message: 'another team than assignee' }],
    });
    // Another business's team, and no team at all.
    const theirTeam = await createTeam(t.app, other.businessId, 'Elsewhere');
    for (const team of [theirTeam.id, '0190a0a0-0000-7000-8000-000000000000'])
      await expect(view({ team })).rejects.toMatchObject({
        kind: 'invalid',
        details: [{ location: 'querystring', path: '/team', message: 'unknown team' }],
      });
  });

  it('searches contacts by email, phone and external id as the contacts list does, and by the start of a name', async () => {
    const db = t.database.db;
    const { businessId: b } = await createTenant(t.app, 'Search');
    const user = await createNamedUser(t.app, b, 'Searcher');
    const ana = await insertContact(db, b, {
      first_name: 'Ana',
      last_name: 'López',
      email: 'Ana.Lopez@Example.com',
      phone_number: '5491155556666',
    });
    const anabel = await insertContact(db, b, { first_name: 'Anabel', last_name: 'Ruiz' });
    const merged = await insertContact(db, b, { first_name: 'Zoe', last_name: 'Merged', external_id: 'CRM-7' });
    await insertAliases(db, { business_id: b, kind: 'email', value: 'old@example.com', contact_id: merged.id });
    const [c1, c2, c3] = [
      await insertConversation(db, b, ana.id, { created_at: at(1) }),
      await insertConversation(db, b, anabel.id, { created_at: at(2) }),
      await insertConversation(db, b, merged.id, { created_at: at(3) }),
    ];
    const search = (q: string, query: Partial<InboxQuery> = {}) => list({ q, ...query }, b, user.id).then(ids);
    expect(await search('ana')).toEqual([c2.id, c1.id]);
    expect(await search('  ANA   ló ')).toEqual([c1.id]);
    expect(await search('lóp')).toEqual([c1.id]);
    expect(await search('ruiz')).toEqual([c2.id]);
    // The contacts list's search box finds an external id too, as it is.
    expect(await search('CRM-7')).toEqual([c3.id]);
    expect(await search('crm-7')).toEqual([]);
    expect(await search('ana.lopez@example.COM')).toEqual([c1.id]);
    expect(await search('ana.lopez@example')).toEqual([]);
    // The phone with and without Argentina's mobile 9, with separators.
    expect(await search('+54 11 5555-6666')).toEqual([c1.id]);
    expect(await search('5491155556666')).toEqual([c1.id]);
    expect(await search('OLD@example.com')).toEqual([c3.id]);
    expect(await search('nobody')).toEqual([]);
    expect(await search('   ')).toEqual([c3.id, c2.id, c1.id]);
    expect(await search('ana', { status: 'closed' })).toEqual([]);
    // Percent and underscore are text, not patterns.
    expect(await search('%')).toEqual([]);
    expect(await search('_na')).toEqual([]);
  });

  it('filters by name on each conversation when a name starts too many contacts to list', async () => {
    const db = t.database.db;
    const { businessId: b } = await createTenant(t.app, 'Broad');
    const user = await createNamedUser(t.app, b, 'Broad');
    await db
      .insertInto('contacts')
      .values(
        Array.from({ length: 1001 }, (_, i) => ({
          business_id: b,
          id: `0190a0a0-0000-7000-8000-${String(i).padStart(12, '0')}`,
          first_name: 'Many',
          last_name: `Person ${i}`,
        })),
      )
      .execute();
    const many = await insertConversation(db, b, '0190a0a0-0000-7000-8000-000000000500', { created_at: at(2) });
    const few = await insertContact(db, b, { first_name: 'Mandy' });
    // Named "man" by its external id, not by its name.
    const other = await insertContact(db, b, { first_name: 'Zed', external_id: 'man' });
    const mandy = await insertConversation(db, b, few.id, { created_at: at(1) });
    const zed = await insertConversation(db, b, other.id, { created_at: at(3) });
    await insertConversation(db, b, (await insertContact(db, b, { first_name: 'Nobody' })).id, { created_at: at(4) });
    const matched = await t.app.services.dashboardContacts.matching(b, 'man', 1000);
    expect(matched).toEqual({ ids: [other.id], namePrefix: 'man' });
    expect(ids(await list({ q: 'man' }, b, user.id))).toEqual([zed.id, many.id, mandy.id]);
    expect(ids(await list({ q: 'many person 500' }, b, user.id))).toEqual([many.id]);
  });
});

describe('unread counts and read positions', () => {
  it("counts each user's unread inbound messages and moves the position only forward", async () => {
    const db = t.database.db;
    const { businessId: b } = await createTenant(t.app, 'Unread');
    const reader = await createNamedUser(t.app, b, 'Reader');
    const idle = await createNamedUser(t.app, b, 'Idle');
    const contact = await insertContact(db, b);
    const conversation = await insertConversation(db, b, contact.id);
    const otherConversation = await insertConversation(db, b, contact.id);
    const inbound = (s: number) => insertMessage(db, b, conversation, { created_at: at(s) });
    const m1 = await inbound(1);
    const m2 = await inbound(2);
    await insertMessage(db, b, conversation, {
      created_at: at(3),
      direction: 'outbound',
      sender_type: 'api',
      status: 'SENT',
    });
    const inbox = t.app.services.inbox;
    const unreadOf = async (userId: string) =>
      (await inbox.list(b, { userId }, { limit: 30 })).conversations.find((c) => c.id === conversation.id)!
        .unread_count;
    expect(await unreadOf(reader.id)).toBe(2);

    expect(await inbox.markRead(b, { userId: reader.id }, conversation.id, { message_id: m1.id })).toEqual({
      conversation_id: conversation.id,
      last_read_message_id: m1.id,
      read_at: expect.any(String),
      unread_count: 1,
    });
    const latest = await inbox.markRead(b, { userId: reader.id }, conversation.id, {});
    expect(latest).toMatchObject({ unread_count: 0 });
    expect(latest.last_read_message_id).not.toBe(m2.id); // the outbound reply is the latest
    // An older message leaves the position where it is.
    expect(await inbox.markRead(b, { userId: reader.id }, conversation.id, { message_id: m1.id })).toMatchObject({
      last_read_message_id: latest.last_read_message_id,
      unread_count: 0,
    });
    await inbound(4);
    // A web-client copy of a message is not shown, so not counted.
    await insertMessage(db, b, conversation, { created_at: at(4.5), duplicate: true });
    expect(await unreadOf(reader.id)).toBe(1);
    expect(await unreadOf(idle.id)).toBe(3);

    // A message of another conversation, or of no conversation of the business, is not found.
    const elsewhere = await insertMessage(db, b, otherConversation, { created_at: at(5) });
    const notFound = { kind: 'not_found', message: 'message not found' };
    await expect(
      inbox.markRead(b, { userId: reader.id }, conversation.id, { message_id: elsewhere.id }),
    ).rejects.toMatchObject(notFound);
    // A conversation of another business is not found, and its position does not move.
    await expect(inbox.markRead(tenant.businessId, { userId: me.id }, conversation.id, {})).rejects.toMatchObject({
      kind: 'not_found',
      message: 'conversation not found',
    });
    // A conversation without messages has nothing to read.
    const empty = await insertConversation(db, b, contact.id);
    expect(await inbox.markRead(b, { userId: reader.id }, empty.id, {})).toEqual({
      conversation_id: empty.id,
      last_read_message_id: null,
      read_at: null,
      unread_count: 0,
    });
  });

  it('caps a count at 100, and the total of unread conversations at 100', async () => {
    const db = t.database.db;
    const { businessId: b } = await createTenant(t.app, 'Caps');
    const user = await createNamedUser(t.app, b, 'Capped');
    const contact = await insertContact(db, b);
    const conversation = await insertConversation(db, b, contact.id, { created_at: at(0) });
    const { sql } = await import('kysely');
    await sql`insert into messages (business_id, id, conversation_id, contact_id, channel, direction, sender_type, status, created_at)
      select ${b}, gen_random_uuid(), ${conversation.id}, ${contact.id}, 'whatsapp', 'inbound', 'contact', 'RECEIVED',
        ${at(1)}::timestamptz + n * interval '1 second'
      from generate_series(1, 150) n`.execute(db);
    const inbox = t.app.services.inbox;
    const [row] = (await inbox.list(b, { userId: user.id }, { limit: 30 })).conversations;
    expect(row.unread_count).toBe(100);
    expect(await inbox.unread(b, { userId: user.id })).toEqual({ unread_conversations: 1 });

    await sql`with c as (
        insert into conversations (business_id, id, contact_id, channel, created_at)
        select ${b}, gen_random_uuid(), ${contact.id}, 'whatsapp', ${at(2)} from generate_series(1, 120)
        returning id, created_at)
      insert into messages (business_id, id, conversation_id, contact_id, channel, direction, sender_type, status, created_at)
      select ${b}, gen_random_uuid(), c.id, ${contact.id}, 'whatsapp', 'inbound', 'contact', 'RECEIVED', c.created_at from c`.execute(
      db,
    );
    expect(await inbox.unread(b, { userId: user.id })).toEqual({ unread_conversations: 100 });
    // Closed conversations do not count, nor what the user has read.
    await sql`update conversations set closed_at = now() where business_id = ${b} and id <> ${conversation.id}`.execute(
      db,
    );
    expect(await inbox.unread(b, { userId: user.id })).toEqual({ unread_conversations: 1 });
    await inbox.markRead(b, { userId: user.id }, conversation.id, {});
    expect(await inbox.unread(b, { userId: user.id })).toEqual({ unread_conversations: 0 });
    expect(await inbox.unread(other.businessId, { userId: user.id })).toEqual({ unread_conversations: 0 });
  });
});

describe('one conversation', () => {
  it('shows the conversation with its contact, open or closed, and nothing of another business', async () => {
    const db = t.database.db;
    const b = tenant.businessId;
    const contact = await insertContact(db, b, {
      first_name: 'Grace',
      last_name: 'Hopper',
      email: 'grace@example.com',
      tags: ['vip'],
      custom_fields: { plan: 'gold' },
    });
    const conversation = await insertConversation(db, b, contact.id, { closed_at: at(9), tags: ['vip'] });
    await insertMessage(db, b, conversation, { created_at: at(8) });
    const detail = await t.app.services.inbox.get(b, { userId: me.id }, conversation.id);
    expect(detail.conversation).toMatchObject({
      id: conversation.id,
      closed: true,
      closed_at: at(9),
      message_count: 1,
      tags: ['vip'],
      unread_count: 1,
    });
    expect(detail.contact).toEqual({
      id: contact.id,
      first_name: 'Grace',
      last_name: 'Hopper',
      email: 'grace@example.com',
      phone_number: null,
      external_id: null,
      avatar_url: null,
      tags: ['vip'],
      custom_fields: { plan: 'gold' },
      created_at: contact.created_at,
    });
    await expect(t.app.services.inbox.get(other.businessId, { userId: me.id }, conversation.id)).rejects.toMatchObject({
      kind: 'not_found',
    });
  });
});
