import { sql, type Selectable, type Updateable } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { ConversationsTable } from '../../db/types.ts';

export type ConversationRow = Selectable<ConversationsTable>;

/** A message by business and id. */
export interface MessageKey {
  businessId: string;
  id: string;
}

const messageColumns = [
  'id', 'business_id', 'conversation_id', 'contact_id', 'channel', 'channel_id', 'direction', 'type', 'status', 'error',
  'recipient_address', 'provider_message_id', 'outbound_content', 'provider_call_at', 'send_attempts', 'template_id',
] as const;

/** All SQL of sending: recipients' conversations, outbound messages and their delivery state. */
export const sendingRepository = {
  team(db: Db, businessId: string, id: string) {
    return db.selectFrom('teams').select(['id', 'name']).where('business_id', '=', businessId).where('id', '=', id).executeTakeFirst();
  },

  /**
   * Whether the contact wrote on this channel within the last 24 hours (the service window).
   * Messages recorded without a channel id (imports) count for channels of their type.
   */
  async inServiceWindow(db: Db, businessId: string, contactId: string, channel: { id: string; type: string }): Promise<boolean> {
    const row = await db
      .selectFrom('messages')
      .select('id')
      .where('business_id', '=', businessId)
      .where('contact_id', '=', contactId)
      .where('created_at', '>', sql<string>`now() - interval '24 hours'`)
      .where('direction', '=', 'inbound')
      .where((eb) => eb.or([eb('channel_id', '=', channel.id), eb.and([eb('channel_id', 'is', null), eb('channel', '=', channel.type)])]))
      .limit(1)
      .executeTakeFirst();
    return row !== undefined;
  },

  conversation(db: Db, businessId: string, id: string): Promise<ConversationRow> {
    return db.selectFrom('conversations').selectAll().where('business_id', '=', businessId).where('id', '=', id).executeTakeFirstOrThrow();
  },

  updateConversation(db: Db, businessId: string, id: string, changes: Updateable<ConversationsTable>): Promise<ConversationRow> {
    return db.updateTable('conversations').set(changes).where('business_id', '=', businessId).where('id', '=', id).returningAll().executeTakeFirstOrThrow();
  },

  /** An outbound message as the worker and the status endpoint need it. */
  outboundMessage(db: Db, businessId: string, id: string) {
    return db
      .selectFrom('messages')
      .select(messageColumns)
      .where('business_id', '=', businessId)
      .where('id', '=', id)
      .where('direction', '=', 'outbound')
      .executeTakeFirst();
  },

  /** Several outbound messages at once (see outboundMessage), keyed `${business_id}:${id}`. */
  async outboundMessages(db: Db, refs: MessageKey[]) {
    const rows = await db
      .selectFrom('messages')
      .select(messageColumns)
      .where(({ eb, refTuple, tuple }) => eb(refTuple('business_id', 'id'), 'in', refs.map((r) => tuple(r.businessId, r.id))))
      .where('direction', '=', 'outbound')
      .execute();
    return new Map(rows.map((row) => [`${row.business_id}:${row.id}`, row]));
  },

  /** markSent for several messages in one statement. */
  async markSentMany(db: Db, sent: (MessageKey & { providerMessageId: string })[]): Promise<void> {
    const values = JSON.stringify(sent.map((s) => ({ business_id: s.businessId, id: s.id, provider_message_id: s.providerMessageId })));
    await sql`
      update messages m
      set status = 'SENT', provider_message_id = v.provider_message_id, status_at = now(), provider_call_at = null, error = null
      from jsonb_to_recordset(${values}::jsonb) as v(business_id uuid, id uuid, provider_message_id text)
      where m.business_id = v.business_id and m.id = v.id and m.status = 'PENDING'`.execute(db);
  },

  /**
   * Records (and commits) that a provider call is about to start. False when the message is no longer
   * waiting to be sent (another worker finished it, or it was given up).
   */
  async startCall(db: Db, businessId: string, id: string): Promise<boolean> {
    const row = await db
      .updateTable('messages')
      .set((eb) => ({ provider_call_at: sql<string>`now()`, send_attempts: eb('send_attempts', '+', 1) }))
      .where('business_id', '=', businessId)
      .where('id', '=', id)
      .where('status', '=', 'PENDING')
      .where('provider_call_at', 'is', null)
      .returning('id')
      .executeTakeFirst();
    return row !== undefined;
  },

  /** The provider accepted the message; a receipt that already moved it further is kept. */
  async markSent(db: Db, businessId: string, id: string, providerMessageId: string): Promise<void> {
    await db
      .updateTable('messages')
      .set({ status: 'SENT', provider_message_id: providerMessageId, status_at: sql<string>`now()`, provider_call_at: null, error: null })
      .where('business_id', '=', businessId)
      .where('id', '=', id)
      .where('status', '=', 'PENDING')
      .execute();
  },

  /** The call failed but may be tried again: the message waits for its next attempt. */
  async endCall(db: Db, businessId: string, id: string, error: string): Promise<void> {
    await db
      .updateTable('messages')
      .set({ provider_call_at: null, error })
      .where('business_id', '=', businessId)
      .where('id', '=', id)
      .where('status', '=', 'PENDING')
      .execute();
  },

  /** The send failed for good (or its outcome cannot be known). */
  async markError(db: Db, businessId: string, id: string, error: string): Promise<void> {
    await db
      .updateTable('messages')
      .set({ status: 'ERROR', error, status_at: sql<string>`now()`, provider_call_at: null })
      .where('business_id', '=', businessId)
      .where('id', '=', id)
      .where('status', '=', 'PENDING')
      .execute();
  },
};
