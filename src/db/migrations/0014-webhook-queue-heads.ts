import { sql, type Kysely } from 'kysely';

/**
 * Deliveries of one webhook and conversation go out in order, so only the first pending or running
 * one of such a queue may be sent. `held` marks the others: set when a delivery is queued behind
 * another, cleared when the one before it is delivered or given up (webhook-deliveries.repository.ts).
 * The index of due deliveries leaves held ones out, so a claim reads the heads of the queues only,
 * not a backlog piled up behind a failing endpoint (which it used to read, and throw away, on
 * every poll).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE webhook_deliveries ADD COLUMN held boolean NOT NULL DEFAULT false`.execute(db);
  await sql`UPDATE webhook_deliveries AS c SET held = true
    WHERE c.state = 'pending' AND c.conversation_id IS NOT NULL AND EXISTS (
      SELECT 1 FROM webhook_deliveries AS e
      WHERE e.business_id = c.business_id AND e.webhook_id = c.webhook_id AND e.conversation_id = c.conversation_id
        AND e.seq < c.seq AND e.state IN ('pending', 'running'))`.execute(db);
  await sql`CREATE INDEX webhook_deliveries_due_heads ON webhook_deliveries (next_attempt_at) WHERE state = 'pending' AND NOT held`.execute(
    db,
  );
  await sql`DROP INDEX IF EXISTS webhook_deliveries_due`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE INDEX IF NOT EXISTS webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE state = 'pending'`.execute(
    db,
  );
  await sql`DROP INDEX IF EXISTS webhook_deliveries_due_heads`.execute(db);
  await sql`ALTER TABLE webhook_deliveries DROP COLUMN held`.execute(db);
}
