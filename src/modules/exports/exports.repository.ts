import { sql, type Expression, type InferResult, type SelectQueryBuilder } from 'kysely';
import type { Db } from '../../db/database.ts';
import { isoTimestampSql } from '../../db/timestamps.ts';
import type { Database } from '../../db/types.ts';
import type { CursorPosition } from '../../http/cursor.ts';
import { shownContactId } from '../contacts/contacts.repository.ts';

/** One keyset page request: start (inclusive `since`, or strictly after a cursor position), end (exclusive). */
export interface PageRange {
  since: string;
  until: string;
  after?: CursorPosition;
  limit: number;
  channels?: string[];
}

/** Keyset bounds on alias.(created_at, id): one index range, whatever the table's size. */
function keyset(alias: string, range: PageRange) {
  const created = sql.ref(`${alias}.created_at`);
  const id = sql.ref(`${alias}.id`);
  return range.after
    ? sql<boolean>`(${created}, ${id}) > (${range.after.createdAt}::timestamptz, ${range.after.id}::uuid) and ${created} < ${range.until}::timestamptz`
    : sql<boolean>`${created} >= ${range.since}::timestamptz and ${created} < ${range.until}::timestamptz`;
}

/** The keyset bounds, key order and limit on a query builder. */
function bounded<DB, TB extends keyof DB & string, O>(
  q: SelectQueryBuilder<DB, TB, O>,
  alias: string,
  range: PageRange,
) {
  return q
    .where(keyset(alias, range))
    .orderBy(`${alias}.created_at` as never)
    .orderBy(`${alias}.id` as never)
    .limit(range.limit);
}

/** Columns of the message export form; agent, user and the first media are joined by primary key. */
export function messageExportColumns<O>(q: SelectQueryBuilder<Database, 'messages', O>) {
  return q
    .leftJoin('agents as a', (j) =>
      j.onRef('a.business_id', '=', 'messages.business_id').onRef('a.id', '=', 'messages.agent_id'),
    )
    .leftJoin('users as u', (j) =>
      j.onRef('u.business_id', '=', 'messages.business_id').onRef('u.id', '=', 'messages.user_id'),
    )
    .leftJoinLateral(
      (eb) =>
        eb
          .selectFrom('media')
          .select(['media.id', 'media.filename', 'media.content_type'])
          .whereRef('media.business_id', '=', 'messages.business_id')
          .whereRef('media.message_id', '=', 'messages.id')
          .orderBy('media.created_at')
          .orderBy('media.id')
          .limit(1)
          .as('md'),
      (j) => j.onTrue(),
    )
    .select([
      'messages.id',
      'messages.conversation_id',
      shownContactId('messages').as('contact_id'),
      'messages.channel',
      'messages.direction',
      'messages.sender_type',
      'messages.type',
      'messages.text',
      'messages.reply_to_id',
      'messages.status',
      'messages.error',
      'messages.created_at',
      'a.id as agent_ref',
      'a.name as agent_name',
      'u.id as user_ref',
      'u.name as user_name',
      'u.email as user_email',
      'md.id as media_id',
      'md.filename as media_filename',
      'md.content_type as media_content_type',
    ]);
}

/** Columns of the event record; agent and user joined by primary key. */
export function eventExportColumns<O>(q: SelectQueryBuilder<Database, 'events', O>) {
  return q
    .leftJoin('agents as a', (j) =>
      j.onRef('a.business_id', '=', 'events.business_id').onRef('a.id', '=', 'events.agent_id'),
    )
    .leftJoin('users as u', (j) =>
      j.onRef('u.business_id', '=', 'events.business_id').onRef('u.id', '=', 'events.user_id'),
    )
    .select([
      'events.id',
      'events.type',
      'events.conversation_id',
      shownContactId('events').as('contact_id'),
      'events.channel',
      'events.actor_type',
      'events.data',
      'events.created_at',
      'a.id as agent_ref',
      'a.name as agent_name',
      'u.id as user_ref',
      'u.name as user_name',
      'u.email as user_email',
    ]);
}

/*
 * The export pages: the database writes each record in the contract's export form as JSON text
 * (row_to_json over a row whose column names are the keys), and the service joins the records into
 * the answer as they are, instead of decoding ~20 columns a record and serialising them again. On
 * PostgreSQL that moves the work from the service to the database at about the same total cost; on
 * PGlite, where every field crosses from WebAssembly to JavaScript, a page is produced 1.8 times
 * faster (docs/PERFORMANCE-CHOICES.md#answers-written-by-the-database). The records are then joined
 * into the page by the database too (joinedPage), with string_agg over the record texts (an earlier
 * trial that built the page with json_agg over the rows cost more than joining them in the service).
 */

/** Timestamps as the API prints them everywhere (src/db/timestamps.ts): UTC, six fraction digits, 'Z'. */
const isoCreatedAt = (alias: string) => sql.raw(isoTimestampSql(`${alias}.created_at`));

/** Agent and user by primary key, looked up only for the records that name one. */
const agentOf = (alias: string) =>
  sql.raw(`case when ${alias}.agent_id is null then null else (select json_build_object('id', a.id, 'name', a.name) from agents a
    where a.business_id = ${alias}.business_id and a.id = ${alias}.agent_id) end`);
const userOf = (alias: string) =>
  sql.raw(`case when ${alias}.user_id is null then null else (select json_build_object('id', u.id, 'name', u.name, 'email', u.email) from users u
    where u.business_id = ${alias}.business_id and u.id = ${alias}.user_id) end`);

/*
 * A record's contact is shown as readers see it: the survivor for a row of a contact a merge hid,
 * whose rows move to the survivor a slice at a time (shownContactId).
 */
const messageRecord = sql`(select m.id, m.conversation_id, ${shownContactId('m')} as contact_id, m.channel, m.direction, m.sender_type,
  ${agentOf('m')} as agent, ${userOf('m')} as "user", m.type, m.text,
  (select json_build_object('id', f.id, 'filename', f.filename, 'content_type', f.content_type) from media f
    where f.business_id = m.business_id and f.message_id = m.id order by f.created_at, f.id limit 1) as media,
  m.reply_to_id, m.status, m.error, ${isoCreatedAt('m')} as created_at)`;

const eventRecord = sql`(select e.id, e.type, e.conversation_id, ${shownContactId('e')} as contact_id, e.channel, e.actor_type,
  ${agentOf('e')} as agent, ${userOf('e')} as "user", e.data, ${isoCreatedAt('e')} as created_at)`;

const record = sql<string>`row_to_json(r)::text`.as('record');

/** `column = any(values)`: one statement text whatever the number of values, so it stays prepared. */
const anyOf = (column: string, values: string[]) => sql<boolean>`${sql.ref(column)} = any(${values}::text[])`;

/** A page's records joined into one text by the database, the last of them, and whether more follow. */
export interface JoinedPage {
  /** The first `limit` records, comma-separated ('' for none). */
  records: string;
  /** The last of those records (null for none): the cursor's position. */
  last: string | null;
  /** A further record exists after them. */
  more: boolean;
}

/**
 * Runs a records query (LIMIT limit + 1, key order) and has the database join the first `limit`
 * records: the service receives one row instead of 501, which it neither decodes nor joins (in the
 * service's CPU profile of an export walk, a fifth of the time was garbage collection of those
 * rows). The records are numbered in the key order they were read in.
 */
async function joinedPage(
  db: Db,
  records: Expression<{ record: string; k_at: string; k_id: string }>,
  limit: number,
): Promise<JoinedPage> {
  const { rows } = await sql<{ records: string | null; last: string | null; total: number }>`
    select string_agg(record, ',' order by n) filter (where n <= ${limit}) as records,
           min(record) filter (where n = ${limit}) as last,
           count(*)::integer as total
    from (select p.record, row_number() over (order by p.k_at, p.k_id) as n from (${records}) p) r`.execute(db);
  const row = rows[0];
  return { records: row.records ?? '', last: row.last, more: row.total > limit };
}

export const exportsRepository = {
  /** One page of exported messages (`range.limit` of them), joined by the database (joinedPage). */
  messagePage(db: Db, businessId: string, range: PageRange): Promise<JoinedPage> {
    const q = exportsRepository
      .messageRecordsQuery(db, businessId, { ...range, limit: range.limit + 1 })
      .select(['m.created_at as k_at', 'm.id as k_id']);
    return joinedPage(db, q, range.limit);
  },

  /** Exported messages as JSON records (`record`), oldest first: one range of the partial index messages_export. */
  messageRecordsQuery(db: Db, businessId: string, range: PageRange) {
    let q = db
      .selectFrom('messages as m')
      .innerJoinLateral(messageRecord.as('r'), (j) => j.onTrue())
      .select(record)
      .where('m.business_id', '=', businessId)
      // Literal predicates (not parameters), so the planner proves the partial index applies.
      .where(sql<boolean>`not m.excluded and not m.duplicate`);
    if (range.channels) q = q.where(anyOf('m.channel', range.channels));
    return bounded(q, 'm', range);
  },

  /** One page of exported events (`range.limit` of them), joined by the database (joinedPage). */
  eventPage(db: Db, businessId: string, range: PageRange & { types?: string[] }): Promise<JoinedPage> {
    const q = exportsRepository
      .eventRecordsQuery(db, businessId, { ...range, limit: range.limit + 1 })
      .select(['e.created_at as k_at', 'e.id as k_id']);
    return joinedPage(db, q, range.limit);
  },

  /** Exported events as JSON records (`record`), oldest first: one range of the partial index events_export. */
  eventRecordsQuery(db: Db, businessId: string, range: PageRange & { types?: string[] }) {
    let q = db
      .selectFrom('events as e')
      .innerJoinLateral(eventRecord.as('r'), (j) => j.onTrue())
      .select(record)
      .where('e.business_id', '=', businessId)
      .where(sql<boolean>`not e.excluded`);
    if (range.channels) q = q.where(anyOf('e.channel', range.channels));
    if (range.types) q = q.where(anyOf('e.type', range.types));
    return bounded(q, 'e', range);
  },

  /**
   * The same keyset range decoded as rows of messageExportColumns (the form the timeline maps in the
   * service): the comparison baseline of bench/exports.bench.ts, which walks it straight on the database.
   */
  messageRows(db: Db, businessId: string, range: PageRange) {
    let q = messageExportColumns(db.selectFrom('messages'))
      .where('messages.business_id', '=', businessId)
      .where(sql<boolean>`not messages.excluded and not messages.duplicate`);
    if (range.channels) q = q.where(anyOf('messages.channel', range.channels));
    return bounded(q, 'messages', range).execute();
  },
};

/** A row of messageExportColumns / eventExportColumns (the timeline maps them with exports.mappers.ts). */
export type MessageExportRow = InferResult<ReturnType<typeof messageExportColumns<object>>>[number];
export type EventExportRow = InferResult<ReturnType<typeof eventExportColumns<object>>>[number];
