import { sql, type RawBuilder, type SelectQueryBuilder } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { ConversationsTable, Database } from '../../db/types.ts';
import { contactsRepository } from '../contacts/contacts.repository.ts';

/** Unread messages are counted up to this many per conversation (the dashboard shows 99+). */
export const UNREAD_CAP = 100;
/** The unread total looks at this many of the most recently active open conversations. */
export const UNREAD_WINDOW = 1000;
/** Characters of the last message the inbox shows. */
const PREVIEW_LENGTH = 200;
const NO_MESSAGE = '00000000-0000-0000-0000-000000000000';

/** What the inbox shows: open or closed conversations, and the filters, each optional. */
export interface InboxFilter {
  /** Closed (archived) conversations, or open ones; undefined: both (one conversation by its id). */
  closed?: boolean;
  id?: string;
  channelId?: string;
  channelType?: string;
  /** A user's conversations, or (null) those without one. */
  assignedUserId?: string | null;
  teamId?: string;
  manualControl?: boolean;
  /** Conversations of these contacts (what a search names). */
  contactIds?: string[];
  /** Or of contacts whose name starts with this (a search that names too many to list). */
  namePrefix?: string;
}

/** A keyset position in the inbox: the activity and id of the last conversation served. */
export interface InboxPosition {
  activityAt: string;
  id: string;
}

/**
 * A conversation's activity, the inbox's order: its last message, else its creation. The text is
 * that of the inbox indexes' key (migration 0022), so the planner matches them.
 */
const activity = sql<string>`coalesce(c.last_message_at, c.created_at)`;
/** 1 for a closed conversation, 0 for an open one: the inbox indexes' first key after the filter's. */
const isClosed = sql<number>`(c.closed_at is not null)::integer`;

type ConversationQuery = SelectQueryBuilder<Database & { c: ConversationsTable }, 'c', object>;

/** The filters of one view, as conditions that each lead one of the inbox indexes. */
function filtered(query: ConversationQuery, businessId: string, filter: InboxFilter): ConversationQuery {
  let q = query.where('c.business_id', '=', businessId);
  if (filter.closed !== undefined) q = q.where(sql<boolean>`${isClosed} = ${filter.closed ? 1 : 0}`);
  if (filter.id !== undefined) q = q.where('c.id', '=', filter.id);
  if (filter.channelId !== undefined) q = q.where('c.channel_id', '=', filter.channelId);
  if (filter.channelType !== undefined) q = q.where('c.channel', '=', filter.channelType);
  if (filter.assignedUserId === null) q = q.where('c.assigned_user_id', 'is', null);
  else if (filter.assignedUserId !== undefined) q = q.where('c.assigned_user_id', '=', filter.assignedUserId);
  if (filter.teamId !== undefined) q = q.where('c.team_id', '=', filter.teamId);
  if (filter.manualControl !== undefined) q = q.where('c.manual_control', '=', filter.manualControl);
  // A name prefix too common to list its contacts is tested on each conversation's contact; the
  // contacts the search found otherwise (by external id) are kept beside it.
  const ofContacts = (ids: string[]) => sql<boolean>`c.contact_id = any(${ids}::uuid[])`;
  if (filter.namePrefix !== undefined) {
    const prefix = filter.namePrefix;
    const ids = filter.contactIds ?? [];
    q = q.where((eb) =>
      eb.or([
        ofContacts(ids),
        eb.exists(
          eb
            .selectFrom('contacts as k')
            .select(sql`1`.as('one'))
            .whereRef('k.business_id', '=', 'c.business_id')
            .whereRef('k.id', '=', 'c.contact_id')
            .where(contactsRepository.nameStartsWith('k', prefix)),
        ),
      ]),
    );
  } else if (filter.contactIds !== undefined) q = q.where(ofContacts(filter.contactIds));
  return q;
}

/**
 * Inbound messages of conversation `p.id` after the read position `r` (none: since the start), the
 * range of index messages_inbound that starts there; web-client copies are not shown, so not counted.
 */
function unreadAfterPosition(businessId: string): RawBuilder<boolean> {
  return sql<boolean>`m.business_id = ${businessId} and m.conversation_id = p.id and m.direction = 'inbound'
    and not m.duplicate and (m.created_at, m.id) > (coalesce(r.last_read_message_at, '-infinity'), coalesce(r.last_read_message_id, ${NO_MESSAGE}::uuid))`;
}

/**
 * The viewer's read position of conversation `p.id`, as `r`: one primary-key probe per row (as a
 * plain join the planner may read all of the user's positions to hash them).
 */
function readPosition(businessId: string, userId: string): RawBuilder<unknown> {
  return sql`left join lateral (
      select r.last_read_message_at, r.last_read_message_id from conversation_reads r
      where r.business_id = ${businessId} and r.user_id = ${userId} and r.conversation_id = p.id limit 1
    ) r on true`;
}

export const inboxRepository = {
  /**
   * One page of the inbox, newest activity first: `limit` conversations after `after`, read from
   * the inbox index of the filter (one range), and only then joined with what each row shows: the
   * contact, the channel, the assignees' names, the last message and the viewer's unread count.
   */
  async page(
    db: Db,
    businessId: string,
    userId: string,
    filter: InboxFilter,
    after: InboxPosition | undefined,
    limit: number,
  ): Promise<InboxRow[]> {
    let page = filtered(db.selectFrom('conversations as c'), businessId, filter);
    if (after)
      page = page.where(sql<boolean>`(${activity}, c.id) < (${after.activityAt}::timestamptz, ${after.id}::uuid)`);
    const pageQuery = page
      .select([
        'c.id',
        'c.contact_id',
        'c.channel',
        'c.channel_id',
        'c.created_at',
        'c.closed_at',
        'c.manual_control',
        'c.manual_control_locked',
        'c.assigned_user_id',
        'c.team_id',
        'c.agent_id',
        'c.message_count',
        'c.tags',
        activity.as('activity_at'),
      ])
      .orderBy(activity, 'desc')
      .orderBy('c.id', 'desc')
      .limit(limit);
    const { rows } = await sql<InboxRow>`
      select p.*, k.first_name, k.last_name, k.phone_number, k.email,
        ch.name as channel_name, u.name as user_name, t.name as team_name, a.name as agent_name,
        lm.id as last_message_id, lm.type as last_message_type, lm.text as last_message_text,
        lm.direction as last_message_direction, lm.status as last_message_status,
        lm.created_at as last_message_at,
        (select count(*)::integer from (
          select 1 from messages m where ${unreadAfterPosition(businessId)} limit ${UNREAD_CAP}
        ) u) as unread_count
      from (${pageQuery}) p
      ${readPosition(businessId, userId)}
      join contacts k on k.business_id = ${businessId} and k.id = p.contact_id
      left join channels ch on ch.business_id = ${businessId} and ch.id = p.channel_id
      left join users u on u.business_id = ${businessId} and u.id = p.assigned_user_id
      left join teams t on t.business_id = ${businessId} and t.id = p.team_id
      left join agents a on a.business_id = ${businessId} and a.id = p.agent_id
      left join lateral (
        select m.id, m.type, left(m.text, ${PREVIEW_LENGTH}) as text, m.direction, m.status, m.created_at
        from messages m where m.business_id = ${businessId} and m.conversation_id = p.id and not m.duplicate
        order by m.created_at desc, m.id desc limit 1
      ) lm on true
      order by p.activity_at desc, p.id desc`.execute(db);
    return rows;
  },

  /** Whether `messageId` is a message of the conversation. */
  async hasMessage(db: Db, businessId: string, conversationId: string, messageId: string): Promise<boolean> {
    const row = await db
      .selectFrom('messages')
      .select('id')
      .where('business_id', '=', businessId)
      .where('id', '=', messageId)
      .where('conversation_id', '=', conversationId)
      .executeTakeFirst();
    return row !== undefined;
  },

  /**
   * The open conversations with unread inbound messages for `userId`, among the UNREAD_WINDOW most
   * recently active, counted up to UNREAD_CAP: one probe of messages_inbound per conversation, so
   * the cost is bounded whatever the business's size.
   */
  async unreadConversations(db: Db, businessId: string, userId: string): Promise<number> {
    const { rows } = await sql<{ count: number }>`
      select count(*)::integer as count from (
        select 1 from (
          select c.id from conversations c
          where c.business_id = ${businessId} and ${isClosed} = 0
          order by ${activity} desc, c.id desc limit ${UNREAD_WINDOW}
        ) p
        ${readPosition(businessId, userId)}
        where exists (select 1 from messages m where ${unreadAfterPosition(businessId)})
        limit ${UNREAD_CAP}
      ) u`.execute(db);
    return rows[0].count;
  },
};

/** A row of the inbox: the conversation and what it shows. */
export interface InboxRow {
  id: string;
  contact_id: string;
  channel: string;
  channel_id: string | null;
  created_at: string;
  closed_at: string | null;
  manual_control: boolean;
  manual_control_locked: boolean;
  assigned_user_id: string | null;
  team_id: string | null;
  agent_id: string | null;
  message_count: number;
  tags: string[];
  activity_at: string;
  first_name: string;
  last_name: string;
  phone_number: string | null;
  email: string | null;
  channel_name: string | null;
  user_name: string | null;
  team_name: string | null;
  agent_name: string | null;
  last_message_id: string | null;
  last_message_type: string | null;
  last_message_text: string | null;
  last_message_direction: 'inbound' | 'outbound' | null;
  last_message_status: string | null;
  last_message_at: string | null;
  unread_count: number;
}
