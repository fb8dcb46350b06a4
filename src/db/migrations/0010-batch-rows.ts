import { sql, type Kysely } from 'kysely';

/**
 * `batch_rows(json)`: the elements of a JSON array, for the statements that join a batch's rows to a
 * table (src/db/json-rows.ts). It is `json_array_elements` with the planner told to expect 10 rows
 * (a batch's usual size) instead of the 100 it assumes of a built-in set function: with 100, a kept
 * plan joined `messages` by a scan until the table held some 10 000 rows (8 ms a statement in a
 * new install's first seconds at 1 000 sends/s); with 10 it probes the primary key from a hundred
 * pages or so. PL/pgSQL, because PostgreSQL inlines a plain SQL function into the query, and the
 * estimate with it.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE FUNCTION batch_rows(list json) RETURNS SETOF json
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE ROWS 10
    AS $$ BEGIN RETURN QUERY SELECT json_array_elements(list); END $$`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP FUNCTION batch_rows(json)`.execute(db);
}
