import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { CursorPosition } from '../../http/cursor.ts';

export const threadRepository = {
  /** Whether the conversation is the business's. */
  async conversationExists(db: Db, businessId: string, conversationId: string): Promise<boolean> {
    const row = await db
      .selectFrom('conversations')
      .select('id')
      .where('business_id', '=', businessId)
      .where('id', '=', conversationId)
      .executeTakeFirst();
    return row !== undefined;
  },

  /**
   * The conversation's messages before a position, newest first (index messages_conversation read
   * backwards), web-client copies left out, each with the names of the user and the AI agent that
   * sent it and the message it quotes.
   */
  messages(db: Db, businessId: string, conversationId: string, before: CursorPosition | undefined, limit: number) {
    let q = db
      .selectFrom('messages as m')
      .leftJoin('users as u', (j) => j.onRef('u.business_id', '=', 'm.business_id').onRef('u.id', '=', 'm.user_id'))
      .leftJoin('agents as a', (j) => j.onRef('a.business_id', '=', 'm.business_id').onRef('a.id', '=', 'm.agent_id'))
      .leftJoin('messages as q', (j) =>
        j.onRef('q.business_id', '=', 'm.business_id').onRef('q.id', '=', 'm.reply_to_id'),
      )
      .select([
        'm.id',
        'm.direction',
        'm.sender_type',
        'm.type',
        'm.text',
        'm.status',
        'm.error',
        'm.metadata',
        'm.outbound_content',
        'm.created_at',
        'm.user_id',
        'u.name as user_name',
        'm.agent_id',
        'a.name as agent_name',
        'm.reply_to_id',
        'q.type as reply_type',
        'q.text as reply_text',
        'q.direction as reply_direction',
      ])
      .where('m.business_id', '=', businessId)
      .where('m.conversation_id', '=', conversationId)
      .where(sql<boolean>`not m.duplicate`);
    if (before)
      q = q.where(sql<boolean>`(m.created_at, m.id) < (${before.createdAt}::timestamptz, ${before.id}::uuid)`);
    return q.orderBy('m.created_at', 'desc').orderBy('m.id', 'desc').limit(limit).execute();
  },
};

export type ThreadMessageRow = Awaited<ReturnType<typeof threadRepository.messages>>[number];
