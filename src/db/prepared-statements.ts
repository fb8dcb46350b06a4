import { createHash } from 'node:crypto';
import type { PostgresCursor, PostgresPool, PostgresPoolClient, PostgresQueryResult } from 'kysely';
import type pg from 'pg';

/**
 * Named (server-side prepared) statements for Kysely on node-postgres, on both engines (PGlite is
 * reached through node-postgres too, database.ts). A kept plan is made again when a table it reads
 * is analysed, so one made while the table was nearly empty does not outlive the table's growth
 * (autovacuum analyses on a PostgreSQL server; statistics.ts where there is none, as on PGlite).
 *
 * An unnamed query is parsed and planned by PostgreSQL on every execution; for the short indexed
 * lookups of the public API planning costs more than executing (0.22 ms against 0.08 ms for the
 * phone lookup, docs/PERFORMANCE-CHOICES.md#named-statements). node-postgres prepares a statement once
 * per connection when the query carries a `name`, and PostgreSQL then reuses the parse tree and, after five runs, a
 * generic plan. The name is a hash of the SQL text, so the same text always gets the same name and
 * two texts never share one.
 *
 * Only texts that repeat are worth a name, and each name costs memory in every backend until the
 * connection closes, so texts whose shape varies with the input are left unnamed: long texts, many
 * parameters, multi-row VALUES lists and IN-lists (their text changes with the number of items).
 * Texts without parameters stay unnamed too: they go through the simple protocol, which also
 * allows several statements in one text (migrations use that). A process names at most
 * MAX_NAMED distinct texts, which bounds the statements a backend keeps.
 */

const MAX_TEXT_LENGTH = 4000;
const MAX_PARAMETERS = 50;
const MAX_NAMED = 500;
/** Remembered decisions (name or unnamed) per text; bounded, cleared when full. */
const MAX_REMEMBERED = 5000;

const DML = /^\s*(select|insert|update|delete|with)\b/i;
/** `in ($1, $2, ...)` and `values (...), (...)`: texts that change with the number of items. */
const VARIABLE_LIST = /\bin \(\$\d+, \$|\), \(\$/i;

const decisions = new Map<string, string | null>();
let named = 0;

/** The statement name for this SQL text, or null when it should be sent unnamed. */
export function statementName(text: string, parameterCount: number): string | null {
  const known = decisions.get(text);
  if (known !== undefined) return known;
  const eligible =
    parameterCount > 0 &&
    parameterCount <= MAX_PARAMETERS &&
    text.length <= MAX_TEXT_LENGTH &&
    DML.test(text) &&
    !VARIABLE_LIST.test(text) &&
    named < MAX_NAMED;
  const name = eligible ? `k_${createHash('sha1').update(text).digest('hex').slice(0, 32)}` : null;
  if (name !== null) named += 1;
  if (decisions.size >= MAX_REMEMBERED) decisions.clear();
  decisions.set(text, name);
  return name;
}

/** A pool client whose parameterised queries carry a statement name when `statementName` gives one. */
class PreparingClient implements PostgresPoolClient {
  constructor(private readonly client: pg.PoolClient) {}

  query<R>(sql: string, parameters: ReadonlyArray<unknown>): Promise<PostgresQueryResult<R>>;
  query<R>(cursor: PostgresCursor<R>): PostgresCursor<R>;
  query<R>(
    sqlOrCursor: string | PostgresCursor<R>,
    parameters?: ReadonlyArray<unknown>,
  ): Promise<PostgresQueryResult<R>> | PostgresCursor<R> {
    const client = this.client as unknown as PostgresPoolClient;
    if (typeof sqlOrCursor !== 'string') return client.query(sqlOrCursor);
    const values = (parameters ?? []) as unknown[];
    const name = statementName(sqlOrCursor, values.length);
    if (name === null) return client.query<R>(sqlOrCursor, values);
    return this.client.query({ name, text: sqlOrCursor, values }) as unknown as Promise<PostgresQueryResult<R>>;
  }

  release(): void {
    this.client.release();
  }
}

/**
 * Wraps a pg pool for Kysely's PostgresDialect so its queries use named statements. Kysely keeps
 * its connection state per client object, so each pg client gets one wrapper for its whole life.
 */
export function preparingPool(pool: pg.Pool): PostgresPool {
  const wrappers = new WeakMap<pg.PoolClient, PreparingClient>();
  return {
    async connect() {
      const client = await pool.connect();
      let wrapper = wrappers.get(client);
      if (!wrapper) {
        wrapper = new PreparingClient(client);
        wrappers.set(client, wrapper);
      }
      return wrapper;
    },
    end: () => pool.end(),
  };
}
