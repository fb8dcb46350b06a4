import { sql, type Kysely } from 'kysely';

/**
 * The worker session a running job was claimed under (src/jobs/worker-session.ts): on PostgreSQL
 * the backend pid of the connection on which its process holds its liveness lock, null where no
 * such lock is held (the embedded engine, or a process that lost its session). A job whose owner no
 * longer holds its lock is taken over at once instead of when its lease runs out.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE outbox ADD COLUMN locked_by integer`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE outbox DROP COLUMN locked_by`.execute(db);
}
