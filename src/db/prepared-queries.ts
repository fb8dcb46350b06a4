import type { Compilable, CompiledQuery } from 'kysely';
import type { Db } from './database.ts';

/**
 * Builds a Kysely query once and reuses its compiled SQL, so a hot path does not pay for building
 * and compiling the same query on every request (measured ~50 µs for the phone lookup's query,
 * a fifth of the server's CPU per lookup, docs/PERFORMANCE.md).
 *
 * The first call builds the query with `placeholders` (values that cannot occur as constants in
 * it) and records which parameter slot holds which argument; later calls put their own arguments
 * in those slots. `build` must pass its arguments to Kysely unchanged (no lower-casing, no
 * JSON.stringify): it sees only the placeholders, once. The SQL text does not depend on the
 * database handle (both engines use Kysely's PostgreSQL compiler), so the one compilation serves a
 * transaction as well as the pool, and the same text is what prepared-statements.ts names.
 */
export function compiledOnce<A extends readonly (string | number)[], R>(
  placeholders: A,
  build: (db: Db, ...args: A) => Compilable<R>,
): (db: Db, ...args: A) => Promise<R[]> {
  let compiled: { query: CompiledQuery<R>; slots: (number | undefined)[] } | undefined;
  return async (db, ...args) => {
    if (!compiled) {
      const query = build(db, ...placeholders).compile();
      const slots = query.parameters.map((value) => {
        const slot = placeholders.indexOf(value as A[number]);
        return slot === -1 ? undefined : slot;
      });
      compiled = { query, slots };
    }
    const { query, slots } = compiled;
    const parameters = query.parameters.map((value, i) => {
      const slot = slots[i];
      return slot === undefined ? value : args[slot];
    });
    const result = await db.executeQuery<R>({ ...query, parameters });
    return result.rows;
  };
}
