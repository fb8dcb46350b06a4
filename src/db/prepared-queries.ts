import type { Compilable, CompiledQuery } from 'kysely';
import { Batcher } from '../lib/batcher.ts';
import type { Db } from './database.ts';

type Args = readonly (string | number)[];
type Build<A extends Args, R> = (db: Db, ...args: A) => Compilable<R>;

/** A query compiled with placeholders, and which parameter slot holds which argument. */
interface Compiled<R> {
  query: CompiledQuery<R>;
  /** For each parameter of the query, the index of the argument it takes, or undefined for a constant. */
  slots: (number | undefined)[];
}

function compile<A extends Args, R>(db: Db, placeholders: A, build: Build<A, R>): Compiled<R> {
  const query = build(db, ...placeholders).compile();
  const slots = query.parameters.map((value) => {
    const slot = placeholders.indexOf(value as A[number]);
    return slot === -1 ? undefined : slot;
  });
  return { query, slots };
}

async function executeOne<R>({ query, slots }: Compiled<R>, db: Db, args: Args): Promise<R[]> {
  const parameters = query.parameters.map((value, i) => {
    const slot = slots[i];
    return slot === undefined ? value : args[slot];
  });
  const result = await db.executeQuery<R>({ ...query, parameters });
  return result.rows;
}

/**
 * Builds a Kysely query once and reuses its compiled SQL, so a hot path does not pay for building
 * and compiling the same query on every request (measured ~50 µs for the phone lookup's query,
 * a fifth of the server's CPU per lookup, docs/PERFORMANCE-CHOICES.md#queries-compiled-once).
 *
 * The first call builds the query with `placeholders` (values that cannot occur as constants in
 * it) and records which parameter slot holds which argument; later calls put their own arguments
 * in those slots. `build` must pass its arguments to Kysely unchanged (no lower-casing, no
 * JSON.stringify): it sees only the placeholders, once. The SQL text does not depend on the
 * database handle (both engines use Kysely's PostgreSQL compiler), so the one compilation serves a
 * transaction as well as the pool, and the same text is what prepared-statements.ts names.
 */
export function compiledOnce<A extends Args, R>(
  placeholders: A,
  build: Build<A, R>,
): (db: Db, ...args: A) => Promise<R[]> {
  let compiled: Compiled<R> | undefined;
  return (db, ...args) => {
    compiled ??= compile(db, placeholders, build);
    return executeOne(compiled, db, args);
  };
}

/** How the calls of a batchedOnce query gather. */
export interface BatchOptions {
  /** Statements of the query running at once on the pool; calls made meanwhile wait and share the next. */
  maxRunning: number;
  /** Calls answered by one statement at most. */
  maxItems: number;
}

const BATCH_COLUMN = '__batch';

/**
 * compiledOnce for a read that many requests run at the same time (the public lookups): the calls
 * made in one turn of the event loop (the requests read from one socket poll), and those made while
 * `maxRunning` statements of the query are running, are answered by one statement that runs the
 * query once per call,
 *
 *   select b.n as __batch, r.* from json_to_recordset($1::json) as b(a0 uuid, a1 text, n int4)
 *   cross join lateral (<the query, its arguments read from b>) as r
 *
 * with $1 the calls' arguments, `[{"a0": …, "a1": …, "n": 1}, …]`.
 *
 * Per statement the service pays a write to the database (on PostgreSQL a socket write that wakes
 * a backend, on PGlite a crossing into WebAssembly), and the database a protocol round (bind,
 * execute, sync, ready): most of a lookup's CPU
 * (docs/PERFORMANCE-CHOICES.md#shared-lookup-statements). A statement for k calls pays them once. A
 * call waits at most one turn of the event loop when nothing else is running; a call inside a
 * transaction runs alone, at once, on the transaction's connection.
 *
 * The text never changes with the number of calls (the arguments travel in one JSON value), so on
 * both engines it is one named statement (prepared-statements.ts), and its plan is kept: the rows of
 * `json_to_recordset` are estimated alike whatever the calls. With an array per argument
 * (`unnest`), PostgreSQL estimated the rows from the arrays it was given, found a statement of few
 * calls cheaper planned for its own arguments than with the kept plan, and planned it again every
 * time, which cost more than running it (5 calls: 1.5 ms a statement against 0.6 ms;
 * docs/PERFORMANCE-CHOICES.md#shared-lookup-statements). `types` gives the PostgreSQL type of each argument.
 *
 * The rows of a call keep the query's order: a LATERAL subquery is run by a nested loop over `b`,
 * once per row, and each run returns its rows in its own ORDER BY (tested). The query's text must
 * not contain `$` except in its parameters (Kysely's compiler quotes names and passes every value
 * as a parameter). A failed statement is retried call by call (Batcher), so a bad argument fails
 * only its own request.
 */
export function batchedOnce<A extends Args, R>(
  placeholders: A,
  types: { readonly [K in keyof A]: string },
  build: Build<A, R>,
  options: BatchOptions = { maxRunning: 2, maxItems: 50 },
): (db: Db, ...args: A) => Promise<R[]> {
  let compiled: { one: Compiled<R>; many: Batched<R> } | undefined;
  const batchers = new WeakMap<Db, Batcher<A, R[]>>();

  const runBatch = async (db: Db, { one, many }: NonNullable<typeof compiled>, calls: A[]): Promise<R[][]> => {
    if (calls.length === 1) return [await executeOne(one, db, calls[0])];
    const parameters = [JSON.stringify(calls.map(argumentsRecord)), ...many.constants];
    const { rows } = await db.executeQuery<R & { [BATCH_COLUMN]: string }>({ ...many.query, parameters });
    const answers: R[][] = calls.map(() => []);
    for (const { [BATCH_COLUMN]: n, ...row } of rows) answers[Number(n) - 1].push(row as R);
    return answers;
  };

  return (db, ...args) => {
    if (!compiled) {
      const one = compile(db, placeholders, build);
      compiled = { one, many: batchOf(one, types) };
    }
    if (db.isTransaction) return executeOne(compiled.one, db, args);
    let batcher = batchers.get(db);
    if (!batcher) {
      const queries = compiled;
      batcher = new Batcher<A, R[]>((calls) => runBatch(db, queries, calls), { ...options, gatherMs: 0 });
      batchers.set(db, batcher);
    }
    return batcher.submit(args);
  };
}

/** A call's arguments as a record of json_to_recordset: a0, a1, …, and n, its position from 1. */
function argumentsRecord(call: Args, index: number): Record<string, string | number> {
  const record: Record<string, string | number> = { n: index + 1 };
  call.forEach((value, slot) => {
    record[`a${slot}`] = value;
  });
  return record;
}

/** The statement of batchedOnce: the calls' arguments (argumentsRecord) come first, then `constants`. */
interface Batched<R> {
  query: CompiledQuery<R & { [BATCH_COLUMN]: string }>;
  /** The query's own constant parameters (those no argument fills), after the arguments. */
  constants: readonly unknown[];
}

/** The statement that runs `single` once per call's arguments (see batchedOnce). */
function batchOf<R>(single: Compiled<R>, types: readonly string[]): Batched<R> {
  const { query, slots } = single;
  // The query's constants keep their order, numbered after the arguments' parameter.
  const renumbered = new Map<number, number>();
  slots.forEach((slot, i) => {
    if (slot === undefined) renumbered.set(i, renumbered.size + 2);
  });
  const inner = query.sql.replace(/\$(\d+)/g, (_, digits: string) => {
    const i = Number(digits) - 1;
    if (i < 0 || i >= slots.length) throw new Error(`batchedOnce: $${digits} is not a parameter of the query`);
    const slot = slots[i];
    return slot === undefined ? `$${renumbered.get(i)}` : `b.a${slot}`;
  });
  const columns = types.map((type, slot) => `a${slot} ${type}`).join(', ');
  const sql = `select b.n as "${BATCH_COLUMN}", r.* from json_to_recordset($1::json) as b(${columns}, n int4) cross join lateral (${inner}) as r`;
  return {
    query: { ...query, sql, parameters: [] },
    constants: query.parameters.filter((_, i) => slots[i] === undefined),
  };
}
