import { sql, type Kysely } from 'kysely';

/**
 * The reports' reads of a period (docs/REPORTS.md#speed-at-scale):
 * - `messages_reports`: the counted messages of a business in time order with every column the
 *   reports read, so a period's messages are an index-only scan rather than a visit of each wide
 *   row (a month of 50 000 messages: 243 ms read through messages_export, 47 ms here). Its price is
 *   one more entry per message written.
 * - `conversations_created`: the conversations a business opened in a period; no other index of
 *   conversations leads with its creation time after the business.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE INDEX messages_reports ON messages (business_id, created_at)
    INCLUDE (conversation_id, channel, direction, sender_type, user_id) WHERE NOT excluded AND NOT duplicate`.execute(
    db,
  );
  await sql`CREATE INDEX conversations_created ON conversations (business_id, created_at)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP INDEX IF EXISTS conversations_created`.execute(db);
  await sql`DROP INDEX IF EXISTS messages_reports`.execute(db);
}
