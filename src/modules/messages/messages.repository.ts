import { sql, type Insertable, type Selectable } from 'kysely';
import type { Db } from '../../db/database.ts';
import { jsonRows } from '../../db/json-rows.ts';
import type { MessagesTable } from '../../db/types.ts';
import { historyIdsSql } from '../contacts/contacts.repository.ts';
import { conversationStoreRepository } from '../conversations/conversation-store.repository.ts';

export type MessageRow = Selectable<MessagesTable>;
/**
 * What insertMessages answers of each message it inserted; `duplicate`: a copy of a message another
 * channel of the same number holds already (migration 0048).
 */
export type InsertedMessage = Pick<
  MessageRow,
  'id' | 'conversation_id' | 'provider_message_id' | 'created_at' | 'duplicate'
>;

/** The columns a writer gives for a new message (the others take their defaults), by their types. */
const messageColumns = {
  id: 'uuid',
  conversation_id: 'uuid',
  contact_id: 'uuid',
  channel: 'text',
  channel_id: 'uuid',
  provider_message_id: 'text',
  direction: 'text',
  sender_type: 'text',
  user_id: 'uuid',
  agent_id: 'uuid',
  type: 'text',
  text: 'text',
  status: 'text',
  status_at: 'timestamptz',
  error: 'text',
  reply_to_id: 'uuid',
  metadata: 'jsonb',
  sender_address: 'text',
  recipient_address: 'text',
  template_id: 'uuid',
  outbound_content: 'jsonb',
  excluded: 'boolean',
  created_at: 'timestamptz',
} as const;

/**
 * A new message: its columns as values (`metadata` and `outbound_content` as JSON values, not text).
 * `excluded` is given only by a writer that knows the export flag (rule 4) from rows at hand.
 */
export type NewMessage = Pick<
  Insertable<MessagesTable>,
  Exclude<keyof typeof messageColumns, 'metadata' | 'outbound_content'>
> & { business_id: string; metadata?: Record<string, unknown>; outbound_content?: unknown };

/** A message as the import stores it; timestamps are the ISO strings of the file, read by PostgreSQL. */
export interface MessageImportRow {
  id: string;
  conversation_id: string;
  direction: string;
  sender_type: string;
  type: string;
  text: string;
  status: string;
  error: string | null;
  metadata: Record<string, unknown>;
  created_at: string;
}

/**
 * New messages and the reads of stored ones: a contact's and a conversation's latest, by the
 * provider's id, the service windows. Status moves are in message-status.repository.ts.
 */
export const messagesRepository = {
  /**
   * Inserts messages of one business in one statement: a row whose provider message id is stored on
   * its channel already (the provider redelivered it) is skipped, and each conversation's
   * message_count and last_message_at move by the rows inserted into it. The rows travel as one JSON
   * value (jsonRows), so a batch of any size is one parameter and one kept plan. Answers the rows
   * inserted.
   */
  async insertMessages(db: Db, businessId: string, rows: NewMessage[]): Promise<{ inserted: InsertedMessage[] }> {
    if (rows.length === 0) return { inserted: [] };
    // Columns a writer leaves out take the table's defaults; `excluded` stays null when not given,
    // so the messages_export_flags trigger decides it (migration 0006).
    const { rows: inserted } = await sql<InsertedMessage>`with inserted as (
        insert into messages (business_id, id, conversation_id, contact_id, channel, channel_id, provider_message_id,
          direction, sender_type, user_id, agent_id, type, text, status, status_at, error, reply_to_id, metadata,
          sender_address, recipient_address, template_id, outbound_content, excluded, created_at)
        select ${businessId}::uuid, v.id, v.conversation_id, v.contact_id, v.channel, v.channel_id, v.provider_message_id,
          v.direction, v.sender_type, v.user_id, v.agent_id, coalesce(v.type, 'text'), coalesce(v.text, ''), v.status,
          v.status_at, v.error, v.reply_to_id, coalesce(v.metadata, '{}'), v.sender_address, v.recipient_address,
          v.template_id, v.outbound_content, v.excluded, coalesce(v.created_at, now())
        from ${jsonRows<keyof typeof messageColumns>('v', messageColumns, rows)}
        on conflict (business_id, channel_id, provider_message_id) do nothing
        returning business_id, id, conversation_id, provider_message_id, created_at, duplicate),
      counted as (${conversationStoreRepository.countMessages(businessId, sql`select conversation_id from inserted`)})
      select id, conversation_id, provider_message_id, created_at, duplicate from inserted`.execute(db);
    return { inserted };
  },

  /**
   * The messages of an import batch in one statement; how many went in. A message takes contact,
   * channel and channel id from its conversation, and the conversations' counters move in the same
   * statement (countMessages). An id that exists is skipped; a message whose conversation is not
   * the business's is left out (the caller finds it as a row that does not exist afterwards). The
   * export flag is decided here from the conversation and its contact, as the messages_export_flags
   * trigger would (the trigger then skips these rows, migration 0006): one read per conversation of
   * the batch, each a primary-key probe (LATERAL ... LIMIT 1) whatever the statistics say, instead of
   * one per message. The rows travel as one text[] parameter per column, read by unnest and cast by
   * PostgreSQL (timestamps keep their microseconds).
   */
  async insertImported(db: Db, businessId: string, rows: MessageImportRow[]): Promise<number> {
    const column = <K extends keyof MessageImportRow>(key: K) => rows.map((r) => r[key]);
    const { rows: counted } = await sql<{ n: number }>`
      WITH parent AS MATERIALIZED (
        SELECT c.id, c.contact_id, c.channel, c.channel_id, coalesce(k.is_test OR c.is_internal OR c.is_group, false) AS excluded
        FROM unnest(${[...new Set(column('conversation_id'))]}::text[]) AS u(id)
        CROSS JOIN LATERAL (SELECT * FROM conversations c WHERE c.business_id = ${businessId}::uuid AND c.id = u.id::uuid LIMIT 1) c
        LEFT JOIN LATERAL (SELECT is_test FROM contacts k WHERE k.business_id = c.business_id AND k.id = c.contact_id LIMIT 1) k ON true
      ), inserted AS (
        INSERT INTO messages (business_id, id, conversation_id, contact_id, channel, channel_id, direction, sender_type, type, text, status, error, metadata, created_at, excluded)
        SELECT ${businessId}::uuid, r.id::uuid, p.id, p.contact_id, p.channel, p.channel_id, r.direction, r.sender_type, r.type, r.text, r.status, r.error,
          r.metadata::jsonb, r.created_at::timestamptz, p.excluded
        FROM unnest(${column('id')}::text[], ${column('conversation_id')}::text[], ${column('direction')}::text[],
          ${column('sender_type')}::text[], ${column('type')}::text[], ${column('text')}::text[], ${column('status')}::text[],
          ${column('error')}::text[], ${rows.map((r) => JSON.stringify(r.metadata))}::text[], ${column('created_at')}::text[])
          AS r(id, conversation_id, direction, sender_type, type, text, status, error, metadata, created_at)
        JOIN parent p ON p.id = r.conversation_id::uuid
        ON CONFLICT (business_id, id) DO NOTHING
        RETURNING conversation_id, created_at
      ), counted AS (${conversationStoreRepository.countMessages(businessId, sql`SELECT id FROM parent`)})
      SELECT count(*)::int AS n FROM inserted`.execute(db);
    return counted[0]?.n ?? 0;
  },

  /**
   * The ids of the messages providers know by these ids on these channels, keyed
   * `${channelId}:${providerMessageId}`: one probe of the unique index per id (jsonRows).
   */
  async idsByProviderMessageId(
    db: Db,
    businessId: string,
    refs: { channelId: string; providerMessageId: string }[],
  ): Promise<Map<string, string>> {
    if (refs.length === 0) return new Map();
    const { rows } = await sql<{ lookup: string; id: string }>`
      select p.channel_id || ':' || p.provider_message_id as lookup, m.id
      from ${jsonRows(
        'p',
        { channel_id: 'uuid', provider_message_id: 'text' },
        refs.map((r) => ({ channel_id: r.channelId, provider_message_id: r.providerMessageId })),
      )}
      cross join lateral (
        select id from messages m
        where m.business_id = ${businessId} and m.channel_id = p.channel_id and m.provider_message_id = p.provider_message_id
        limit 1) m`.execute(db);
    return new Map(rows.map((r) => [r.lookup, r.id]));
  },

  /** The message a provider knows by this id on this channel. */
  findByProviderMessageId(db: Db, businessId: string, channelId: string, providerMessageId: string) {
    return db
      .selectFrom('messages')
      .select(['id', 'conversation_id', 'contact_id', 'direction', 'status'])
      .where('business_id', '=', businessId)
      .where('channel_id', '=', channelId)
      .where('provider_message_id', '=', providerMessageId)
      .executeTakeFirst();
  },

  /**
   * An inbound message of the channel by its provider id, locked until the transaction ends, so two
   * updates of it (a provider's callback and its redelivery) apply one after the other.
   */
  lockInbound(db: Db, businessId: string, channelId: string, providerMessageId: string) {
    return db
      .selectFrom('messages')
      .select(['id', 'type', 'status', 'metadata'])
      .where('business_id', '=', businessId)
      .where('channel_id', '=', channelId)
      .where('provider_message_id', '=', providerMessageId)
      .where('direction', '=', 'inbound')
      .forUpdate()
      .executeTakeFirst();
  },

  /** A message's type, undefined when there is no such message. */
  async typeOf(db: Db, businessId: string, id: string): Promise<string | undefined> {
    const row = await db
      .selectFrom('messages')
      .select('type')
      .where('business_id', '=', businessId)
      .where('id', '=', id)
      .executeTakeFirst();
    return row?.type;
  },

  /** Adds fields to a message's metadata (a call's status and duration), replacing those of the same names. */
  async mergeMetadata(db: Db, businessId: string, id: string, fields: Record<string, unknown>): Promise<void> {
    await db
      .updateTable('messages')
      .set({ metadata: sql`metadata || ${JSON.stringify(fields)}::jsonb` })
      .where('business_id', '=', businessId)
      .where('id', '=', id)
      .execute();
  },

  /**
   * A recording's transcript: kept in the metadata, and the message's text when it has none. Whether
   * the message is still there.
   */
  async setTranscript(db: Db, businessId: string, id: string, transcript: string): Promise<boolean> {
    const row = await db
      .updateTable('messages')
      .set({
        text: sql`case when text = '' then ${transcript} else text end`,
        metadata: sql`metadata || jsonb_build_object('transcript', ${transcript}::text)`,
      })
      .where('business_id', '=', businessId)
      .where('id', '=', id)
      .returning('id')
      .executeTakeFirst();
    return row !== undefined;
  },

  /** A message's contact, channel and the person's address on it (the sender, or the recipient of an outbound one). */
  personOf(db: Db, businessId: string, id: string) {
    return db
      .selectFrom('messages')
      .select([
        'contact_id',
        'channel_id',
        sql<string | null>`case when direction = 'inbound' then sender_address else recipient_address end`.as(
          'address',
        ),
      ])
      .where('business_id', '=', businessId)
      .where('id', '=', id)
      .executeTakeFirst();
  },

  /** The provider id an outbound message of the channel holds, if any. */
  async outboundProviderId(db: Db, businessId: string, channelId: string, id: string): Promise<string | undefined> {
    const row = await db
      .selectFrom('messages')
      .select('provider_message_id')
      .where('business_id', '=', businessId)
      .where('id', '=', id)
      .where('channel_id', '=', channelId)
      .where('direction', '=', 'outbound')
      .executeTakeFirst();
    return row?.provider_message_id ?? undefined;
  },

  /**
   * The (contact, channel) pairs whose service window is open: the contact wrote on the channel
   * within the last `hours` of the pair (its channel kind's window; messages recorded without a
   * channel id, imports, count for channels of their type), also as a contact a merge hid into it
   * (its messages are the contact's while they move). One statement for all pairs, whatever their
   * windows, keyed `${contact_id}:${channel_id}`.
   */
  async inServiceWindows(
    db: Db,
    businessId: string,
    pairs: { contact_id: string; channel_id: string; channel: string; hours: number }[],
  ): Promise<Set<string>> {
    if (pairs.length === 0) return new Set();
    const rows = jsonRows('p', { contact_id: 'uuid', channel_id: 'uuid', channel: 'text', hours: 'float8' }, pairs);
    // LATERAL ... LIMIT 1: one probe of messages_contact per pair and contact, never a scan of the
    // business's day.
    const { rows: open } = await sql<{ lookup: string }>`
      select p.contact_id || ':' || p.channel_id as lookup
      from ${rows}
      cross join lateral (
        select 1 from ${historyIdsSql(businessId, sql<string>`p.contact_id`)} k
        cross join lateral (
          select 1 from messages m
          where m.business_id = ${businessId} and m.contact_id = k.id
            and m.created_at > now() - p.hours * interval '1 hour' and m.direction = 'inbound'
            and (m.channel_id = p.channel_id or (m.channel_id is null and m.channel = p.channel))
          limit 1) m
        limit 1) w`.execute(db);
    return new Set(open.map((r) => r.lookup));
  },
  /**
   * When the contact's service window on the channel ends (its latest inbound message there plus
   * `hours`) and whether that is still ahead, on the database's clock as the send's check
   * (inServiceWindows, with the contacts merged into it); undefined when the contact never wrote there.
   */
  async serviceWindow(
    db: Db,
    businessId: string,
    pair: { contact_id: string; channel_id: string; channel: string; hours: number },
  ): Promise<{ ends_at: string; open: boolean } | undefined> {
    const { rows } = await sql<{ ends_at: string; open: boolean }>`
      select m.created_at + ${pair.hours}::float8 * interval '1 hour' as ends_at,
        m.created_at > now() - ${pair.hours}::float8 * interval '1 hour' as open
      from ${historyIdsSql(businessId, sql<string>`${pair.contact_id}::uuid`)} k
      cross join lateral (
        select m.created_at from messages m
        where m.business_id = ${businessId} and m.contact_id = k.id and m.direction = 'inbound'
          and (m.channel_id = ${pair.channel_id} or (m.channel_id is null and m.channel = ${pair.channel}))
        order by m.created_at desc
        limit 1) m
      order by m.created_at desc
      limit 1`.execute(db);
    return rows[0];
  },

  /**
   * Whether a reply relayed by the channel under this key (the provider's id of the reply) was
   * accepted already for the contact (index messages_contact): a redelivered reply is sent once.
   */
  async hasRelayed(db: Db, businessId: string, contactId: string, relayedBy: string, key: string): Promise<boolean> {
    const row = await db
      .selectFrom('messages')
      .select('id')
      .where('business_id', '=', businessId)
      .where('contact_id', '=', contactId)
      .where('direction', '=', 'outbound')
      .where(sql<boolean>`metadata @> ${JSON.stringify({ relayed_by: relayedBy, relay_key: key })}::jsonb`)
      .limit(1)
      .executeTakeFirst();
    return row !== undefined;
  },

  /** A message of the conversation as a reply quotes it, or undefined when the conversation has none with this id. */
  inConversation(db: Db, businessId: string, conversationId: string, id: string) {
    return db
      .selectFrom('messages')
      .select(['id', 'conversation_id', 'type', 'text', 'direction', 'status', 'created_at'])
      .where('business_id', '=', businessId)
      .where('conversation_id', '=', conversationId)
      .where('id', '=', id)
      .executeTakeFirst();
  },

  /** The latest `limit` messages of a conversation, newest first (index messages_conversation, read backwards). */
  latestOfConversation(db: Db, businessId: string, conversationId: string, limit: number) {
    return db
      .selectFrom('messages')
      .select(['id', 'text', 'direction', 'status', 'error', 'created_at'])
      .where('business_id', '=', businessId)
      .where('conversation_id', '=', conversationId)
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(limit)
      .execute();
  },

  /**
   * The latest `limit` messages of a contact across its conversations, newest first (index
   * messages_contact), each with the identifier of its channel (the message's, else its
   * conversation's), for messages that recorded no addresses. `contactIds`: the contact's and those
   * merged into it (historyIds); one reads in index order, several are sorted.
   */
  latestOfContact(db: Db, businessId: string, contactIds: string[], limit: number) {
    return db
      .selectFrom('messages as m')
      .innerJoin('conversations as v', (j) =>
        j.onRef('v.business_id', '=', 'm.business_id').onRef('v.id', '=', 'm.conversation_id'),
      )
      .leftJoin('channels as ch', (j) =>
        j
          .onRef('ch.business_id', '=', 'm.business_id')
          .on((eb) => eb('ch.id', '=', eb.fn.coalesce('m.channel_id', 'v.channel_id'))),
      )
      .select([
        'm.id',
        'm.channel',
        'm.direction',
        'm.status',
        'm.text',
        'm.metadata',
        'm.sender_address',
        'm.recipient_address',
        'm.created_at',
        'ch.identifier as channel_identifier',
      ])
      .where('m.business_id', '=', businessId)
      .where('m.contact_id', 'in', contactIds)
      .orderBy('m.created_at', 'desc')
      .orderBy('m.id', 'desc')
      .limit(limit)
      .execute();
  },
  /** How many messages the contacts have (what deleting one and those merged into it removes; messages_contact). */
  async countOfContact(db: Db, businessId: string, contactIds: string[]): Promise<number> {
    const row = await db
      .selectFrom('messages')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('business_id', '=', businessId)
      .where('contact_id', 'in', contactIds)
      .executeTakeFirstOrThrow();
    return Number(row.n);
  },

  /**
   * One slice of a merge's move: up to `limit` messages of the hidden contact become the survivor's.
   * How many did; fewer than `limit` when none of its messages are left.
   */
  async moveToContact(db: Db, businessId: string, fromId: string, toId: string, limit: number): Promise<number> {
    const result = await sql`
      update messages set contact_id = ${toId}
      where business_id = ${businessId} and contact_id = ${fromId} and id = any(array(
        select id from messages where business_id = ${businessId} and contact_id = ${fromId} limit ${limit}))`.execute(
      db,
    );
    return Number(result.numAffectedRows ?? 0);
  },
};

export type ContactMessageRow = Awaited<ReturnType<typeof messagesRepository.latestOfContact>>[number];
