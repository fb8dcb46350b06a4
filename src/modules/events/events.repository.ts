import { sql, type Insertable } from 'kysely';
import type { Db } from '../../db/database.ts';
import { inSlices } from '../../db/slices.ts';
import type { EventsTable } from '../../db/types.ts';

/** Rows of one insert of events (ten values each). */
const EVENTS_PER_STATEMENT = 1000;

/** An event as the import stores it; timestamps are the ISO strings of the file, read by PostgreSQL. */
export interface EventImportRow {
  id: string;
  conversation_id: string | null;
  contact_id: string;
  type: string;
  actor_type: string;
  data: Record<string, unknown>;
  created_at: string;
}

export type NewEvent = Omit<Insertable<EventsTable>, 'business_id' | 'id' | 'data'> & { data: Record<string, unknown> };

/** A keyset position: the created_at and id of the last record served. */
export interface EventPosition {
  createdAt: string;
  id: string;
}

export const eventsRepository = {
  /**
   * The rows, a statement per EVENTS_PER_STATEMENT of them: the values travel as parameters, which a
   * statement holds at most 65 535 of.
   */
  async insertMany(db: Db, rows: Insertable<EventsTable>[]): Promise<void> {
    if (rows.length === 0) return;
    for (const slice of inSlices(rows, EVENTS_PER_STATEMENT))
      await db
        .insertInto('events')
        .values(slice.map((r) => ({ ...r, data: JSON.stringify(r.data ?? {}) })))
        .execute();
  },

  /**
   * The events of an import batch in one statement; how many went in. An id that exists is skipped;
   * an event whose contact is not the business's, or whose conversation is not its contact's, is
   * left out (the caller finds it as a row that does not exist afterwards); one whose contact a merge
   * hid is the survivor's (contacts.merged_into). An event's channel is its conversation's; events
   * without a conversation have none. The rows travel as one JSON value.
   */
  async insertImported(db: Db, businessId: string, rows: EventImportRow[]): Promise<number> {
    const { rows: counted } = await sql<{ n: number }>`
      WITH inserted AS (
        INSERT INTO events (business_id, id, type, conversation_id, contact_id, channel, actor_type, data, created_at)
        SELECT ${businessId}::uuid, r.id, r.type, r.conversation_id, parent.id, cv.channel, r.actor_type, r.data, r.created_at
        FROM json_to_recordset(${JSON.stringify(rows)}::json) AS r(id uuid, type text, conversation_id uuid, contact_id uuid, actor_type text, data jsonb, created_at timestamptz)
        CROSS JOIN LATERAL (
          SELECT coalesce(c.merged_into, c.id) AS id FROM contacts c WHERE c.business_id = ${businessId}::uuid AND c.id = r.contact_id LIMIT 1
        ) parent
        LEFT JOIN LATERAL (
          SELECT id, channel, contact_id FROM conversations cv WHERE cv.business_id = ${businessId}::uuid AND cv.id = r.conversation_id LIMIT 1
        ) cv ON true
        WHERE r.conversation_id IS NULL OR cv.contact_id = parent.id
        ON CONFLICT (business_id, id) DO NOTHING
        RETURNING 1
      )
      SELECT count(*)::int AS n FROM inserted`.execute(db);
    return counted[0]?.n ?? 0;
  },
  /** How many events the contacts have (what deleting one removes with those merged into it; index events_contact). */
  async countOfContact(db: Db, businessId: string, contactIds: string[]): Promise<number> {
    const row = await db
      .selectFrom('events')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('business_id', '=', businessId)
      .where('contact_id', 'in', contactIds)
      .executeTakeFirstOrThrow();
    return Number(row.n);
  },

  /**
   * One slice of a merge's move: up to `limit` events of the hidden contact become the survivor's.
   * How many did; fewer than `limit` when none of its events are left.
   */
  async moveToContact(db: Db, businessId: string, fromId: string, toId: string, limit: number): Promise<number> {
    const result = await sql`
      update events set contact_id = ${toId}
      where business_id = ${businessId} and contact_id = ${fromId} and id = any(array(
        select id from events where business_id = ${businessId} and contact_id = ${fromId} limit ${limit}))`.execute(
      db,
    );
    return Number(result.numAffectedRows ?? 0);
  },

  /**
   * The conversation's events of `types` before a position, newest first (index
   * events_conversation_time read backwards), with the names of the user and the AI agent that acted.
   */
  ofConversation(
    db: Db,
    businessId: string,
    conversationId: string,
    types: readonly string[],
    before: EventPosition | undefined,
    limit: number,
  ) {
    let q = db
      .selectFrom('events as e')
      .leftJoin('users as u', (j) => j.onRef('u.business_id', '=', 'e.business_id').onRef('u.id', '=', 'e.user_id'))
      .leftJoin('agents as a', (j) => j.onRef('a.business_id', '=', 'e.business_id').onRef('a.id', '=', 'e.agent_id'))
      .select([
        'e.id',
        'e.type',
        'e.actor_type',
        'e.data',
        'e.created_at',
        'e.user_id',
        'u.name as user_name',
        'e.agent_id',
        'a.name as agent_name',
      ])
      .where('e.business_id', '=', businessId)
      .where('e.conversation_id', '=', conversationId)
      .where(sql<boolean>`e.type = any(${[...types]}::text[])`);
    if (before)
      q = q.where(sql<boolean>`(e.created_at, e.id) < (${before.createdAt}::timestamptz, ${before.id}::uuid)`);
    return q.orderBy('e.created_at', 'desc').orderBy('e.id', 'desc').limit(limit).execute();
  },
};

export type ConversationEventRow = Awaited<ReturnType<typeof eventsRepository.ofConversation>>[number];
