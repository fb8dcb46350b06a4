import { sql, type Kysely } from 'kysely';

/**
 * A removed user is taken off the contacts assigned to them: without this index that statement would
 * read every contact of the business. Partial, so the contacts nobody is assigned to cost it nothing.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE INDEX contacts_assigned_user ON contacts (business_id, assigned_user_id)
    WHERE assigned_user_id IS NOT NULL`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP INDEX IF EXISTS contacts_assigned_user`.execute(db);
}
