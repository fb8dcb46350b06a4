import type { Db } from '../../db/database.ts';

/** A message as the widget shows it, with what tells whose it is. */
export interface VisitorMessageRow {
  id: string;
  contact_id: string | null;
  channel_id: string | null;
  provider_message_id: string | null;
  direction: string;
  sender_type: string;
  type: string;
  text: string;
  /** What the business sent (its files by URL), for its messages. */
  outbound_content: unknown;
  status: string;
  created_at: string;
}

const columns = [
  'id',
  'contact_id',
  'channel_id',
  'provider_message_id',
  'direction',
  'sender_type',
  'type',
  'text',
  'outbound_content',
  'status',
  'created_at',
] as const;

/** Reads for the widget's visitors (read-only: messages are written by the inbound and sending paths). */
export const visitorsRepository = {
  /** The latest `limit` messages of the contacts on one channel, newest first (index messages_contact). */
  history(db: Db, businessId: string, channelId: string, contactIds: string[], limit: number) {
    return db
      .selectFrom('messages')
      .select(columns)
      .where('business_id', '=', businessId)
      .where('contact_id', 'in', contactIds)
      .where('channel_id', '=', channelId)
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(limit)
      .execute() as Promise<VisitorMessageRow[]>;
  },

  /** Messages of the business by id (at most a page of them). */
  byIds(db: Db, businessId: string, ids: string[]) {
    if (ids.length === 0) return Promise.resolve([] as VisitorMessageRow[]);
    return db
      .selectFrom('messages')
      .select(columns)
      .where('business_id', '=', businessId)
      .where('id', 'in', ids)
      .execute() as Promise<VisitorMessageRow[]>;
  },

  /** The conversation of the contact's latest message on the channel (index messages_contact). */
  async latestConversation(db: Db, businessId: string, channelId: string, contactId: string) {
    const row = await db
      .selectFrom('messages')
      .select('conversation_id')
      .where('business_id', '=', businessId)
      .where('contact_id', '=', contactId)
      .where('channel_id', '=', channelId)
      .orderBy('created_at', 'desc')
      .limit(1)
      .executeTakeFirst();
    return row?.conversation_id;
  },
};
