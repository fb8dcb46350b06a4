import { sql, type Kysely } from 'kysely';

/**
 * Each claim of an Idempotency-Key gets a lease id. A request stores its answer only while its lease
 * is the key's, and a send stores it in the transaction that writes the message; a claim left
 * running by a request that died can then be taken over by a repeat (see IdempotencyService.begin)
 * without any risk of sending twice. Rows from before have no lease: they are answered or expire.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE idempotency_keys ADD COLUMN lease_id uuid`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE idempotency_keys DROP COLUMN lease_id`.execute(db);
}
