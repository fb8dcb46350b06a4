/**
 * What opening the embedded engine costs, in time and resident memory: opens PGlite on a data
 * directory, migrates it, runs 2 000 small queries, and prints the time of each step and the
 * process's memory after it. Run it with the V8 flags to compare (they are not allowed in
 * NODE_OPTIONS), e.g.
 *
 *   npx tsx bench/pglite-open.ts /tmp/pglite-open
 *   npx tsx --no-liftoff bench/pglite-open.ts /tmp/pglite-open
 *
 * The first run creates the directory; compare the runs after it.
 */
import { sql } from 'kysely';
import { openDatabase } from '../src/db/database.ts';
import { migrateToLatest } from '../src/db/migrate.ts';

const dataDir = process.argv[2] ?? '/tmp/pglite-open';
const mb = (bytes: number) => Math.round(bytes / 1048576);
const show = (step: string, ms?: number) => {
  const m = process.memoryUsage();
  console.log(
    `${step.padEnd(10)} ${ms === undefined ? '' : `${Math.round(ms)} ms, `}rss ${mb(m.rss)} MB, heap ${mb(m.heapTotal)} MB, external ${mb(m.external)} MB`,
  );
};

/** Runs one step and prints its time and the memory after it. */
async function step<T>(name: string, run: () => Promise<T>): Promise<T> {
  const started = performance.now();
  const result = await run();
  show(name, performance.now() - started);
  return result;
}

show('start');
const database = await step('opened', () => openDatabase({ dataDir }));
await step('migrated', () => migrateToLatest(database.db));
await step('queried', async () => {
  for (let i = 0; i < 2000; i++)
    await sql`select count(*) from pg_class where relname like ${`%${i}`}`.execute(database.db);
});
await database.close();
