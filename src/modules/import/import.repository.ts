import { sql, type RawBuilder } from 'kysely';
import type { Db } from '../../db/database.ts';
import { contactsRepository } from '../contacts/contacts.repository.ts';

/** Rows as the import stores them; timestamps are the ISO strings of the file, read by PostgreSQL. */
export interface ContactImportRow {
  id: string;
  first_name: string;
  last_name: string;
  email: string | null;
  phone_number: string | null;
  phone_key: string | null;
  external_id: string | null;
  tags: string[];
  custom_fields: Record<string, unknown>;
  is_test: boolean;
  created_at: string;
}

export interface ConversationImportRow {
  id: string;
  contact_id: string;
  channel: string;
  channel_id: string | null;
  created_at: string;
  closed_at: string | null;
}

export interface MessageImportRow {
  id: string;
  conversation_id: string;
  direction: string;
  sender_type: string;
  type: string;
  text: string;
  status: string;
  error: string | null;
  metadata: Record<string, unknown>;
  created_at: string;
}

export interface EventImportRow {
  id: string;
  conversation_id: string | null;
  contact_id: string;
  type: string;
  actor_type: string;
  data: Record<string, unknown>;
  created_at: string;
}

export type ImportTable = 'contacts' | 'conversations' | 'messages' | 'events';

/*
 * Each batch is one statement that answers how many rows went in. The hot tables (conversations,
 * messages) travel as one text[] parameter per column, read by unnest and cast by PostgreSQL
 * (timestamps keep their microseconds): far less parsing than thousands of placeholders or one JSON
 * document. Contacts and events (arrays of arrays, few rows) travel as one JSON parameter; contacts
 * are written by the contacts repository, with their identities.
 * ON CONFLICT on the primary key skips ids that exist; any other unique violation (a duplicate
 * external_id) fails the batch, and the caller retries it row by row. Rows referring to a parent that
 * is not this business's are left out by the join with the parents, read once per batch by primary
 * key (never a failure): the caller finds them as the rows that do not exist afterwards.
 * Parents are read through LATERAL ... LIMIT 1 (and the counters updated through = ANY(ARRAY(...)))
 * so that each is a primary-key probe whatever the statistics say: with statistics from when the
 * table was small, the planner otherwise reads all of the business's rows for every batch, and
 * every batch costs more than the one before.
 */
async function count(query: RawBuilder<{ n: number }>, db: Db): Promise<number> {
  const result = await query.execute(db);
  return result.rows[0]?.n ?? 0;
}

const column = <R, K extends keyof R>(rows: R[], key: K) => rows.map((r) => r[key]);
const distinct = (values: string[]) => [...new Set(values)];

export const importRepository = {
  /**
   * The ids of the contacts that went in (an id that exists is skipped), written by their owner's
   * writer with their identities in the same statement.
   */
  insertContacts(db: Db, businessId: string, rows: ContactImportRow[]): Promise<string[]> {
    return contactsRepository.insertImported(db, businessId, rows);
  },

  /** A conversation's channel_id, when given, names a channel of the business of the conversation's channel type. */
  insertConversations(db: Db, businessId: string, rows: ConversationImportRow[]): Promise<number> {
    return count(
      sql<{ n: number }>`
      WITH parent AS MATERIALIZED (
        SELECT k.id FROM unnest(${distinct(column(rows, 'contact_id'))}::text[]) AS u(id)
        CROSS JOIN LATERAL (SELECT id FROM contacts k WHERE k.business_id = ${businessId}::uuid AND k.id = u.id::uuid LIMIT 1) k
      ), inserted AS (
        INSERT INTO conversations (business_id, id, contact_id, channel, channel_id, created_at, closed_at)
        SELECT ${businessId}::uuid, r.id::uuid, p.id, r.channel, r.channel_id::uuid, r.created_at::timestamptz, r.closed_at::timestamptz
        FROM unnest(${column(rows, 'id')}::text[], ${column(rows, 'contact_id')}::text[], ${column(rows, 'channel')}::text[],
          ${column(rows, 'channel_id')}::text[], ${column(rows, 'created_at')}::text[], ${column(rows, 'closed_at')}::text[])
          AS r(id, contact_id, channel, channel_id, created_at, closed_at)
        JOIN parent p ON p.id = r.contact_id::uuid
        LEFT JOIN LATERAL (
          SELECT id FROM channels ch WHERE ch.business_id = ${businessId}::uuid AND ch.id = r.channel_id::uuid AND ch.type = r.channel LIMIT 1
        ) ch ON true
        WHERE r.channel_id IS NULL OR ch.id IS NOT NULL
        ON CONFLICT (business_id, id) DO NOTHING
        RETURNING 1
      )
      SELECT count(*)::int AS n FROM inserted`,
      db,
    );
  },

  /**
   * Messages take contact, channel and channel id from their conversation, and the conversation's
   * counters move in the same statement: one UPDATE row per conversation the batch touched. The
   * export flag is decided here from the conversation and its contact, as the messages_export_flags
   * trigger would (the trigger then skips these rows, migration 0006): one read per conversation
   * of the batch instead of one per message.
   */
  insertMessages(db: Db, businessId: string, rows: MessageImportRow[]): Promise<number> {
    const conversations = distinct(column(rows, 'conversation_id'));
    return count(
      sql<{ n: number }>`
      WITH parent AS MATERIALIZED (
        SELECT c.id, c.contact_id, c.channel, c.channel_id, coalesce(k.is_test OR c.is_internal OR c.is_group, false) AS excluded
        FROM unnest(${conversations}::text[]) AS u(id)
        CROSS JOIN LATERAL (SELECT * FROM conversations c WHERE c.business_id = ${businessId}::uuid AND c.id = u.id::uuid LIMIT 1) c
        LEFT JOIN LATERAL (SELECT is_test FROM contacts k WHERE k.business_id = c.business_id AND k.id = c.contact_id LIMIT 1) k ON true
      ), inserted AS (
        INSERT INTO messages (business_id, id, conversation_id, contact_id, channel, channel_id, direction, sender_type, type, text, status, error, metadata, created_at, excluded)
        SELECT ${businessId}::uuid, r.id::uuid, p.id, p.contact_id, p.channel, p.channel_id, r.direction, r.sender_type, r.type, r.text, r.status, r.error,
          r.metadata::jsonb, r.created_at::timestamptz, p.excluded
        FROM unnest(${column(rows, 'id')}::text[], ${column(rows, 'conversation_id')}::text[], ${column(rows, 'direction')}::text[],
          ${column(rows, 'sender_type')}::text[], ${column(rows, 'type')}::text[], ${column(rows, 'text')}::text[], ${column(rows, 'status')}::text[],
          ${column(rows, 'error')}::text[], ${rows.map((r) => JSON.stringify(r.metadata))}::text[], ${column(rows, 'created_at')}::text[])
          AS r(id, conversation_id, direction, sender_type, type, text, status, error, metadata, created_at)
        JOIN parent p ON p.id = r.conversation_id::uuid
        ON CONFLICT (business_id, id) DO NOTHING
        RETURNING conversation_id, created_at
      ), counted AS (
        UPDATE conversations c
        SET message_count = c.message_count + a.n, last_message_at = GREATEST(c.last_message_at, a.last)
        FROM (SELECT conversation_id, count(*)::int AS n, max(created_at) AS last FROM inserted GROUP BY conversation_id) a
        WHERE c.business_id = ${businessId}::uuid AND c.id = a.conversation_id
          AND c.id = ANY(ARRAY(SELECT id FROM parent))
      )
      SELECT count(*)::int AS n FROM inserted`,
      db,
    );
  },

  /**
   * An event's channel is its conversation's, which must be its contact's; events without a
   * conversation have none.
   */
  insertEvents(db: Db, businessId: string, rows: EventImportRow[]): Promise<number> {
    return count(
      sql<{ n: number }>`
      WITH inserted AS (
        INSERT INTO events (business_id, id, type, conversation_id, contact_id, channel, actor_type, data, created_at)
        SELECT ${businessId}::uuid, r.id, r.type, r.conversation_id, r.contact_id, cv.channel, r.actor_type, r.data, r.created_at
        FROM json_to_recordset(${JSON.stringify(rows)}::json) AS r(id uuid, type text, conversation_id uuid, contact_id uuid, actor_type text, data jsonb, created_at timestamptz)
        CROSS JOIN LATERAL (SELECT 1 FROM contacts c WHERE c.business_id = ${businessId}::uuid AND c.id = r.contact_id LIMIT 1) parent
        LEFT JOIN LATERAL (
          SELECT id, channel, contact_id FROM conversations cv WHERE cv.business_id = ${businessId}::uuid AND cv.id = r.conversation_id LIMIT 1
        ) cv ON true
        WHERE r.conversation_id IS NULL OR cv.contact_id = r.contact_id
        ON CONFLICT (business_id, id) DO NOTHING
        RETURNING 1
      )
      SELECT count(*)::int AS n FROM inserted`,
      db,
    );
  },

  /** Which of `ids` exist in `table` for this business (the slow path: after a batch left rows out). */
  async existing(db: Db, businessId: string, table: ImportTable, ids: string[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const result = await sql<{
      id: string;
    }>`SELECT id FROM ${sql.table(table)} WHERE business_id = ${businessId}::uuid AND id = ANY(${ids}::text[]::uuid[])`.execute(
      db,
    );
    return new Set(result.rows.map((r) => r.id));
  },
};
