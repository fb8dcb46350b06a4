import { sql, type Kysely } from 'kysely';

/**
 * The dashboard's inbox (docs/ARCHITECTURE.md#the-inbox): each user's read position per
 * conversation, and the indexes that answer the inbox's first page with one index range whatever
 * the business's size.
 *
 * The inbox orders conversations by their activity, coalesce(last_message_at, created_at), newest
 * first, after whether they are closed (1) or not (0). Each filter has an index that leads with it,
 * so a filter matching few conversations does not walk the whole business to fill a page: the
 * assignee (a user, or none), the team, the channel, the channel type and manual control. A
 * conversation's activity moves with each message, so these entries are written again on every
 * message.
 *
 * The name indexes of the search are partial on a condition that always holds (their key IS NOT
 * NULL), which the search's range on the key implies and no other query states: they lead with
 * business_id like the contact lookups' indexes, and the lookups' plan test once found a lookup of a
 * business without statistics planned on an index matching business_id alone. (Not so the
 * conversations' indexes: the planner ignores the statistics of a partial index's expressions, and
 * estimated a name search's conversations a hundred times too few.)
 */
// As a number: the planner rewrites `(closed_at IS NOT NULL) = false` to `closed_at IS NULL`, which no
// longer matches a boolean key, and the index would be passed over.
const closed = '((closed_at IS NOT NULL)::integer)';
const activity = '(coalesce(last_message_at, created_at))';
const order = `${closed}, ${activity}, id`;
const fullName = "lower(first_name || ' ' || last_name)";

const statements = [
  `CREATE TABLE conversation_reads (
    business_id uuid NOT NULL,
    user_id uuid NOT NULL,
    conversation_id uuid NOT NULL,
    last_read_message_id uuid NOT NULL,
    last_read_message_at timestamptz NOT NULL,
    read_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (business_id, user_id, conversation_id),
    FOREIGN KEY (business_id, user_id) REFERENCES users (business_id, id) ON DELETE CASCADE,
    FOREIGN KEY (business_id, conversation_id) REFERENCES conversations (business_id, id) ON DELETE CASCADE
  )`,
  // The foreign key's cascade from a deleted conversation.
  `CREATE INDEX conversation_reads_conversation ON conversation_reads (business_id, conversation_id)`,
  `CREATE INDEX conversations_inbox ON conversations (business_id, ${order})`,
  `CREATE INDEX conversations_inbox_assignee ON conversations (business_id, assigned_user_id, ${order})`,
  `CREATE INDEX conversations_inbox_team ON conversations (business_id, team_id, ${order})
    WHERE team_id IS NOT NULL`,
  `CREATE INDEX conversations_inbox_channel ON conversations (business_id, channel_id, ${order})
    WHERE channel_id IS NOT NULL`,
  `CREATE INDEX conversations_inbox_channel_type ON conversations (business_id, channel, ${order})`,
  `CREATE INDEX conversations_inbox_control ON conversations (business_id, manual_control, ${order})`,
  // Unread counts: the inbound messages after a read position, without reading the replies between
  // them; a web-client copy of a message (duplicate) is not shown, so not counted.
  `CREATE INDEX messages_inbound ON messages (business_id, conversation_id, created_at, id)
    WHERE direction = 'inbound' AND NOT duplicate`,
  // A conversation's events in time order, for its thread; also serves what events_conversation served.
  `CREATE INDEX events_conversation_time ON events (business_id, conversation_id, created_at, id)
    WHERE conversation_id IS NOT NULL`,
  `DROP INDEX events_conversation`,
  // The inbox's search by the start of a contact's full name or last name, in any case.
  `CREATE INDEX contacts_full_name ON contacts (business_id, ${fullName} text_pattern_ops) WHERE ${fullName} IS NOT NULL`,
  `CREATE INDEX contacts_last_name ON contacts (business_id, lower(last_name) text_pattern_ops)
    WHERE lower(last_name) IS NOT NULL`,
];

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const statement of statements) await sql.raw(statement).execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const statement of [
    'DROP INDEX IF EXISTS contacts_last_name',
    'DROP INDEX IF EXISTS contacts_full_name',
    `CREATE INDEX IF NOT EXISTS events_conversation ON events (business_id, conversation_id) WHERE conversation_id IS NOT NULL`,
    'DROP INDEX IF EXISTS events_conversation_time',
    'DROP INDEX IF EXISTS messages_inbound',
    'DROP INDEX IF EXISTS conversations_inbox_control',
    'DROP INDEX IF EXISTS conversations_inbox_channel_type',
    'DROP INDEX IF EXISTS conversations_inbox_channel',
    'DROP INDEX IF EXISTS conversations_inbox_team',
    'DROP INDEX IF EXISTS conversations_inbox_assignee',
    'DROP INDEX IF EXISTS conversations_inbox',
    'DROP TABLE IF EXISTS conversation_reads',
  ]) {
    await sql.raw(statement).execute(db);
  }
}
