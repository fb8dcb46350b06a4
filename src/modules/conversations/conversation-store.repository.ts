import { sql, type Insertable, type RawBuilder, type Selectable } from 'kysely';
import type { Db } from '../../db/database.ts';
import { jsonRows } from '../../db/json-rows.ts';
import type { ConversationsTable } from '../../db/types.ts';

export type ConversationRow = Selectable<ConversationsTable>;

/** A new conversation of a contact on a channel. */
export type NewConversation = Pick<
  Insertable<ConversationsTable>,
  'business_id' | 'id' | 'contact_id' | 'channel' | 'channel_id' | 'tags'
>;

/** A conversation as the import stores it; timestamps are the ISO strings of the file, read by PostgreSQL. */
export interface ConversationImportRow {
  id: string;
  contact_id: string;
  channel: string;
  channel_id: string | null;
  created_at: string;
  closed_at: string | null;
}

/**
 * Where conversations are created and kept as messages land in them (inbound notifications, sends,
 * imports): found and locked, inserted, reopened, bound to a channel, their counters moved. Every
 * function takes the caller's transaction.
 */
export const conversationStoreRepository = {
  /**
   * The latest conversation of each (contact, channel) pair, row-locked: one of the channel, else
   * one of the same channel type without a channel id (imported history). Keyed by
   * `${contact_id}:${channel_id}` (pairs without a conversation are absent).
   */
  async findLatest(
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

  /**
   * New conversations in one statement, their rows as one JSON value (jsonRows). Each gets its
   * channel's default AI agent (channels.agent_id), read in the same statement.
   */
  async insertMany(db: Db, rows: NewConversation[]): Promise<ConversationRow[]> {
    if (rows.length === 0) return [];
    const { rows: inserted } = await sql<ConversationRow>`
      insert into conversations (business_id, id, contact_id, channel, channel_id, tags, agent_id)
      select v.business_id, v.id, v.contact_id, v.channel, v.channel_id, coalesce(v.tags, '{}'),
        (select ch.agent_id from channels ch where ch.business_id = v.business_id and ch.id = v.channel_id)
      from ${jsonRows('v', { business_id: 'uuid', id: 'uuid', contact_id: 'uuid', channel: 'text', channel_id: 'uuid', tags: 'text[]' }, rows)}
      returning *`.execute(db);
    return inserted;
  },

  /** Opens the conversation again and binds it to the channel (a no-op for fields already set). */
  async reopen(db: Db, businessId: string, id: string, channelId: string): Promise<void> {
    await db
      .updateTable('conversations')
      .set({ closed_at: null, channel_id: channelId })
      .where('business_id', '=', businessId)
      .where('id', '=', id)
      .execute();
  },

  /** Binds a conversation without a channel id (imported) to the channel it is used on now. */
  async bind(db: Db, businessId: string, id: string, channelId: string): Promise<void> {
    await db
      .updateTable('conversations')
      .set({ channel_id: channelId })
      .where('business_id', '=', businessId)
      .where('id', '=', id)
      .where('channel_id', 'is', null)
      .execute();
  },

  /**
   * The part of a message insert's statement that moves each conversation's message_count and
   * last_message_at by the messages inserted into it: the statement names its inserted rows
   * `inserted` (with their conversation_id and created_at), and `candidates` selects the ids of the
   * conversations they may belong to. One statement with the insert, so the counters never differ
   * from the rows. The conversations are read by primary key, `id = any(array(...))`: joined to the
   * counts alone, the planner chose a scan of the table below some hundred pages (0.5-2.7 ms a
   * statement at 2 300 conversations, measured with auto_explain), and an import whose statistics
   * date from an empty table read all of the business's conversations for every batch.
   */
  countMessages(businessId: string, candidates: RawBuilder<unknown>): RawBuilder<unknown> {
    return sql`update conversations c
      set message_count = c.message_count + v.n, last_message_at = greatest(c.last_message_at, v.last)
      from (select conversation_id as id, count(*)::integer as n, max(created_at) as last from inserted group by conversation_id) v
      where c.business_id = ${businessId}::uuid and c.id = any(array(${candidates})) and c.id = v.id`;
  },

  /**
   * The conversations of an import batch in one statement; how many went in. An id that exists is
   * skipped; a conversation whose contact is not the business's is left out (the caller finds it as
   * a row that does not exist afterwards), and one whose contact a merge hid goes to the survivor
   * (contacts.merged_into); left out too is one whose channel_id, when given, names no channel
   * of the business of the conversation's channel type. The rows travel as one text[] parameter per
   * column, read by unnest and cast by PostgreSQL (timestamps keep their microseconds); the
   * contacts are read once per batch, each a primary-key probe (LATERAL ... LIMIT 1) whatever the
   * statistics say.
   */
  async insertImported(db: Db, businessId: string, rows: ConversationImportRow[]): Promise<number> {
    const column = <K extends keyof ConversationImportRow>(key: K) => rows.map((r) => r[key]);
    const { rows: counted } = await sql<{ n: number }>`
      WITH parent AS MATERIALIZED (
        SELECT k.id AS named, coalesce(k.merged_into, k.id) AS id FROM unnest(${[...new Set(column('contact_id'))]}::text[]) AS u(id)
        CROSS JOIN LATERAL (
          SELECT id, merged_into FROM contacts k WHERE k.business_id = ${businessId}::uuid AND k.id = u.id::uuid LIMIT 1
        ) k
      ), inserted AS (
        INSERT INTO conversations (business_id, id, contact_id, channel, channel_id, created_at, closed_at)
        SELECT ${businessId}::uuid, r.id::uuid, p.id, r.channel, r.channel_id::uuid, r.created_at::timestamptz, r.closed_at::timestamptz
        FROM unnest(${column('id')}::text[], ${column('contact_id')}::text[], ${column('channel')}::text[],
          ${column('channel_id')}::text[], ${column('created_at')}::text[], ${column('closed_at')}::text[])
          AS r(id, contact_id, channel, channel_id, created_at, closed_at)
        JOIN parent p ON p.named = r.contact_id::uuid
        LEFT JOIN LATERAL (
          SELECT id FROM channels ch WHERE ch.business_id = ${businessId}::uuid AND ch.id = r.channel_id::uuid AND ch.type = r.channel LIMIT 1
        ) ch ON true
        WHERE r.channel_id IS NULL OR ch.id IS NOT NULL
        ON CONFLICT (business_id, id) DO NOTHING
        RETURNING 1
      )
      SELECT count(*)::int AS n FROM inserted`.execute(db);
    return counted[0]?.n ?? 0;
  },
};
