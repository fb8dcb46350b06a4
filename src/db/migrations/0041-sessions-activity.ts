import { sql, type Kysely } from 'kysely';

/** Whether someone of a business used the dashboard lately (the website widget's online state), by index. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE INDEX dashboard_sessions_activity ON dashboard_sessions (business_id, last_seen_at)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP INDEX IF EXISTS dashboard_sessions_activity`.execute(db);
}
