import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';

/** A user's read position in a conversation. */
export interface ReadPosition {
  last_read_message_id: string;
  last_read_message_at: string;
  read_at: string;
}

const columns = ['last_read_message_id', 'last_read_message_at', 'read_at'] as const;

export const conversationReadsRepository = {
  /**
   * Moves the user's read position in the conversation to its message `messageId`, or to its
   * latest message when none is named; only forward, so a page opened earlier cannot mark read
   * messages unread again. Answers the position moved to, or undefined when it did not move (the
   * message is not of the conversation, the conversation has none, or the position is further on).
   */
  async moveTo(
    db: Db,
    businessId: string,
    userId: string,
    conversationId: string,
    messageId: string | undefined,
  ): Promise<ReadPosition | undefined> {
    const target = db
      .selectFrom('messages as m')
      .select([
        sql<string>`${businessId}::uuid`.as('business_id'),
        sql<string>`${userId}::uuid`.as('user_id'),
        'm.conversation_id',
        'm.id',
        'm.created_at',
      ])
      .where('m.business_id', '=', businessId)
      .where('m.conversation_id', '=', conversationId);
    const message =
      messageId === undefined
        ? target.orderBy('m.created_at', 'desc').orderBy('m.id', 'desc').limit(1)
        : target.where('m.id', '=', messageId);
    return db
      .insertInto('conversation_reads')
      .columns(['business_id', 'user_id', 'conversation_id', 'last_read_message_id', 'last_read_message_at'])
      .expression(message)
      .onConflict((oc) =>
        oc
          .columns(['business_id', 'user_id', 'conversation_id'])
          .doUpdateSet({
            last_read_message_id: (eb) => eb.ref('excluded.last_read_message_id'),
            last_read_message_at: (eb) => eb.ref('excluded.last_read_message_at'),
            read_at: sql<string>`now()`,
          })
          .where(
            sql<boolean>`(conversation_reads.last_read_message_at, conversation_reads.last_read_message_id)
              < (excluded.last_read_message_at, excluded.last_read_message_id)`,
          ),
      )
      .returning(columns)
      .executeTakeFirst();
  },

  find(db: Db, businessId: string, userId: string, conversationId: string): Promise<ReadPosition | undefined> {
    return db
      .selectFrom('conversation_reads')
      .select(columns)
      .where('business_id', '=', businessId)
      .where('user_id', '=', userId)
      .where('conversation_id', '=', conversationId)
      .executeTakeFirst();
  },
};
