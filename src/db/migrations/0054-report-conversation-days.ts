import { sql, type Kysely } from 'kysely';

/**
 * `conversation_days`: per business, day (in the business's zone) and conversation, the contact's
 * first message of that day, the first answer after it (whenever it came, and who gave it) and the
 * first resolution after it. A period's first response and resolution are then read from a row per
 * conversation and day (the earliest of the period) instead of from its quarter hours and messages
 * (docs/REPORTS.md#speed-at-scale).
 *
 * Triggers keep it from the messages and events themselves, as they keep message_quarters:
 * - a statement's new contact messages add or move their day's first message, its answer and
 *   resolution probed then; its new replies and resolutions shorten the waits they end sooner;
 * - a message that stops or starts being counted, or is deleted, has its conversation counted again,
 *   and so does a resolution whose `excluded` flag changes or that is deleted;
 * - a change of the business's time zone counts its days again (every conversation of the business,
 *   in the transaction that changes it).
 */
const COUNTED = (m: string) => `NOT ${m}.excluded AND NOT ${m}.duplicate`;
const ASK = (m: string) => `${m}.direction = 'inbound' AND ${m}.sender_type = 'contact' AND ${COUNTED(m)}`;
const RESPONDER = (m: string) =>
  `${m}.direction = 'outbound' AND ${m}.sender_type IN ('ai_agent', 'human', 'api') AND ${COUNTED(m)}`;
/** A reply as (UTC time, id, sender type, user id), whose least of two is the earlier and keeps who wrote it. */
const REPLY = (m: string) => `ARRAY[to_char(${m}.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US'),
  ${m}.id::text, ${m}.sender_type, ${m}.user_id::text]`;
const RESOLUTION = (e: string) => `${e}.type = 'conversation_resolved' AND NOT ${e}.excluded`;

const COLUMNS = 'business_id, day, conversation_id, asked_at, reply_at, reply, resolved_at';

/**
 * The rows the contact messages of `source` (as `m`) matching `where` make, each with its answer and
 * resolution probed through messages_conversation and events_conversation_time.
 */
const dayRows = (source: string, where = 'TRUE') => `
  SELECT a.business_id, a.day, a.conversation_id, a.asked_at, r.created_at, r.reply, v.resolved_at
  FROM (
    SELECT m.business_id, (m.created_at AT TIME ZONE z.time_zone)::date AS day, m.conversation_id,
      min(m.created_at) AS asked_at
    FROM ${source} m JOIN businesses z ON z.id = m.business_id
    WHERE ${ASK('m')} AND ${where}
    GROUP BY 1, 2, 3
  ) a
  LEFT JOIN LATERAL (
    SELECT r.created_at, ${REPLY('r')} AS reply FROM messages r
    WHERE r.business_id = a.business_id AND r.conversation_id = a.conversation_id AND r.created_at > a.asked_at
      AND ${RESPONDER('r')}
    ORDER BY r.created_at, r.id LIMIT 1
  ) r ON TRUE
  LEFT JOIN LATERAL (
    SELECT min(e.created_at) AS resolved_at FROM events e
    WHERE e.business_id = a.business_id AND e.conversation_id = a.conversation_id AND e.created_at > a.asked_at
      AND ${RESOLUTION('e')}
  ) v ON TRUE`;

const statements = [
  `CREATE TABLE conversation_days (
    business_id uuid NOT NULL,
    day date NOT NULL,
    conversation_id uuid NOT NULL,
    asked_at timestamptz NOT NULL,
    reply_at timestamptz,
    reply text[],
    resolved_at timestamptz,
    PRIMARY KEY (business_id, day, conversation_id)
  )`,
  // A conversation's days, for the triggers that follow its replies and resolutions.
  `CREATE INDEX conversation_days_conversation ON conversation_days (business_id, conversation_id)`,

  // Adds a statement's new messages: contact messages first (their answers probed among the messages,
  // this statement's included), then replies that answer a kept day sooner. Rows are written in key
  // order, so two statements touching the same days lock them in the same order.
  `CREATE FUNCTION conversation_days_add() RETURNS trigger LANGUAGE plpgsql AS $$
   BEGIN
     INSERT INTO conversation_days AS d (${COLUMNS})
     ${dayRows('new_messages')} ORDER BY 1, 2, 3
     ON CONFLICT (business_id, day, conversation_id) DO UPDATE SET asked_at = excluded.asked_at,
       reply_at = excluded.reply_at, reply = excluded.reply, resolved_at = excluded.resolved_at
     WHERE excluded.asked_at < d.asked_at;
     UPDATE conversation_days d SET reply_at = n.reply_at, reply = n.reply
     FROM (
       SELECT k.business_id, k.day, k.conversation_id, min(m.created_at) AS reply_at, min(${REPLY('m')}) AS reply
       FROM conversation_days k
       JOIN new_messages m ON m.business_id = k.business_id AND m.conversation_id = k.conversation_id
         AND m.created_at > k.asked_at
       WHERE ${RESPONDER('m')}
       GROUP BY 1, 2, 3
       ORDER BY 1, 2, 3
     ) n
     WHERE d.business_id = n.business_id AND d.day = n.day AND d.conversation_id = n.conversation_id
       AND (d.reply IS NULL OR n.reply < d.reply);
     RETURN NULL;
   END $$`,
  // Counts one conversation's days again from its messages and events.
  `CREATE FUNCTION conversation_days_recount(b uuid, c uuid) RETURNS void LANGUAGE plpgsql AS $$
   BEGIN
     DELETE FROM conversation_days WHERE business_id = b AND conversation_id = c;
     INSERT INTO conversation_days (${COLUMNS}) ${dayRows('messages', 'm.business_id = b AND m.conversation_id = c')};
   END $$`,
  `CREATE FUNCTION conversation_days_message_flagged() RETURNS trigger LANGUAGE plpgsql AS $$
   BEGIN
     PERFORM conversation_days_recount(NEW.business_id, NEW.conversation_id);
     RETURN NULL;
   END $$`,
  `CREATE FUNCTION conversation_days_messages_removed() RETURNS trigger LANGUAGE plpgsql AS $$
   BEGIN
     PERFORM conversation_days_recount(k.business_id, k.conversation_id)
     FROM (SELECT DISTINCT business_id, conversation_id FROM old_messages ORDER BY 1, 2) k;
     RETURN NULL;
   END $$`,
  `CREATE TRIGGER messages_count_days AFTER INSERT ON messages REFERENCING NEW TABLE AS new_messages
   FOR EACH STATEMENT EXECUTE FUNCTION conversation_days_add()`,
  `CREATE TRIGGER messages_count_days_flags AFTER UPDATE OF excluded, duplicate ON messages FOR EACH ROW
   WHEN (OLD.excluded IS DISTINCT FROM NEW.excluded OR OLD.duplicate IS DISTINCT FROM NEW.duplicate)
   EXECUTE FUNCTION conversation_days_message_flagged()`,
  `CREATE TRIGGER messages_count_days_removed AFTER DELETE ON messages REFERENCING OLD TABLE AS old_messages
   FOR EACH STATEMENT EXECUTE FUNCTION conversation_days_messages_removed()`,

  // New resolutions end the waits they end sooner.
  `CREATE FUNCTION conversation_days_resolved() RETURNS trigger LANGUAGE plpgsql AS $$
   BEGIN
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
  `CREATE FUNCTION conversation_days_resolution_flagged() RETURNS trigger LANGUAGE plpgsql AS $$
   BEGIN
     PERFORM conversation_days_recount(NEW.business_id, NEW.conversation_id);
     RETURN NULL;
   END $$`,
  `CREATE FUNCTION conversation_days_resolutions_removed() RETURNS trigger LANGUAGE plpgsql AS $$
   BEGIN
     PERFORM conversation_days_recount(k.business_id, k.conversation_id)
     FROM (SELECT DISTINCT business_id, conversation_id FROM old_events
           WHERE type = 'conversation_resolved' AND conversation_id IS NOT NULL ORDER BY 1, 2) k;
     RETURN NULL;
   END $$`,
  `CREATE TRIGGER events_count_days AFTER INSERT ON events REFERENCING NEW TABLE AS new_events
   FOR EACH STATEMENT EXECUTE FUNCTION conversation_days_resolved()`,
  `CREATE TRIGGER events_count_days_flags AFTER UPDATE OF excluded ON events FOR EACH ROW
   WHEN (OLD.excluded IS DISTINCT FROM NEW.excluded AND NEW.type = 'conversation_resolved'
     AND NEW.conversation_id IS NOT NULL)
   EXECUTE FUNCTION conversation_days_resolution_flagged()`,
  `CREATE TRIGGER events_count_days_removed AFTER DELETE ON events REFERENCING OLD TABLE AS old_events
   FOR EACH STATEMENT EXECUTE FUNCTION conversation_days_resolutions_removed()`,

  // The days are the business's: a new zone counts them again.
  `CREATE FUNCTION conversation_days_zone_changed() RETURNS trigger LANGUAGE plpgsql AS $$
   BEGIN
     DELETE FROM conversation_days WHERE business_id = NEW.id;
     INSERT INTO conversation_days (${COLUMNS}) ${dayRows('messages', 'm.business_id = NEW.id')};
     RETURN NULL;
   END $$`,
  `CREATE TRIGGER businesses_count_days AFTER UPDATE OF time_zone ON businesses FOR EACH ROW
   WHEN (OLD.time_zone IS DISTINCT FROM NEW.time_zone) EXECUTE FUNCTION conversation_days_zone_changed()`,

  // The messages stored before.
  `INSERT INTO conversation_days (${COLUMNS}) ${dayRows('messages')}`,
];

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const statement of statements) await sql.raw(statement).execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const statement of [
    'DROP TRIGGER IF EXISTS businesses_count_days ON businesses',
    'DROP TRIGGER IF EXISTS events_count_days_removed ON events',
    'DROP TRIGGER IF EXISTS events_count_days_flags ON events',
    'DROP TRIGGER IF EXISTS events_count_days ON events',
    'DROP TRIGGER IF EXISTS messages_count_days_removed ON messages',
    'DROP TRIGGER IF EXISTS messages_count_days_flags ON messages',
    'DROP TRIGGER IF EXISTS messages_count_days ON messages',
    'DROP FUNCTION IF EXISTS conversation_days_zone_changed()',
    'DROP FUNCTION IF EXISTS conversation_days_resolutions_removed()',
    'DROP FUNCTION IF EXISTS conversation_days_resolution_flagged()',
    'DROP FUNCTION IF EXISTS conversation_days_resolved()',
    'DROP FUNCTION IF EXISTS conversation_days_messages_removed()',
    'DROP FUNCTION IF EXISTS conversation_days_message_flagged()',
    'DROP FUNCTION IF EXISTS conversation_days_recount(uuid, uuid)',
    'DROP FUNCTION IF EXISTS conversation_days_add()',
    'DROP TABLE IF EXISTS conversation_days',
  ])
    await sql.raw(statement).execute(db);
}
