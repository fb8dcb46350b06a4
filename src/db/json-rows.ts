import { sql, type RawBuilder } from 'kysely';

/**
 * Rows as a table read from one JSON parameter, to join to a table in the statements that handle
 * many rows at once (`from <rows> join …`):
 *
 *   (batch_rows($1::json) as v_row cross join lateral json_to_record(v_row) as v(a uuid, b text))
 *
 * The statement's text is the same whatever the number of rows, so it is parsed once per connection
 * and its plan is kept (prepared-statements.ts): a VALUES list, whose text changes with its length,
 * was parsed and planned again for nearly every batch (docs/PERFORMANCE-CHOICES.md#batch-rows-as-one-json-value).
 * A kept plan is costed from the table's size when it was made and from the planner's guess of the
 * rows: batch_rows tells it 10 (migration 0010), so a table of more than a hundred pages or so is
 * joined by primary-key probes, and the statistics keeper (statistics.ts) analyses a table at every
 * doubling, which makes its plans again, so a scan is never kept over a table much past that size.
 *
 * `columns` names each column with its PostgreSQL type (trusted text: code, never input); each row
 * gives a value per column (a missing key reads as null).
 */
export function jsonRows<C extends string>(
  alias: string,
  columns: Readonly<Record<C, string>>,
  rows: readonly Readonly<Partial<Record<C, unknown>>>[],
): RawBuilder<unknown> {
  if (rows.length === 0) throw new Error('jsonRows needs at least one row');
  const definition = Object.entries<string>(columns)
    .map(([name, type]) => `${name} ${type}`)
    .join(', ');
  const element = sql.raw(`${alias}_row`);
  return sql`(batch_rows(${JSON.stringify(rows)}::json) as ${element} cross join lateral json_to_record(${element}) as ${sql.raw(alias)}(${sql.raw(definition)}))`;
}
