import { sql, type Kysely } from 'kysely';

/**
 * `businesses.time_zone`: the IANA name of the zone a business's reports count days and hours in.
 * Checked against PostgreSQL's zones when set (BusinessesService), since the reports hand it to
 * `AT TIME ZONE`; a CHECK could not read pg_timezone_names.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE businesses ADD COLUMN time_zone text NOT NULL DEFAULT 'UTC'`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE businesses DROP COLUMN IF EXISTS time_zone`.execute(db);
}
