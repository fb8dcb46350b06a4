import { sql, type Kysely } from 'kysely';

/**
 * When the provider last refused a channel's credentials (Meta's code 190: an expired or revoked
 * access token): the channel needs new ones, shown to the operator until they are replaced.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE channels ADD COLUMN credentials_rejected_at timestamptz`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE channels DROP COLUMN IF EXISTS credentials_rejected_at`.execute(db);
}
