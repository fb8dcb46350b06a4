import { sql, type Kysely, type KyselyPlugin } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../src/db/database.ts';
import { batchedOnce } from '../../src/db/prepared-queries.ts';
import { newId } from '../../src/lib/ids.ts';
import { buildTestApp, engine, type TestApp } from '../helpers/test-app.ts';

let t: TestApp;
const businessA = newId();
const businessB = newId();

beforeAll(async () => {
  t = await buildTestApp({}, { workers: false });
  const db = t.database.db;
  await sql`create table batch_items (business_id uuid not null, k text not null, n int not null, primary key (business_id, k, n))`.execute(
    db,
  );
  const rows = [
    ...[1, 2, 3, 4, 5].map((n) => [businessA, 'x', n]),
    ...[1, 2].map((n) => [businessA, 'y', n]),
    ...[1, 2, 3].map((n) => [businessB, 'x', n]),
  ];
  for (const [b, k, n] of rows) await sql`insert into batch_items values (${b}::uuid, ${k}, ${n}::int)`.execute(db);
});
afterAll(() => t.close());

/** Counts the statements a database handle runs (each result passes through the plugin once). */
function counted(db: Db): { db: Db; statements: () => number } {
  let statements = 0;
  const plugin: KyselyPlugin = {
    transformQuery: (args) => args.node,
    transformResult: async (args) => {
      statements += 1;
      return args.result;
    },
  };
  return { db: db.withPlugin(plugin), statements: () => statements };
}

/** Items of a business and key, largest first, at most `max`; `n > 0` is a constant of the query. */
const itemsOf = () =>
  batchedOnce(
    ['\u0000business', '\u0000key', -1] as [string, string, number],
    ['uuid', 'text', 'int4'],
    (db, business, key, max) =>
      (db as unknown as Kysely<any>)
        .selectFrom('batch_items')
        .select(['k', 'n'])
        .where('business_id', '=', business)
        .where('k', '=', key)
        .where('n', '>', 0)
        .orderBy('n', 'desc')
        .limit(max),
    { maxRunning: 1, maxItems: 50 },
  );

const calls: [string, string, number][] = [
  [businessA, 'x', 10],
  [businessA, 'y', 10],
  [businessB, 'x', 2],
  [businessA, 'z', 10],
  [businessA, 'x', 3],
  [businessB, 'y', 10],
  [businessB, 'x', 10],
  [businessA, 'x', 1],
];
const expected = (business: string, key: string, max: number) => {
  const counts: Record<string, number> = { [`${businessA}x`]: 5, [`${businessA}y`]: 2, [`${businessB}x`]: 3 };
  const count = counts[business + key] ?? 0;
  return Array.from({ length: Math.min(count, max) }, (_, i) => ({ k: key, n: count - i }));
};

describe(`batchedOnce (${engine})`, () => {
  it("answers concurrent calls with one statement, each with its own rows in the query's order", async () => {
    const run = itemsOf();
    const { db, statements } = counted(t.database.db);
    const answers = await Promise.all([...calls, ...calls, ...calls].map((args) => run(db, ...args)));
    answers.forEach((rows, i) => expect(rows).toEqual(expected(...calls[i % calls.length])));
    expect(statements()).toBe(1);
    // Calls made after a statement has started share the next one.
    const first = run(db, ...calls[0]);
    await new Promise((resolve) => setImmediate(resolve));
    const later = await Promise.all(calls.map((args) => run(db, ...args)));
    expect(await first).toEqual(expected(...calls[0]));
    later.forEach((rows, i) => expect(rows).toEqual(expected(...calls[i])));
    expect(statements()).toBe(3);
  });

  it('runs a lone call as the plain query, and a call in a transaction on the transaction', async () => {
    const run = itemsOf();
    const { db, statements } = counted(t.database.db);
    expect(await run(db, businessA, 'y', 10)).toEqual(expected(businessA, 'y', 10));
    expect(statements()).toBe(1);
    // A row the transaction wrote and has not committed: only its own connection sees it.
    const rolledBack = new Error('roll back');
    let inTransaction: unknown;
    await expect(
      db.transaction().execute(async (trx) => {
        await sql`insert into batch_items values (${businessB}::uuid, 'x', 9)`.execute(trx);
        inTransaction = await run(trx, businessB, 'x', 2);
        throw rolledBack;
      }),
    ).rejects.toBe(rolledBack);
    expect(inTransaction).toEqual([
      { k: 'x', n: 9 },
      { k: 'x', n: 3 },
    ]);
    expect(await run(db, businessB, 'x', 2)).toEqual(expected(businessB, 'x', 2));
  });

  it('fails only the call with a bad argument, not the others of its statement', async () => {
    const run = itemsOf();
    const { db } = counted(t.database.db);
    const [first, ...rest] = await Promise.allSettled(
      [calls[0], ...calls, [businessA, 'x', 'ten' as unknown as number] as const, ['not-a-uuid', 'x', 3] as const].map(
        (args) => run(db, ...(args as [string, string, number])),
      ),
    );
    expect(first).toEqual({ status: 'fulfilled', value: expected(...calls[0]) });
    rest
      .slice(0, calls.length)
      .forEach((answer, i) => expect(answer).toEqual({ status: 'fulfilled', value: expected(...calls[i]) }));
    expect(rest.slice(calls.length).map((answer) => answer.status)).toEqual(['rejected', 'rejected']);
  });

  // The database plans a named statement for its first five runs, then keeps a plan if it costs no
  // more than those. A statement of few calls must keep it rather than be planned again each time.
  it('keeps the plan of a statement of few calls', async () => {
    const run = itemsOf();
    const plans = await t.database.db.connection().execute(async (connection) => {
      for (let round = 0; round < 10; round++) {
        const answers = await Promise.all(calls.slice(0, 3).map((args) => run(connection, ...args)));
        answers.forEach((rows, i) => expect(rows).toEqual(expected(...calls[i])));
      }
      const { rows } = await sql<{ generic_plans: string; custom_plans: string }>`select generic_plans, custom_plans
        from pg_prepared_statements where statement like '%batch_items%' and statement like '%"__batch"%'`.execute(
        connection,
      );
      return rows;
    });
    expect(plans).toHaveLength(1);
    expect(Number(plans[0].generic_plans)).toBeGreaterThanOrEqual(5);
  });

  it('keeps the calls of two database handles apart', async () => {
    const run = itemsOf();
    const one = counted(t.database.db);
    const two = counted(t.database.db);
    const answers = await Promise.all(calls.flatMap((args) => [run(one.db, ...args), run(two.db, ...args)]));
    answers.forEach((rows, i) => expect(rows).toEqual(expected(...calls[Math.floor(i / 2)])));
    expect([one.statements(), two.statements()]).toEqual([1, 1]);
  });
});
