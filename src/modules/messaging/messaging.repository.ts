import { sql, type Insertable, type Selectable } from 'kysely';
import { canMoveStatus, type MessageStatus } from '../../channels/message-status.ts';
import type { Db } from '../../db/database.ts';
import type { ConversationsTable, MediaTable, MessagesTable } from '../../db/types.ts';

export type ConversationRow = Selectable<ConversationsTable>;
export type MessageRow = Selectable<MessagesTable>;

/** Which message a status change is about: our id, or the provider's id on one channel. */
export type MessageRef = { id: string } | { channelId: string; providerMessageId: string };

const allStatuses: MessageStatus[] = ['PENDING', 'SENT', 'DELIVERED', 'READ', 'ERROR', 'RECEIVED'];

/** The statuses a message may be in for a move to `to` to be allowed (canMoveStatus, as SQL). */
export const statusesBefore = (to: MessageStatus): MessageStatus[] => allStatuses.filter((from) => canMoveStatus(from, to));

/**
 * The SQL that writes messages and keeps their conversations (inbound notifications, sends,
 * imports of live traffic). Every function takes the caller's transaction.
 */
export const messagingRepository = {
  /** A transaction-scoped advisory lock, so concurrent writers that would create the same row take turns. */
  async lock(db: Db, businessId: string, key: string): Promise<void> {
    await sql`select pg_advisory_xact_lock(hashtextextended(${`${businessId}:${key}`}, 0))`.execute(db);
  },

  /**
   * The contact's latest conversation on a channel, row-locked. A conversation of the same channel
   * type without a channel id (imported history) counts too, after those of this channel.
   */
  findConversation(db: Db, businessId: string, where: { contactId: string; channel: string; channelId: string }) {
    return db
      .selectFrom('conversations')
      .selectAll()
      .where('business_id', '=', businessId)
      .where('contact_id', '=', where.contactId)
      .where('channel', '=', where.channel)
      .where((eb) => eb.or([eb('channel_id', '=', where.channelId), eb('channel_id', 'is', null)]))
      .orderBy(sql`channel_id is null`)
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(1)
      .forUpdate()
      .executeTakeFirst();
  },

  insertConversation(db: Db, row: Insertable<ConversationsTable>): Promise<ConversationRow> {
    return db.insertInto('conversations').values(row).returningAll().executeTakeFirstOrThrow();
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
   * Inserts a message unless one with the same provider message id exists on the channel (the
   * provider redelivered it); undefined then. The conversation's message_count and last_message_at
   * move only when a row was inserted.
   */
  async insertMessage(db: Db, row: Insertable<MessagesTable>): Promise<MessageRow | undefined> {
    const inserted = await db
      .insertInto('messages')
      .values({ ...row, metadata: JSON.stringify(row.metadata ?? {}) })
      .onConflict((oc) => oc.columns(['business_id', 'channel_id', 'provider_message_id']).doNothing())
      .returningAll()
      .executeTakeFirst();
    if (!inserted) return undefined;
    await db
      .updateTable('conversations')
      .set((eb) => ({
        message_count: eb('message_count', '+', 1),
        // greatest() skips nulls: the first message sets it.
        last_message_at: sql<string>`greatest(last_message_at, ${inserted.created_at}::timestamptz)`,
      }))
      .where('business_id', '=', row.business_id)
      .where('id', '=', inserted.conversation_id)
      .execute();
    return inserted;
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
      .where('status', 'in', from);
    query = 'id' in ref
      ? query.where('id', '=', ref.id)
      : query.where('channel_id', '=', ref.channelId).where('provider_message_id', '=', ref.providerMessageId);
    return query.returning(['id', 'conversation_id', 'contact_id', 'status', 'status_at']).executeTakeFirst();
  },

  /** An attachment of a message; the bytes are fetched later (outbox kind `media_fetch`). */
  insertMedia(db: Db, row: Insertable<MediaTable>) {
    return db.insertInto('media').values(row).returning(['id']).executeTakeFirstOrThrow();
  },
};
