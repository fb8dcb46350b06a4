import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PGLITE_STATISTICS_TARGET, StatisticsKeeper } from '../../src/db/statistics.ts';
import { newId } from '../../src/lib/ids.ts';
import { buildTestApp, engine, type TestApp } from '../helpers/test-app.ts';
import { createTenant } from '../helpers/tenants.ts';

let t: TestApp;

beforeAll(async () => {
  // The app's own keeper stays stopped: it would analyse the tables before the keeper under test.
  t = await buildTestApp({}, { workers: false });
});
afterAll(() => t.close());

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The table's row estimate and changes since its last analysis, as the planner and autovacuum see them. */
async function tableState(name: string) {
  const { rows } = await sql<{ reltuples: number; n_mod_since_analyze: number }>`
    select c.reltuples::float8 as reltuples, s.n_mod_since_analyze::float8 as n_mod_since_analyze
    from pg_class c join pg_stat_user_tables s on s.relid = c.oid
    where c.relnamespace = current_schema()::regnamespace and c.relname = ${name}`.execute(t.database.db);
  return rows[0];
}

describe(`statistics kept without autovacuum (${engine})`, () => {
  it("analyses a table once its changes pass autovacuum's threshold, and only then", async () => {
    const db = t.database.db;
    const keeper = new StatisticsKeeper(db, engine);
    // CI's PostgreSQL runs with autovacuum off, as this keeper expects; on a server where it is on the
    // keeper leaves the work to it (checked in the keeper's query) and this test has nothing to see.
    const autovacuum = (await sql<{ v: string }>`select current_setting('autovacuum') as v`.execute(db)).rows[0].v;
    if (engine === 'postgres' && autovacuum === 'on') return;

    await keeper.analyzeChanged(); // whatever the migrations and the tenant left
    const { businessId } = await createTenant(t.app, 'Stats');
    const contacts = Array.from({ length: 400 }, (_, i) => ({
      business_id: businessId,
      id: newId(),
      first_name: `c${i}`,
    }));
    await db.insertInto('contacts').values(contacts).execute();

    // The server publishes a backend's counts within a second or so of its transaction.
    let analysed: string[] = [];
    for (let i = 0; i < 50 && !analysed.includes('contacts'); i++) {
      await sleep(200);
      analysed = await keeper.analyzeChanged();
    }
    expect(analysed).toContain('contacts');
    const after = await tableState('contacts');
    expect(after.reltuples).toBeGreaterThanOrEqual(400);
    // 400 distinct names: a histogram of target + 1 bounds. On PGlite the keeper samples less, so
    // that the analysis holds the only connection for less time; PostgreSQL keeps its own target.
    const {
      rows: [stats],
    } = await sql<{ bounds: number; target: string }>`
      select array_length(string_to_array(trim(both '{}' from histogram_bounds::text), ','), 1) as bounds,
        current_setting('default_statistics_target') as target
      from pg_stats where schemaname = current_schema() and tablename = 'contacts' and attname = 'first_name'`.execute(
      db,
    );
    expect(stats.bounds).toBe((engine === 'pglite' ? PGLITE_STATISTICS_TARGET : Number(stats.target)) + 1);

    // 30 more rows: under 50 + 10% of 400, so not due.
    await db
      .insertInto('contacts')
      .values(contacts.slice(0, 30).map((c) => ({ ...c, id: newId() })))
      .execute();
    await sleep(1500);
    expect(await keeper.analyzeChanged()).not.toContain('contacts');

    // Every row updated: past the threshold, but the table has not grown and was analysed within
    // autovacuum_naptime, so it waits for the next visit.
    await db.updateTable('contacts').set({ last_name: 'updated' }).where('business_id', '=', businessId).execute();
    await sleep(1500);
    expect(await keeper.analyzeChanged()).not.toContain('contacts');

    // More than doubled since the planner counted it: analysed at once.
    const more = Array.from({ length: 500 }, (_, i) => ({ business_id: businessId, id: newId(), first_name: `d${i}` }));
    await db.insertInto('contacts').values(more).execute();
    analysed = [];
    for (let i = 0; i < 50 && !analysed.includes('contacts'); i++) {
      await sleep(200);
      analysed = await keeper.analyzeChanged();
    }
    expect(analysed).toContain('contacts');
    expect((await tableState('contacts')).reltuples).toBeGreaterThanOrEqual(930);
  });

  it('runs on a timer and stops cleanly', async () => {
    const keeper = new StatisticsKeeper(t.database.db, engine);
    const errors: unknown[] = [];
    keeper.start((err) => errors.push(err), 20);
    await sleep(100);
    await keeper.stop();
    expect(errors).toEqual([]);
  });
});
