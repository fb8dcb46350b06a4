import { sql, type SelectQueryBuilder } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { Database } from '../../db/types.ts';
import type { CursorPosition } from '../../http/cursor.ts';

/** One keyset page request: start (inclusive `since`, or strictly after a cursor position), end (exclusive). */
export interface PageRange {
  since: string;
  until: string;
  after?: CursorPosition;
  limit: number;
  channels?: string[];
}

/** Keyset bounds on (created_at, id): one index range, whatever the table's size. */
function bounded<DB, TB extends keyof DB & string, O>(q: SelectQueryBuilder<DB, TB, O>, alias: string, range: PageRange) {
  const created = sql.ref(`${alias}.created_at`);
  const id = sql.ref(`${alias}.id`);
  return q
    .where(range.after
      ? sql<boolean>`(${created}, ${id}) > (${range.after.createdAt}::timestamptz, ${range.after.id}::uuid)`
      : sql<boolean>`${created} >= ${range.since}::timestamptz`)
    .where(sql<boolean>`${created} < ${range.until}::timestamptz`)
    .orderBy(`${alias}.created_at` as never)
    .orderBy(`${alias}.id` as never)
    .limit(range.limit);
}

/** Columns of the message export form; agent, user and the first media are joined by primary key. */
export function messageExportColumns<O>(q: SelectQueryBuilder<Database, 'messages', O>) {
  return q
    .leftJoin('agents as a', (j) => j.onRef('a.business_id', '=', 'messages.business_id').onRef('a.id', '=', 'messages.agent_id'))
    .leftJoin('users as u', (j) => j.onRef('u.business_id', '=', 'messages.business_id').onRef('u.id', '=', 'messages.user_id'))
    .leftJoinLateral(
      (eb) => eb.selectFrom('media').select(['media.id', 'media.filename', 'media.content_type'])
        .whereRef('media.business_id', '=', 'messages.business_id').whereRef('media.message_id', '=', 'messages.id')
        .orderBy('media.id').limit(1).as('md'),
      (j) => j.onTrue(),
    )
    .select([
      'messages.id', 'messages.conversation_id', 'messages.contact_id', 'messages.channel', 'messages.direction',
      'messages.sender_type', 'messages.type', 'messages.text', 'messages.reply_to_id', 'messages.status',
      'messages.error', 'messages.created_at',
      'a.id as agent_ref', 'a.name as agent_name', 'u.id as user_ref', 'u.name as user_name', 'u.email as user_email',
      'md.id as media_id', 'md.filename as media_filename', 'md.content_type as media_content_type',
    ]);
}

/** Columns of the event record; agent and user joined by primary key. */
export function eventExportColumns<O>(q: SelectQueryBuilder<Database, 'events', O>) {
  return q
    .leftJoin('agents as a', (j) => j.onRef('a.business_id', '=', 'events.business_id').onRef('a.id', '=', 'events.agent_id'))
    .leftJoin('users as u', (j) => j.onRef('u.business_id', '=', 'events.business_id').onRef('u.id', '=', 'events.user_id'))
    .select([
      'events.id', 'events.type', 'events.conversation_id', 'events.contact_id', 'events.channel', 'events.actor_type',
      'events.data', 'events.created_at',
      'a.id as agent_ref', 'a.name as agent_name', 'u.id as user_ref', 'u.name as user_name', 'u.email as user_email',
    ]);
}

export const exportsRepository = {
  /** A page of exported messages, oldest first (partial index messages_export). */
  messagesPage(db: Db, businessId: string, range: PageRange) {
    return exportsRepository.messagesPageQuery(db, businessId, range).execute();
  },

  /** The query of messagesPage, unexecuted (EXPLAIN in tests and benchmarks). */
  messagesPageQuery(db: Db, businessId: string, range: PageRange) {
    let q = messageExportColumns(db.selectFrom('messages'))
      .where('messages.business_id', '=', businessId)
      // Literal predicates (not parameters), so the planner proves the partial index applies.
      .where(sql<boolean>`not messages.excluded and not messages.duplicate`);
    if (range.channels) q = q.where('messages.channel', 'in', range.channels);
    return bounded(q, 'messages', range);
  },

  /** A page of exported events, oldest first (partial index events_export). */
  eventsPage(db: Db, businessId: string, range: PageRange & { types?: string[] }) {
    return exportsRepository.eventsPageQuery(db, businessId, range).execute();
  },

  /** The query of eventsPage, unexecuted. */
  eventsPageQuery(db: Db, businessId: string, range: PageRange & { types?: string[] }) {
    let q = eventExportColumns(db.selectFrom('events'))
      .where('events.business_id', '=', businessId)
      .where(sql<boolean>`not events.excluded`);
    if (range.channels) q = q.where('events.channel', 'in', range.channels);
    if (range.types) q = q.where('events.type', 'in', range.types);
    return bounded(q, 'events', range);
  },
};

export type MessageExportRow = Awaited<ReturnType<typeof exportsRepository.messagesPage>>[number];
export type EventExportRow = Awaited<ReturnType<typeof exportsRepository.eventsPage>>[number];
