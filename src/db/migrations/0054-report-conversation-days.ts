import { sql, type Kysely } from 'kysely';

/**
 * `conversation_days`: per business, day (in the business's zone) and conversation with a counted
 * message from the contact or a reply: the contact's first message of that day, the first answer
 * after it (whenever it came, and who gave it) and the first resolution after it; whether the AI and
 * whether a person replied that day; and the conversation's previous day of each of the three (a
 * contact's message, an AI reply, a person's reply). A period's first response and resolution of a
 * conversation are those of its day in the period whose previous day with a contact's message is
 * before the period (or none), and the conversations the AI replied in are its days whose previous
 * AI day is: one row per conversation, read without sorting or grouping, instead of from its quarter
 * hours and messages (docs/REPORTS.md#speed-at-scale).
 *
 * Triggers keep it from the messages and events themselves, as they keep message_quarters:
 * - a statement's new contact messages add or move their day's first message, its answer and
 *   resolution probed then; its new replies mark their day and shorten the waits they end sooner;
 *   the previous days of the conversations it wrote are linked again; new resolutions shorten waits;
 * - a message that stops or starts being counted, or is deleted, has its conversation counted again,
 *   and so does a resolution whose `excluded` flag changes or that is deleted;
 * - a change of the business's time zone counts its days again (every conversation of the business,
 *   in the transaction that changes it).
 *
 * Also the indexes of the conversations opened in a period and of test contacts (below).
 */
const COUNTED = (m: string) => `NOT ${m}.excluded AND NOT ${m}.duplicate`;
const ASK = (m: string) => `${m}.direction = 'inbound' AND ${m}.sender_type = 'contact' AND ${COUNTED(m)}`;
const RESPONDER = (m: string) =>
  `${m}.direction = 'outbound' AND ${m}.sender_type IN ('ai_agent', 'human', 'api') AND ${COUNTED(m)}`;
const RESOLUTION = (e: string) => `${e}.type = 'conversation_resolved' AND NOT ${e}.excluded`;

const COLUMNS = `business_id, day, conversation_id, asked_at, ai_replied, person_replied, reply_at, reply_id,
  reply_sender, reply_user, resolved_at`;
const PREVIOUS_DAYS = 'previous_day, previous_ai_day, previous_person_day';
/** A day's contact message and what it waited for, which move together when an earlier one comes. */
const ASKED = ['asked_at', 'reply_at', 'reply_id', 'reply_sender', 'reply_user', 'resolved_at'];
/** In an upsert (`d` the kept row), the new rows' first contact message of the day came earlier. */
const EARLIER = `excluded.asked_at < coalesce(d.asked_at, 'infinity')`;

/**
 * The rows the contact messages and replies of `source` (as `m`) matching `where` make, each day's
 * first contact message with its answer and resolution probed through messages_conversation and
 * events_conversation_time.
 */
const dayRows = (source: string, where = 'TRUE') => `
  SELECT a.business_id, a.day, a.conversation_id, a.asked_at, a.ai_replied, a.person_replied, r.created_at, r.id,
    r.sender_type, r.user_id, v.resolved_at
  FROM (
    SELECT m.business_id, (m.created_at AT TIME ZONE z.time_zone)::date AS day, m.conversation_id,
      min(m.created_at) FILTER (WHERE ${ASK('m')}) AS asked_at,
      coalesce(bool_or(${RESPONDER('m')} AND m.sender_type = 'ai_agent'), false) AS ai_replied,
      coalesce(bool_or(${RESPONDER('m')} AND m.sender_type IN ('human', 'api')), false) AS person_replied
    FROM ${source} m JOIN businesses z ON z.id = m.business_id
    WHERE (${ASK('m')} OR ${RESPONDER('m')}) AND ${where}
    GROUP BY 1, 2, 3
  ) a
  LEFT JOIN LATERAL (
    SELECT r.created_at, r.id, r.sender_type, r.user_id FROM messages r
    WHERE a.asked_at IS NOT NULL AND r.business_id = a.business_id AND r.conversation_id = a.conversation_id
      AND r.created_at > a.asked_at
      AND ${RESPONDER('r')}
    ORDER BY r.created_at, r.id LIMIT 1
  ) r ON TRUE
  LEFT JOIN LATERAL (
    SELECT min(e.created_at) AS resolved_at FROM events e
    WHERE a.asked_at IS NOT NULL AND e.business_id = a.business_id AND e.conversation_id = a.conversation_id
      AND e.created_at > a.asked_at AND ${RESOLUTION('e')}
  ) v ON TRUE`;

/** The previous days (PREVIOUS_DAYS) of days `k`, over a window `w` of each conversation's days in order. */
const PREVIOUS = `max(k.day) FILTER (WHERE k.asked_at IS NOT NULL) OVER w, max(k.day) FILTER (WHERE k.ai_replied) OVER w,
  max(k.day) FILTER (WHERE k.person_replied) OVER w`;
const WINDOW = `WINDOW w AS (PARTITION BY k.business_id, k.conversation_id ORDER BY k.day
  ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)`;

/** Those rows with their previous days, when they are all of their conversations' days. */
const withPreviousDays = (rows: string) => `SELECT k.*, ${PREVIOUS} FROM (${rows}) k ${WINDOW}`;

/**
 * Locks the kept days of the conversations of `source` in key order, so two statements writing days
 * of the same conversations wait for each other instead of deadlocking.
 */
const lockDays = (source: string) => `
  PERFORM 1 FROM conversation_days k
  WHERE (k.business_id, k.conversation_id) IN (SELECT business_id, conversation_id FROM ${source})
  ORDER BY k.business_id, k.day, k.conversation_id FOR UPDATE`;

const statements = [
  `CREATE TABLE conversation_days (
    business_id uuid NOT NULL,
    day date NOT NULL,
    conversation_id uuid NOT NULL,
    asked_at timestamptz,
    ai_replied boolean NOT NULL,
    person_replied boolean NOT NULL,
    reply_at timestamptz,
    reply_id uuid,
    reply_sender text,
    reply_user uuid,
    resolved_at timestamptz,
    previous_day date,
    previous_ai_day date,
    previous_person_day date,
    PRIMARY KEY (business_id, day, conversation_id)
  )`,
  // A conversation's days, for the triggers that follow its replies, resolutions and previous days.
  `CREATE INDEX conversation_days_conversation ON conversation_days (business_id, conversation_id, day)`,

  // Adds a statement's new messages: their days first (a contact's first message of the day moved
  // earlier takes its answer and resolution probed among the messages, this statement's included; a
  // reply marks its day), the previous days of their conversations, then replies that answer a kept
  // day sooner.
  `CREATE FUNCTION conversation_days_add() RETURNS trigger LANGUAGE plpgsql AS $$
   BEGIN
     ${lockDays('new_messages')};
     INSERT INTO conversation_days AS d (${COLUMNS})
     ${dayRows('new_messages')} ORDER BY 1, 2, 3
     ON CONFLICT (business_id, day, conversation_id) DO UPDATE SET
       ai_replied = d.ai_replied OR excluded.ai_replied, person_replied = d.person_replied OR excluded.person_replied,
       ${ASKED.map((c) => `${c} = CASE WHEN ${EARLIER} THEN excluded.${c} ELSE d.${c} END`).join(', ')}
     WHERE ${EARLIER} OR (excluded.ai_replied AND NOT d.ai_replied)
       OR (excluded.person_replied AND NOT d.person_replied);
     UPDATE conversation_days d SET (${PREVIOUS_DAYS}) = (p.previous_day, p.previous_ai_day, p.previous_person_day)
     FROM (
       SELECT k.business_id, k.day, k.conversation_id, ${PREVIOUS}
       FROM conversation_days k
       WHERE (k.business_id, k.conversation_id) IN (SELECT business_id, conversation_id FROM new_messages)
       ${WINDOW}
     ) p (business_id, day, conversation_id, previous_day, previous_ai_day, previous_person_day)
     WHERE d.business_id = p.business_id AND d.day = p.day AND d.conversation_id = p.conversation_id
       AND (d.previous_day, d.previous_ai_day, d.previous_person_day)
         IS DISTINCT FROM (p.previous_day, p.previous_ai_day, p.previous_person_day);
     UPDATE conversation_days d
     SET reply_at = n.created_at, reply_id = n.id, reply_sender = n.sender_type, reply_user = n.user_id
     FROM (
       SELECT DISTINCT ON (k.business_id, k.day, k.conversation_id) k.business_id, k.day, k.conversation_id,
         m.created_at, m.id, m.sender_type, m.user_id
       FROM conversation_days k
       JOIN new_messages m ON m.business_id = k.business_id AND m.conversation_id = k.conversation_id
         AND m.created_at > k.asked_at
       WHERE ${RESPONDER('m')}
       ORDER BY k.business_id, k.day, k.conversation_id, m.created_at, m.id
     ) n
     WHERE d.business_id = n.business_id AND d.day = n.day AND d.conversation_id = n.conversation_id
       AND (d.reply_at IS NULL OR (n.created_at, n.id) < (d.reply_at, d.reply_id));
     RETURN NULL;
   END $$`,
  // Counts one conversation's days again from its messages and events.
  `CREATE FUNCTION conversation_days_recount(b uuid, c uuid) RETURNS void LANGUAGE plpgsql AS $$
   BEGIN
     DELETE FROM conversation_days WHERE business_id = b AND conversation_id = c;
     INSERT INTO conversation_days (${COLUMNS}, ${PREVIOUS_DAYS})
     ${withPreviousDays(dayRows('messages', 'm.business_id = b AND m.conversation_id = c'))};
   END $$`,
  // A message or resolution that starts or stops being counted: its conversation counted again.
  `CREATE FUNCTION conversation_days_flagged() RETURNS trigger LANGUAGE plpgsql AS $$
   BEGIN
     PERFORM conversation_days_recount(NEW.business_id, NEW.conversation_id);
     RETURN NULL;
   END $$`,
  // Deleted messages or events (`removed`): their conversations counted again. An event of any type,
  // though only resolutions count: events are deleted with their contact or business only, whose
  // messages go in the same statement's cascade.
  `CREATE FUNCTION conversation_days_removed() RETURNS trigger LANGUAGE plpgsql AS $$
   BEGIN
     PERFORM conversation_days_recount(k.business_id, k.conversation_id)
     FROM (SELECT DISTINCT business_id, conversation_id FROM removed WHERE conversation_id IS NOT NULL ORDER BY 1, 2) k;
     RETURN NULL;
   END $$`,
  `CREATE TRIGGER messages_count_days AFTER INSERT ON messages REFERENCING NEW TABLE AS new_messages
   FOR EACH STATEMENT EXECUTE FUNCTION conversation_days_add()`,
  `CREATE TRIGGER messages_count_days_flags AFTER UPDATE OF excluded, duplicate ON messages FOR EACH ROW
   WHEN (OLD.excluded IS DISTINCT FROM NEW.excluded OR OLD.duplicate IS DISTINCT FROM NEW.duplicate)
   EXECUTE FUNCTION conversation_days_flagged()`,
  `CREATE TRIGGER messages_count_days_removed AFTER DELETE ON messages REFERENCING OLD TABLE AS removed
   FOR EACH STATEMENT EXECUTE FUNCTION conversation_days_removed()`,

  // New resolutions end the waits they end sooner.
  `CREATE FUNCTION conversation_days_resolved() RETURNS trigger LANGUAGE plpgsql AS $$
   BEGIN
     ${lockDays(`new_events e WHERE ${RESOLUTION('e')}`)};
     UPDATE conversation_days d SET resolved_at = n.resolved_at
     FROM (
       SELECT k.business_id, k.day, k.conversation_id, min(e.created_at) AS resolved_at
       FROM conversation_days k
       JOIN new_events e ON e.business_id = k.business_id AND e.conversation_id = k.conversation_id
         AND e.created_at > k.asked_at
       WHERE ${RESOLUTION('e')}
       GROUP BY 1, 2, 3
       ORDER BY 1, 2, 3
     ) n
     WHERE d.business_id = n.business_id AND d.day = n.day AND d.conversation_id = n.conversation_id
       AND (d.resolved_at IS NULL OR n.resolved_at < d.resolved_at);
     RETURN NULL;
   END $$`,
  `CREATE TRIGGER events_count_days AFTER INSERT ON events REFERENCING NEW TABLE AS new_events
   FOR EACH STATEMENT EXECUTE FUNCTION conversation_days_resolved()`,
  `CREATE TRIGGER events_count_days_flags AFTER UPDATE OF excluded ON events FOR EACH ROW
   WHEN (OLD.excluded IS DISTINCT FROM NEW.excluded AND NEW.type = 'conversation_resolved'
     AND NEW.conversation_id IS NOT NULL)
   EXECUTE FUNCTION conversation_days_flagged()`,
  `CREATE TRIGGER events_count_days_removed AFTER DELETE ON events REFERENCING OLD TABLE AS removed
   FOR EACH STATEMENT EXECUTE FUNCTION conversation_days_removed()`,

  // The days are the business's: a new zone counts them again.
  `CREATE FUNCTION conversation_days_zone_changed() RETURNS trigger LANGUAGE plpgsql AS $$
   BEGIN
     DELETE FROM conversation_days WHERE business_id = NEW.id;
     INSERT INTO conversation_days (${COLUMNS}, ${PREVIOUS_DAYS}) ${withPreviousDays(dayRows('messages', 'm.business_id = NEW.id'))};
     RETURN NULL;
   END $$`,
  `CREATE TRIGGER businesses_count_days AFTER UPDATE OF time_zone ON businesses FOR EACH ROW
   WHEN (OLD.time_zone IS DISTINCT FROM NEW.time_zone) EXECUTE FUNCTION conversation_days_zone_changed()`,

  // The conversations a business opened in a period, read without their rows (an index-only scan), in
  // place of conversations_created; and its test contacts, which the count leaves out.
  `CREATE INDEX conversations_opened ON conversations (business_id, created_at) INCLUDE (channel, contact_id)
   WHERE NOT is_internal AND NOT is_group`,
  `DROP INDEX conversations_created`,
  `CREATE INDEX contacts_test ON contacts (business_id, id) WHERE is_test`,

  // The messages stored before, written in the order a period is read: a month's rows on few pages.
  `INSERT INTO conversation_days (${COLUMNS}, ${PREVIOUS_DAYS}) ${withPreviousDays(dayRows('messages'))} ORDER BY 1, 2`,
];

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const statement of statements) await sql.raw(statement).execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const statement of [
    'CREATE INDEX IF NOT EXISTS conversations_created ON conversations (business_id, created_at)',
    'DROP INDEX IF EXISTS contacts_test',
    'DROP INDEX IF EXISTS conversations_opened',
    'DROP TRIGGER IF EXISTS businesses_count_days ON businesses',
    'DROP TRIGGER IF EXISTS events_count_days_removed ON events',
    'DROP TRIGGER IF EXISTS events_count_days_flags ON events',
    'DROP TRIGGER IF EXISTS events_count_days ON events',
    'DROP TRIGGER IF EXISTS messages_count_days_removed ON messages',
    'DROP TRIGGER IF EXISTS messages_count_days_flags ON messages',
    'DROP TRIGGER IF EXISTS messages_count_days ON messages',
    'DROP FUNCTION IF EXISTS conversation_days_zone_changed()',
    'DROP FUNCTION IF EXISTS conversation_days_resolved()',
    'DROP FUNCTION IF EXISTS conversation_days_removed()',
    'DROP FUNCTION IF EXISTS conversation_days_flagged()',
    'DROP FUNCTION IF EXISTS conversation_days_recount(uuid, uuid)',
    'DROP FUNCTION IF EXISTS conversation_days_add()',
    'DROP TABLE IF EXISTS conversation_days',
  ])
    await sql.raw(statement).execute(db);
}
