import { sql, type Kysely } from 'kysely';

/**
 * The dashboard's live stream catches a reconnecting client up on its business's domain events after
 * the last one it received (src/modules/live): a range scan of this index, whatever the number of
 * other businesses' events kept beside them.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE INDEX domain_events_business ON domain_events (business_id, id)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP INDEX domain_events_business`.execute(db);
}
