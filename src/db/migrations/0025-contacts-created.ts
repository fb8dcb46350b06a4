import { sql, type Kysely } from 'kysely';

/**
 * The dashboard lists a business's contacts newest first and pages by (created_at, id): without this
 * index each page would sort all of the business's contacts.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE INDEX contacts_created ON contacts (business_id, created_at, id)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP INDEX IF EXISTS contacts_created`.execute(db);
}
