import { sql, type Updateable } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { ConversationsTable } from '../../db/types.ts';
import type { ConversationRow } from './conversation-store.repository.ts';

const columns = [
  'id',
  'contact_id',
  'channel',
  'closed_at',
  'manual_control',
  'manual_control_locked',
  'agent_id',
  'assigned_user_id',
  'team_id',
] as const;

/**
 * The operations on conversations after they opened: the operator's (close, reopen, manual control,
 * assignment), a send's changes (bot_status, assignment, team, agent), a contact's (closing all its
 * conversations, its tags, a merge giving them to the survivor).
 */
export const conversationOpsRepository = {
  /** The whole conversation (a send's `fields=conversation`). */
  find(db: Db, businessId: string, id: string): Promise<ConversationRow> {
    return db
      .selectFrom('conversations')
      .selectAll()
      .where('business_id', '=', businessId)
      .where('id', '=', id)
      .executeTakeFirstOrThrow();
  },

  /** The whole conversation, or undefined when the business has none with this id. */
  get(db: Db, businessId: string, id: string): Promise<ConversationRow | undefined> {
    return db
      .selectFrom('conversations')
      .selectAll()
      .where('business_id', '=', businessId)
      .where('id', '=', id)
      .executeTakeFirst();
  },

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

  /**
   * How long the conversation has been quiet (seconds since its last message, or its creation, on the
   * database's clock), and whether it was resolved since (index events_conversation_time).
   */
  async quietState(db: Db, businessId: string, id: string) {
    const { rows } = await sql<{ quiet_seconds: number; resolved_since: boolean }>`
      select extract(epoch from now() - coalesce(c.last_message_at, c.created_at))::float8 as quiet_seconds,
        exists (select 1 from events e
          where e.business_id = c.business_id and e.conversation_id = c.id and e.type = 'conversation_resolved'
            and e.created_at >= coalesce(c.last_message_at, c.created_at)) as resolved_since
      from conversations c where c.business_id = ${businessId} and c.id = ${id}`.execute(db);
    return rows[0];
  },

  /**
   * Seconds since manual control was last turned on or unpinned (its newest manual_control_activated
   * or manual_control_unlocked), or null.
   */
  async manualControlAge(db: Db, businessId: string, id: string): Promise<number | null> {
    const { rows } = await sql<{ age: number }>`
      select extract(epoch from now() - e.created_at)::float8 as age from events e
      where e.business_id = ${businessId} and e.conversation_id = ${id} and e.type in ('manual_control_activated', 'manual_control_unlocked')
      order by e.created_at desc, e.id desc limit 1`.execute(db);
    return rows[0]?.age ?? null;
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

  /** Changes the conversation (a send's bot_status, assignment, team, agent), answering the whole row. */
  updateRow(db: Db, businessId: string, id: string, changes: Updateable<ConversationsTable>): Promise<ConversationRow> {
    return db
      .updateTable('conversations')
      .set(changes)
      .where('business_id', '=', businessId)
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirstOrThrow();
  },

  /**
   * Takes a removed user (`assigned_user_id`) or a deleted team (`team_id`) off every conversation of
   * the business, open or closed, in one statement (an index of migration 0022 leads with each);
   * answers the conversations it changed.
   */
  unassign(db: Db, businessId: string, column: 'assigned_user_id' | 'team_id', id: string) {
    return db
      .updateTable('conversations')
      .set({ [column]: null })
      .where('business_id', '=', businessId)
      .where(column, '=', id)
      .returning('id')
      .execute();
  },

  /** Closes every open conversation of the contact at the transaction's time. */
  closeOpenOfContact(db: Db, businessId: string, contactId: string) {
    return db
      .updateTable('conversations')
      .set({ closed_at: sql<string>`now()` })
      .where('business_id', '=', businessId)
      .where('contact_id', '=', contactId)
      .where('closed_at', 'is', null)
      .returning(['id', 'channel', 'closed_at'])
      .execute();
  },

  /**
   * A merge: the loser's conversations become the survivor's, and all of them take the survivor's
   * tags (those of both contacts), in one statement. Its messages and events follow in the background.
   */
  async moveToContact(db: Db, businessId: string, fromId: string, toId: string, tags: string[]): Promise<void> {
    await db
      .updateTable('conversations')
      .set({ contact_id: toId, tags })
      .where('business_id', '=', businessId)
      .where('contact_id', 'in', [fromId, toId])
      .execute();
  },

  /** Copies the contact's tag list onto all its conversations. */
  async setContactTags(db: Db, businessId: string, contactId: string, tags: string[]): Promise<void> {
    await db
      .updateTable('conversations')
      .set({ tags })
      .where('business_id', '=', businessId)
      .where('contact_id', '=', contactId)
      .execute();
  },
};

export type OpsConversationRow = NonNullable<Awaited<ReturnType<typeof conversationOpsRepository.findForUpdate>>>;
