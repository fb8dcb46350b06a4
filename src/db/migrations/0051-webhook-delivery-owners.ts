import { sql, type Kysely } from 'kysely';

/**
 * The worker session a running webhook delivery was claimed under, as outbox.locked_by (0018): a
 * delivery whose owner no longer holds its liveness lock (a process killed) is sent again by
 * another process at once instead of when its lease runs out.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE webhook_deliveries ADD COLUMN locked_by integer`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE webhook_deliveries DROP COLUMN locked_by`.execute(db);
}
