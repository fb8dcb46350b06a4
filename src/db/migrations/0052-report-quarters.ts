import { sql, type Kysely } from 'kysely';

/**
 * The reports' figures of messages kept per quarter hour (docs/REPORTS.md#speed-at-scale), so a
 * report reads a row per conversation and quarter instead of every message of its period.
 *
 * - `message_quarters`: per business, quarter (UTC), conversation and channel, the counted messages
 *   in and out, the AI's and people's replies. Quarter hours, because every time zone's offset is a
 *   whole number of them: a quarter always lies within one local hour and day, whatever the business's
 *   zone.
 * - `user_reply_quarters`: per person, the replies they sent from the dashboard.
 *
 * Triggers keep both from the messages themselves, so every writer (inbound, sending, the import, a
 * merge, a deletion) counts without knowing: a statement's new messages are added as sums, which
 * commute, so concurrent writers need no lock beyond the row's; a message that
 * stops or starts being counted (its `excluded` or `duplicate` flag changes) or is deleted has its
 * quarter counted again from the messages. The insert trigger is named to run before
 * messages_mark_web_copies, whose marking of a copy then recounts its quarter.
 */
const COUNTED = `NOT m.excluded AND NOT m.duplicate`;

/** The columns of message_quarters computed from messages `m` grouped by quarter, conversation and channel. */
const QUARTER_FIGURES = `
  count(*) FILTER (WHERE m.direction = 'inbound'),
  count(*) FILTER (WHERE m.direction = 'outbound'),
  count(*) FILTER (WHERE m.direction = 'outbound' AND m.sender_type = 'ai_agent'),
  count(*) FILTER (WHERE m.direction = 'outbound' AND m.sender_type IN ('human', 'api'))`;

const COLUMNS = `business_id, quarter, conversation_id, channel, messages_in, messages_out, ai_replies,
  person_replies`;
const USER_COLUMNS = 'business_id, quarter, conversation_id, user_id, replies';

/** The rows of message_quarters that the counted messages of `source` (as `m`) matching `where` make. */
const quarterRows = (source: string, where = 'TRUE') => `
  SELECT m.business_id, report_quarter(m.created_at), m.conversation_id, m.channel, ${QUARTER_FIGURES}
  FROM ${source} m WHERE ${COUNTED} AND ${where}
  GROUP BY 1, 2, 3, 4`;
/** The rows of user_reply_quarters: the replies people sent from the dashboard. */
const userReplyRows = (source: string, where = 'TRUE') => `
  SELECT m.business_id, report_quarter(m.created_at), m.conversation_id, m.user_id, count(*)
  FROM ${source} m
  WHERE ${COUNTED} AND m.direction = 'outbound' AND m.sender_type = 'human' AND m.user_id IS NOT NULL AND ${where}
  GROUP BY 1, 2, 3, 4`;
/** The messages of conversation `c` of business `b` in quarter `q`, through messages_conversation. */
const IN_QUARTER = `m.business_id = b AND m.conversation_id = c AND m.created_at >= q
  AND m.created_at < q + interval '15 minutes'`;

const statements = [
  `CREATE FUNCTION report_quarter(t timestamptz) RETURNS timestamptz LANGUAGE sql IMMUTABLE PARALLEL SAFE
   AS $$ SELECT date_bin('15 minutes', t, timestamptz '2000-01-01 00:00:00+00') $$`,
  `CREATE TABLE message_quarters (
    business_id uuid NOT NULL,
    quarter timestamptz NOT NULL,
    conversation_id uuid NOT NULL,
    channel text NOT NULL,
    messages_in integer NOT NULL,
    messages_out integer NOT NULL,
    ai_replies integer NOT NULL,
    person_replies integer NOT NULL,
    PRIMARY KEY (business_id, quarter, conversation_id, channel)
  )`,
  `CREATE TABLE user_reply_quarters (
    business_id uuid NOT NULL,
    quarter timestamptz NOT NULL,
    conversation_id uuid NOT NULL,
    user_id uuid NOT NULL,
    replies integer NOT NULL,
    PRIMARY KEY (business_id, quarter, conversation_id, user_id)
  )`,

  // Adds a statement's new messages. The rows are upserted in key order, so two statements touching
  // the same quarters lock them in the same order.
  `CREATE FUNCTION message_quarters_add() RETURNS trigger LANGUAGE plpgsql AS $$
   BEGIN
     INSERT INTO message_quarters AS q (${COLUMNS})
     ${quarterRows('new_messages')} ORDER BY 1, 2, 3, 4
     ON CONFLICT (business_id, quarter, conversation_id, channel) DO UPDATE SET
       messages_in = q.messages_in + excluded.messages_in,
       messages_out = q.messages_out + excluded.messages_out,
       ai_replies = q.ai_replies + excluded.ai_replies,
       person_replies = q.person_replies + excluded.person_replies;
     INSERT INTO user_reply_quarters AS u (${USER_COLUMNS})
     ${userReplyRows('new_messages')} ORDER BY 1, 2, 3, 4
     ON CONFLICT (business_id, quarter, conversation_id, user_id) DO UPDATE SET replies = u.replies + excluded.replies;
     RETURN NULL;
   END $$`,
  // Counts one conversation's quarter again from its messages (messages_conversation).
  `CREATE FUNCTION message_quarters_recount(b uuid, c uuid, q timestamptz) RETURNS void LANGUAGE plpgsql AS $$
   BEGIN
     DELETE FROM message_quarters WHERE business_id = b AND quarter = q AND conversation_id = c;
     DELETE FROM user_reply_quarters WHERE business_id = b AND quarter = q AND conversation_id = c;
     INSERT INTO message_quarters (${COLUMNS}) ${quarterRows('messages', IN_QUARTER)};
     INSERT INTO user_reply_quarters (${USER_COLUMNS}) ${userReplyRows('messages', IN_QUARTER)};
   END $$`,
  `CREATE FUNCTION message_quarters_flag_changed() RETURNS trigger LANGUAGE plpgsql AS $$
   BEGIN
     PERFORM message_quarters_recount(NEW.business_id, NEW.conversation_id, report_quarter(NEW.created_at));
     RETURN NULL;
   END $$`,
  `CREATE FUNCTION message_quarters_removed() RETURNS trigger LANGUAGE plpgsql AS $$
   BEGIN
     PERFORM message_quarters_recount(k.business_id, k.conversation_id, k.quarter)
     FROM (SELECT DISTINCT business_id, conversation_id, report_quarter(created_at) AS quarter FROM old_messages
           ORDER BY 1, 3, 2) k;
     RETURN NULL;
   END $$`,
  `CREATE TRIGGER messages_count_quarters AFTER INSERT ON messages REFERENCING NEW TABLE AS new_messages
   FOR EACH STATEMENT EXECUTE FUNCTION message_quarters_add()`,
  `CREATE TRIGGER messages_count_quarters_flags AFTER UPDATE OF excluded, duplicate ON messages FOR EACH ROW
   WHEN (OLD.excluded IS DISTINCT FROM NEW.excluded OR OLD.duplicate IS DISTINCT FROM NEW.duplicate)
   EXECUTE FUNCTION message_quarters_flag_changed()`,
  `CREATE TRIGGER messages_count_quarters_removed AFTER DELETE ON messages REFERENCING OLD TABLE AS old_messages
   FOR EACH STATEMENT EXECUTE FUNCTION message_quarters_removed()`,

  // The messages stored before, written in the order a period is read: a month's rows on few pages.
  `INSERT INTO message_quarters (${COLUMNS}) ${quarterRows('messages')} ORDER BY 1, 2`,
  `INSERT INTO user_reply_quarters (${USER_COLUMNS}) ${userReplyRows('messages')} ORDER BY 1, 2`,

  // The events the reports count, read by type: a period's handoffs, manual control, transfers and
  // sentiments without the business's other events, with their conversations (an index-only scan). Only
  // those types, so an export of other types keeps walking events_export in order.
  `CREATE INDEX events_reports ON events (business_id, type, created_at) INCLUDE (conversation_id) WHERE NOT excluded
   AND type IN ('manual_control_activated', 'manual_control_released', 'sentiment_analyzed', 'transfer_accepted',
    'transfer_fallback_required', 'transfer_rejected')`,
  // The AI's follow-ups, without its other runs.
  `CREATE INDEX ai_runs_follow_ups ON ai_runs (business_id, reply_message_id)
   WHERE kind = 'follow_up' AND status = 'replied'`,
];

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const statement of statements) await sql.raw(statement).execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const statement of [
    'DROP INDEX IF EXISTS ai_runs_follow_ups',
    'DROP INDEX IF EXISTS events_reports',
    'DROP TRIGGER IF EXISTS messages_count_quarters_removed ON messages',
    'DROP TRIGGER IF EXISTS messages_count_quarters_flags ON messages',
    'DROP TRIGGER IF EXISTS messages_count_quarters ON messages',
    'DROP FUNCTION IF EXISTS message_quarters_removed()',
    'DROP FUNCTION IF EXISTS message_quarters_flag_changed()',
    'DROP FUNCTION IF EXISTS message_quarters_recount(uuid, uuid, timestamptz)',
    'DROP FUNCTION IF EXISTS message_quarters_add()',
    'DROP TABLE IF EXISTS user_reply_quarters',
    'DROP TABLE IF EXISTS message_quarters',
    'DROP FUNCTION IF EXISTS report_quarter(timestamptz)',
  ])
    await sql.raw(statement).execute(db);
}
