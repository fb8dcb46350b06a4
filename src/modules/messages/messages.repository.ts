import type { Db } from '../../db/database.ts';

export const messagesRepository = {
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

  /** The latest `limit` messages of a contact across its conversations, newest first (index messages_contact). */
  latestOfContact(db: Db, businessId: string, contactId: string, limit: number) {
    return db
      .selectFrom('messages')
      .select(['id', 'channel', 'direction', 'status', 'text', 'metadata', 'sender_address', 'recipient_address', 'created_at'])
      .where('business_id', '=', businessId)
      .where('contact_id', '=', contactId)
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(limit)
      .execute();
  },
};

export type ContactMessageRow = Awaited<ReturnType<typeof messagesRepository.latestOfContact>>[number];
