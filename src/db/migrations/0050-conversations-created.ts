import { sql, type Kysely } from 'kysely';

/**
 * The conversations a business opened in a period (the volume report) as one index range: no other
 * index of conversations leads with its creation time after the business.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE INDEX conversations_created ON conversations (business_id, created_at)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP INDEX IF EXISTS conversations_created`.execute(db);
}
