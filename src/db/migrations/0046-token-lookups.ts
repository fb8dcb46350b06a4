import { sql, type Kysely } from 'kysely';

/**
 * An API key and an invitation are still found by their token's hash alone, but by a plain index:
 * a unique index not leading with business_id could not be enforced by a database sharded by it
 * (docs/SCALING.md), and the tokens hold 256 (a key) or 192 (an invitation) random bits, so two never share a hash.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`DROP INDEX api_keys_key_hash`.execute(db);
  await sql`CREATE INDEX api_keys_key_hash ON api_keys (key_hash)`.execute(db);
  await sql`DROP INDEX dashboard_invitations_token`.execute(db);
  await sql`CREATE INDEX dashboard_invitations_token ON dashboard_invitations (token_hash)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP INDEX api_keys_key_hash`.execute(db);
  await sql`CREATE UNIQUE INDEX api_keys_key_hash ON api_keys (key_hash)`.execute(db);
  await sql`DROP INDEX dashboard_invitations_token`.execute(db);
  await sql`CREATE UNIQUE INDEX dashboard_invitations_token ON dashboard_invitations (token_hash)`.execute(db);
}
