import { sql, type RawBuilder } from 'kysely';
import type { Db } from '../../db/database.ts';

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
 * Each batch is one statement: the rows travel as one JSON parameter (no limit on bound parameters,
 * one parse) and json_to_recordset types them, so timestamps go from text to timestamptz with
 * their microseconds. ON CONFLICT on the primary key skips ids that exist; any other unique
 * violation (a duplicate external_id) fails the batch, and the service retries it row by row.
 * Rows referring to a parent that is not this business's are left out by the join (never a
 * failure), and RETURNING tells which rows went in. Parents are looked up through LATERAL ... LIMIT 1
 * (and the counter update through = ANY(ARRAY(...))) so that each is an index probe: as a plain
 * join the planner, which sees json_to_recordset as ~100 rows, hashes the business's whole
 * parent table, and every batch would cost more than the one before.
 */
async function ids(query: RawBuilder<{ id: string }>, db: Db): Promise<string[]> {
  const result = await query.execute(db);
  return result.rows.map((r) => r.id);
}

export const importRepository = {
  insertContacts(db: Db, businessId: string, rows: ContactImportRow[]): Promise<string[]> {
    return ids(sql<{ id: string }>`
      INSERT INTO contacts (business_id, id, first_name, last_name, email, phone_number, phone_key, external_id, tags, custom_fields, is_test, created_at, updated_at)
      SELECT ${businessId}::uuid, r.id, r.first_name, r.last_name, r.email, r.phone_number, r.phone_key, r.external_id, r.tags, r.custom_fields, r.is_test, r.created_at, r.created_at
      FROM json_to_recordset(${JSON.stringify(rows)}::json) AS r(id uuid, first_name text, last_name text, email text, phone_number text, phone_key text,
        external_id text, tags text[], custom_fields jsonb, is_test boolean, created_at timestamptz)
      ON CONFLICT (business_id, id) DO NOTHING
      RETURNING id`, db);
  },

  insertConversations(db: Db, businessId: string, rows: ConversationImportRow[]): Promise<string[]> {
    return ids(sql<{ id: string }>`
      INSERT INTO conversations (business_id, id, contact_id, channel, channel_id, created_at, closed_at)
      SELECT ${businessId}::uuid, r.id, r.contact_id, r.channel, r.channel_id, r.created_at, r.closed_at
      FROM json_to_recordset(${JSON.stringify(rows)}::json) AS r(id uuid, contact_id uuid, channel text, channel_id uuid, created_at timestamptz, closed_at timestamptz)
      CROSS JOIN LATERAL (SELECT 1 FROM contacts c WHERE c.business_id = ${businessId}::uuid AND c.id = r.contact_id LIMIT 1) parent
      ON CONFLICT (business_id, id) DO NOTHING
      RETURNING id`, db);
  },

  /**
   * Messages take contact, channel and channel id from their conversation, and the conversation's
   * counters move in the same statement: one UPDATE row per conversation the batch touched.
   */
  insertMessages(db: Db, businessId: string, rows: MessageImportRow[]): Promise<string[]> {
    return ids(sql<{ id: string }>`
      WITH inserted AS (
        INSERT INTO messages (business_id, id, conversation_id, contact_id, channel, channel_id, direction, sender_type, type, text, status, error, metadata, created_at)
        SELECT ${businessId}::uuid, r.id, r.conversation_id, c.contact_id, c.channel, c.channel_id, r.direction, r.sender_type, r.type, r.text, r.status, r.error, r.metadata, r.created_at
        FROM json_to_recordset(${JSON.stringify(rows)}::json) AS r(id uuid, conversation_id uuid, direction text, sender_type text, type text, text text,
          status text, error text, metadata jsonb, created_at timestamptz)
        CROSS JOIN LATERAL (
          SELECT contact_id, channel, channel_id FROM conversations c WHERE c.business_id = ${businessId}::uuid AND c.id = r.conversation_id LIMIT 1
        ) c
        ON CONFLICT (business_id, id) DO NOTHING
        RETURNING id, conversation_id, created_at
      ), counted AS (
        UPDATE conversations c
        SET message_count = c.message_count + a.n, last_message_at = GREATEST(c.last_message_at, a.last)
        FROM (SELECT conversation_id, count(*)::int AS n, max(created_at) AS last FROM inserted GROUP BY conversation_id) a
        WHERE c.business_id = ${businessId}::uuid AND c.id = a.conversation_id
          AND c.id = ANY(ARRAY(SELECT conversation_id FROM inserted))
      )
      SELECT id FROM inserted`, db);
  },

  /** An event's channel is its conversation's; events without a conversation have none. */
  insertEvents(db: Db, businessId: string, rows: EventImportRow[]): Promise<string[]> {
    return ids(sql<{ id: string }>`
      INSERT INTO events (business_id, id, type, conversation_id, contact_id, channel, actor_type, data, created_at)
      SELECT ${businessId}::uuid, r.id, r.type, r.conversation_id, r.contact_id, cv.channel, r.actor_type, r.data, r.created_at
      FROM json_to_recordset(${JSON.stringify(rows)}::json) AS r(id uuid, type text, conversation_id uuid, contact_id uuid, actor_type text, data jsonb, created_at timestamptz)
      CROSS JOIN LATERAL (SELECT 1 FROM contacts c WHERE c.business_id = ${businessId}::uuid AND c.id = r.contact_id LIMIT 1) parent
      LEFT JOIN LATERAL (
        SELECT id, channel FROM conversations cv WHERE cv.business_id = ${businessId}::uuid AND cv.id = r.conversation_id LIMIT 1
      ) cv ON true
      WHERE r.conversation_id IS NULL OR cv.id IS NOT NULL
      ON CONFLICT (business_id, id) DO NOTHING
      RETURNING id`, db);
  },

  /** Which of `ids` exist in `table` for this business (the slow path: after a batch left rows out). */
  async existing(db: Db, businessId: string, table: ImportTable, ids: string[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const result = await sql<{ id: string }>`SELECT id FROM ${sql.table(table)} WHERE business_id = ${businessId}::uuid AND id = ANY(ARRAY(SELECT jsonb_array_elements_text(${JSON.stringify(ids)}::jsonb)::uuid))`.execute(db);
    return new Set(result.rows.map((r) => r.id));
  },
};
