import { sql, type RawBuilder } from 'kysely';

/**
 * A list of rows as SQL `(values ($1::uuid, $2::text), ($3::uuid, $4::text))`, to join to a table
 * (`from <list> as v(a, b)`) in the statements that handle many messages at once.
 *
 * Why not one array or jsonb parameter: the text of such a statement never changes, so it becomes
 * a named statement whose generic plan is kept for the life of the connection, and that plan is
 * costed from the table's size when it was made (a hash join over a scan of a table that was
 * nearly empty then is kept when it holds millions of rows). A VALUES list of several rows gives
 * each batch its own text, planned with the list's real length and the table's current size (see
 * src/db/prepared-statements.ts); a list of one row is flattened by PostgreSQL into equalities,
 * which are planned as primary-key probes.
 */
export function valuesList(rows: readonly (readonly unknown[])[], types: readonly string[]): RawBuilder<unknown> {
  if (rows.length === 0) throw new Error('valuesList needs at least one row');
  return sql`(values ${sql.join(rows.map((row) => sql`(${sql.join(row.map((value, i) => sql`${value}::${sql.raw(types[i]!)}`))})`))})`;
}
