import { sql, type Updateable } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { ConversationsTable } from '../../db/types.ts';

const columns = [
  'id',
  'contact_id',
  'channel',
  'closed_at',
  'manual_control',
  'manual_control_locked',
  'agent_id',
] as const;

export const conversationOpsRepository = {
  /** The conversation, locked for the operation's transaction. */
  findForUpdate(db: Db, businessId: string, id: string) {
    return db
      .selectFrom('conversations')
      .select(columns)
      .where('business_id', '=', businessId)
      .where('id', '=', id)
      .forUpdate()
      .executeTakeFirst();
  },

  /** Closes (now) or reopens the conversation. */
  setClosed(db: Db, businessId: string, id: string, closed: boolean) {
    return db
      .updateTable('conversations')
      .set({ closed_at: closed ? sql<string>`now()` : null })
      .where('business_id', '=', businessId)
      .where('id', '=', id)
      .returning(columns)
      .executeTakeFirstOrThrow();
  },

  update(db: Db, businessId: string, id: string, values: Updateable<ConversationsTable>) {
    return db
      .updateTable('conversations')
      .set(values)
      .where('business_id', '=', businessId)
      .where('id', '=', id)
      .returning(columns)
      .executeTakeFirstOrThrow();
  },
};

export type OpsConversationRow = NonNullable<Awaited<ReturnType<typeof conversationOpsRepository.findForUpdate>>>;
