import { sql, type Insertable, type RawBuilder, type Selectable } from 'kysely';
import { canMoveStatus, type MessageStatus } from '../../channels/message-status.ts';
import type { Db } from '../../db/database.ts';
import { jsonRows } from '../../db/json-rows.ts';
import type { ConversationsTable, MediaTable, MessagesTable } from '../../db/types.ts';
import { identityKey, type AddressIdentity } from '../contacts/contact-identity.ts';
import {
  byIdentity,
  contactIdentitiesRepository,
  type IdentifiedContact,
} from '../contacts/contact-identities.repository.ts';
import type { ContactRow } from '../contacts/contacts.repository.ts';

export type ConversationRow = Selectable<ConversationsTable>;
export type MessageRow = Selectable<MessagesTable>;
/** What insertMessages answers of each message it inserted. */
export type InsertedMessage = Pick<MessageRow, 'id' | 'conversation_id' | 'provider_message_id' | 'created_at'>;

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

/** A new conversation of a contact on a channel. */
export type NewConversation = Pick<
  Insertable<ConversationsTable>,
  'business_id' | 'id' | 'contact_id' | 'channel' | 'channel_id' | 'tags'
>;

/** An attachment of an inbound message, by the provider's media id. */
export type NewMedia = Pick<
  Insertable<MediaTable>,
  'message_id' | 'provider_media_id' | 'content_type' | 'filename' | 'sha256'
>;

/** Which message a status change is about: our id, or the provider's id on one channel. */
export type MessageRef = { id: string } | { channelId: string; providerMessageId: string };

const allStatuses: MessageStatus[] = ['PENDING', 'SENT', 'DELIVERED', 'READ', 'ERROR', 'RECEIVED'];

/** The statuses a message may be in for a move to `to` to be allowed (canMoveStatus, as SQL). */
export const statusesBefore = (to: MessageStatus): MessageStatus[] =>
  allStatuses.filter((from) => canMoveStatus(from, to));

/**
 * The locks of messagingRepository.lock() on several keys, in the order given, as an expression (the
 * number of locks taken), so that a statement can take them and read something in one round trip.
 */
export function advisoryLocks(keys: { businessId: string; key: string }[]): RawBuilder<number> {
  const names = JSON.stringify(keys.map((k) => `${k.businessId}:${k.key}`));
  return sql<number>`(select count(pg_advisory_xact_lock(hashtextextended(k, 0))) from jsonb_array_elements_text(${names}::jsonb) as k)`;
}

/**
 * The SQL that writes messages and keeps their conversations (inbound notifications, sends,
 * imports of live traffic). Every function takes the caller's transaction.
 */
export const messagingRepository = {
  /**
   * The contacts the senders' addresses name (contactIdentitiesRepository.find), and in the same
   * statement the lock openConversations takes (`conversation:${contactId}:${channelId}`) for each
   * contact found and the channel given with its identity, all in one sorted order (as lockMany's
   * callers sort). A contact the caller creates afterwards needs no such lock: no other transaction
   * can see it until the commit. Keyed by identityKey.
   */
  async sendersByIdentity(
    db: Db,
    businessId: string,
    wanted: { identity: AddressIdentity; channelId: string }[],
  ): Promise<Map<string, ContactRow>> {
    if (wanted.length === 0) return new Map();
    const identities = [...new Map(wanted.map((w) => [identityKey(w.identity), w.identity])).values()];
    const { rows } = await sql<IdentifiedContact>`
      with found as materialized (${contactIdentitiesRepository.query(businessId, identities)}),
      locked as (
        select count(pg_advisory_xact_lock(hashtextextended(l.name, 0))) as n
        from (
          select distinct (${businessId}::text || ':conversation:' || f.id || ':' || w.channel_id) collate "C" as name
          from found f join ${jsonRows(
            'w',
            { kind: 'text', value: 'text', channel_id: 'text' },
            wanted.map((w) => ({ kind: w.identity.kind, value: w.identity.value, channel_id: w.channelId })),
          )} on w.kind = f.identity_kind and w.value = f.identity_value
          order by name) l)
      select found.* from found, locked`.execute(db);
    return byIdentity(rows);
  },

  /**
   * Transaction-scoped advisory locks, so concurrent writers that would create the same row take
   * turns: one statement, the locks taken in the order given (callers sort, so two writers locking
   * overlapping sets cannot deadlock). Keys are `{ businessId, key }` pairs.
   */
  async lockMany(db: Db, keys: { businessId: string; key: string }[]): Promise<void> {
    if (keys.length === 0) return;
    await sql`select ${advisoryLocks(keys)}`.execute(db);
  },

  /**
   * The latest conversation of each (contact, channel) pair, row-locked: one of the channel, else
   * one of the same channel type without a channel id (imported history). Keyed by
   * `${contact_id}:${channel_id}` (pairs without a conversation are absent).
   */
  async findConversations(
    db: Db,
    businessId: string,
    pairs: { contact_id: string; channel: string; channel_id: string }[],
  ): Promise<Map<string, ConversationRow>> {
    if (pairs.length === 0) return new Map();
    // LATERAL ... LIMIT 1: one probe of conversations_contact per pair (jsonRows).
    const { rows } = await sql<ConversationRow & { lookup: string }>`
      select p.contact_id || ':' || p.channel_id as lookup, c.*
      from ${jsonRows('p', { contact_id: 'uuid', channel: 'text', channel_id: 'uuid' }, pairs)}
      cross join lateral (
        select * from conversations c
        where c.business_id = ${businessId} and c.contact_id = p.contact_id and c.channel = p.channel
          and (c.channel_id = p.channel_id or c.channel_id is null)
        order by c.channel_id is null, c.created_at desc, c.id desc
        limit 1
        for update) c`.execute(db);
    return new Map(rows.map(({ lookup, ...row }) => [lookup, row]));
  },

  /** New conversations in one statement, their rows as one JSON value (jsonRows). */
  async insertConversations(db: Db, rows: NewConversation[]): Promise<ConversationRow[]> {
    if (rows.length === 0) return [];
    const { rows: inserted } = await sql<ConversationRow>`
      insert into conversations (business_id, id, contact_id, channel, channel_id, tags)
      select v.business_id, v.id, v.contact_id, v.channel, v.channel_id, coalesce(v.tags, '{}')
      from ${jsonRows('v', { business_id: 'uuid', id: 'uuid', contact_id: 'uuid', channel: 'text', channel_id: 'uuid', tags: 'text[]' }, rows)}
      returning *`.execute(db);
    return inserted;
  },

  /** Opens the conversation again and binds it to the channel (a no-op for fields already set). */
  async reopenConversation(db: Db, businessId: string, id: string, channelId: string): Promise<void> {
    await db
      .updateTable('conversations')
      .set({ closed_at: null, channel_id: channelId })
      .where('business_id', '=', businessId)
      .where('id', '=', id)
      .execute();
  },

  /** Binds a conversation without a channel id (imported) to the channel it is used on now. */
  async bindConversation(db: Db, businessId: string, id: string, channelId: string): Promise<void> {
    await db
      .updateTable('conversations')
      .set({ channel_id: channelId })
      .where('business_id', '=', businessId)
      .where('id', '=', id)
      .where('channel_id', 'is', null)
      .execute();
  },

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
    // The conversations are read by primary key, `id = any(array(...))`, as the import does: joined
    // to the counts alone, the planner chose a scan of the table below some hundred pages (0.5-2.7 ms
    // a statement at 2 300 conversations, measured with auto_explain).
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
        returning business_id, id, conversation_id, provider_message_id, created_at),
      counted as (
        update conversations c
        set message_count = c.message_count + v.n, last_message_at = greatest(c.last_message_at, v.last)
        from (select conversation_id as id, count(*)::integer as n, max(created_at) as last from inserted group by conversation_id) v
        where c.business_id = ${businessId} and c.id = any(array(select conversation_id from inserted)) and c.id = v.id)
      select id, conversation_id, provider_message_id, created_at from inserted`.execute(db);
    return { inserted };
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
   * Moves a message to `to` only when canMoveStatus allows it from its current status, in one
   * statement (so a receipt and the send worker racing cannot move it backwards). Undefined when the
   * message is unknown or the move is not allowed.
   */
  async moveStatus(
    db: Db,
    businessId: string,
    ref: MessageRef,
    to: MessageStatus,
    extra: { statusAt?: string; error?: string | null; providerMessageId?: string } = {},
  ) {
    const from = statusesBefore(to);
    if (from.length === 0) return undefined;
    let query = db
      .updateTable('messages')
      .set({
        status: to,
        status_at: extra.statusAt ?? sql<string>`now()`,
        ...(extra.error !== undefined ? { error: extra.error } : {}),
        ...(extra.providerMessageId !== undefined ? { provider_message_id: extra.providerMessageId } : {}),
      })
      .where('business_id', '=', businessId)
      // `= any` of one array: one statement text whatever the number of statuses, so it stays prepared.
      .where(sql<boolean>`status = any(${from}::text[])`);
    query =
      'id' in ref
        ? query.where('id', '=', ref.id)
        : query.where('channel_id', '=', ref.channelId).where('provider_message_id', '=', ref.providerMessageId);
    return query.returning(['id', 'conversation_id', 'contact_id', 'status', 'status_at']).executeTakeFirst();
  },

  /**
   * A receipt for a send whose provider id was never recorded, found by the id the provider echoed
   * (StatusUpdate.reference): records the provider id and the receipt's status. Only an outbound
   * message of the channel that went to the provider (an attempt started) and has no provider id,
   * still PENDING (the receipt came before the send's answer was stored) or in ERROR (the answer
   * never came: "outcome unknown"); a receipt proves the provider had the message, so here ERROR
   * gives way to what the receipt says. Never when another message of the channel holds the
   * provider id (a receipt whose reference and id disagree changes nothing).
   */
  recordByReference(
    db: Db,
    businessId: string,
    ref: { channelId: string; id: string },
    providerMessageId: string,
    to: MessageStatus,
    extra: { statusAt: string; error: string | null },
  ) {
    return db
      .updateTable('messages')
      .set({
        status: to,
        provider_message_id: providerMessageId,
        status_at: extra.statusAt,
        error: extra.error,
        provider_call_at: null,
      })
      .where('business_id', '=', businessId)
      .where('id', '=', ref.id)
      .where('channel_id', '=', ref.channelId)
      .where('direction', '=', 'outbound')
      .where('provider_message_id', 'is', null)
      .where('status', 'in', ['PENDING', 'ERROR'])
      .where('send_attempts', '>', 0)
      .where(({ not, exists, selectFrom }) =>
        not(
          exists(
            selectFrom('messages as held')
              .select('held.id')
              .where('held.business_id', '=', businessId)
              .where('held.channel_id', '=', ref.channelId)
              .where('held.provider_message_id', '=', providerMessageId),
          ),
        ),
      )
      .returning(['id', 'status'])
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

  /** Attachments of messages, in one statement; the bytes are fetched later (outbox kind `media_fetch`). */
  async insertMedia(db: Db, businessId: string, rows: NewMedia[]): Promise<void> {
    if (rows.length === 0) return;
    await sql`
      insert into media (business_id, message_id, provider_media_id, content_type, filename, sha256)
      select ${businessId}::uuid, v.message_id, v.provider_media_id, v.content_type, v.filename, v.sha256
      from ${jsonRows('v', { message_id: 'uuid', provider_media_id: 'text', content_type: 'text', filename: 'text', sha256: 'text' }, rows)}`.execute(
      db,
    );
  },
};
