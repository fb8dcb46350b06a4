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

  /**
   * The latest `limit` messages of a contact across its conversations, newest first (index
   * messages_contact), each with the identifier of its channel (the message's, else its
   * conversation's), for messages that recorded no addresses.
   */
  latestOfContact(db: Db, businessId: string, contactId: string, limit: number) {
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
      .where('m.contact_id', '=', contactId)
      .orderBy('m.created_at', 'desc')
      .orderBy('m.id', 'desc')
      .limit(limit)
      .execute();
  },
};

export type ContactMessageRow = Awaited<ReturnType<typeof messagesRepository.latestOfContact>>[number];
