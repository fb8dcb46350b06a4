import { sql, type Kysely } from 'kysely';

/**
 * The reports' reads of a period (docs/REPORTS.md#speed-at-scale): `conversations_created`, the
 * conversations a business opened in a period; no other index of conversations leads with its
 * creation time after the business. A period's messages are read through messages_export. A
 * covering index of the same rows for the reports (an index-only scan: a month of 50 000 messages in
 * 47 ms rather than 243 ms) was tried and left out: it cost every message written one more entry,
 * and the planner then walked the exports by it, with a sort.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE INDEX conversations_created ON conversations (business_id, created_at)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP INDEX IF EXISTS conversations_created`.execute(db);
}
