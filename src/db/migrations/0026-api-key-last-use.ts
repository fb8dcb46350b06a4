import { sql, type Kysely } from 'kysely';

/**
 * When each API key was last used, shown in the dashboard's list of keys. Written at most once a
 * minute per key and process (src/modules/api-keys/api-keys.service.ts), so requests do not each
 * write a row.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE api_keys ADD COLUMN last_used_at timestamptz`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE api_keys DROP COLUMN last_used_at`.execute(db);
}
