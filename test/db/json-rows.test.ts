import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonRows } from '../../src/db/json-rows.ts';
import { newId } from '../../src/lib/ids.ts';
import { buildTestApp, engine, type TestApp } from '../helpers/test-app.ts';

let t: TestApp;
const business = newId();
const ids = Array.from({ length: 2000 }, () => newId());

beforeAll(async () => {
  t = await buildTestApp({}, { workers: false });
  const db = t.database.db;
  // As wide as a message row, so the table spans about a hundred pages.
  await sql`create table json_rows_items (business_id uuid not null, id uuid not null, state text not null, body text not null, primary key (business_id, id))`.execute(
    db,
  );
  await sql`insert into json_rows_items select ${business}::uuid, x::uuid, 'waiting', repeat('x', 300) from json_array_elements_text(${JSON.stringify(ids)}::json) as x`.execute(
    db,
  );
  await sql`analyze json_rows_items`.execute(db);
});
afterAll(() => t.close());

const mark = (keys: string[]) => sql<{ id: string; note: string | null }>`
  update json_rows_items m set state = 'done'
  from ${jsonRows(
    'v',
    { business_id: 'uuid', id: 'uuid', note: 'text' },
    keys.map((id, i) => ({ business_id: business, id, note: i === 0 ? null : `it's "${i}" \\ ✓\n` })),
  )}
  where m.business_id = v.business_id and m.id = v.id
  returning m.id, v.note`;

describe(`rows joined from one JSON value (${engine})`, () => {
  it('reads every row with its own values, typed, awkward text and nulls included', async () => {
    const keys = ids.slice(0, 3);
    const { rows } = await mark(keys).execute(t.database.db);
    expect(rows.sort((a, b) => keys.indexOf(a.id) - keys.indexOf(b.id))).toEqual([
      { id: keys[0], note: null },
      { id: keys[1], note: 'it\'s "1" \\ ✓\n' },
      { id: keys[2], note: 'it\'s "2" \\ ✓\n' },
    ]);
    expect(() => jsonRows('v', { id: 'uuid' }, [])).toThrow(/at least one row/);
  });

  // One text whatever the number of rows, so one named statement per connection whose plan is kept;
  // the planner expects 10 rows (batch_rows), so it probes the primary key of a table this size
  // rather than scanning it (with the 100 it assumes of json_to_recordset it scanned).
  it('keeps one plan for every batch size, probing the primary key', async () => {
    const stats = await t.database.db.connection().execute(async (connection) => {
      for (let size = 1; size <= 12; size++)
        await mark(ids.slice(100 + size * 20, 100 + size * 21)).execute(connection);
      const { rows } = await sql<{ generic_plans: string; custom_plans: string }>`select generic_plans, custom_plans
        from pg_prepared_statements where statement like '%update json_rows_items%'`.execute(connection);
      return rows;
    });
    expect(stats).toHaveLength(1);
    expect(Number(stats[0].generic_plans)).toBeGreaterThanOrEqual(5);

    const plan = await t.database.db.transaction().execute(async (trx) => {
      await sql`set local plan_cache_mode = force_generic_plan`.execute(trx);
      const { sql: text } = mark(ids.slice(0, 2)).compile(t.database.db);
      await sql.raw(`prepare json_rows_plan(json) as ${text}`).execute(trx);
      const { rows } = await sql<{ 'QUERY PLAN': string }>`explain execute json_rows_plan('[]')`.execute(trx);
      await sql`deallocate json_rows_plan`.execute(trx);
      return rows.map((r) => r['QUERY PLAN']).join('\n');
    });
    expect(plan).not.toMatch(/Seq Scan/);
    expect(plan).toMatch(/Index Scan using json_rows_items_pkey/);
    expect(plan).toMatch(/Function Scan on batch_rows v_row .*rows=10 /);
  });
});
