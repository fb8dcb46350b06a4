/**
 * The AI agent's search_collection: the latency of one search (the top 5 items by cosine, exact)
 * over `--items` active embedded items of one business, with pgvector where the database has it
 * and with the scan in SQL, each `--queries` times with a random query vector.
 *
 *   npx tsx bench/vector-search.bench.ts [--engine pglite|postgres] [--items 100000]
 *                                        [--dimensions 256] [--queries 20]
 *
 * The items are written by the database itself (random vectors), in slices of 10 000. PGlite: a new
 * directory under /tmp, removed afterwards. PostgreSQL: TEST_DATABASE_URL (a database of its own,
 * dropped afterwards).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { sql } from 'kysely';
import { openDatabase } from '../src/db/database.ts';
import { migrateToLatest } from '../src/db/migrate.ts';
import { newId } from '../src/lib/ids.ts';
import { searchRepository, type VectorMethod } from '../src/modules/search/search.repository.ts';
import { postgresTestDatabase } from '../test/helpers/test-app.ts';

const { values } = parseArgs({
  options: {
    engine: { type: 'string', default: 'pglite' },
    items: { type: 'string', default: '100000' },
    dimensions: { type: 'string', default: '256' },
    queries: { type: 'string', default: '20' },
  },
});
const items = Number(values.items);
const dimensions = Number(values.dimensions);
const queries = Number(values.queries);

const postgres = values.engine === 'postgres' ? await postgresTestDatabase() : undefined;
const dataDir = postgres ? undefined : mkdtempSync(join(tmpdir(), 'bench-vector-'));
const database = await openDatabase({ databaseUrl: postgres?.databaseUrl, schema: postgres?.schema, dataDir });
try {
  await migrateToLatest(database.db, postgres?.schema);
  const { db } = database;
  const businessId = newId();
  const collectionId = newId();
  await sql`insert into businesses (id, name) values (${businessId}, 'Bench')`.execute(db);
  await sql`insert into search_collections (business_id, id, name, embedding_fields)
    values (${businessId}, ${collectionId}, 'Bench', '["title"]')`.execute(db);
  const loadStarted = performance.now();
  for (let from = 0; from < items; from += 10_000) {
    // The vector's subquery names the row, so each row gets its own.
    await sql`insert into search_items (business_id, collection_id, id, external_id, payload, embedding_json,
        is_active, source, embedding, embedding_model, embedded_at)
      select ${businessId}::uuid, ${collectionId}::uuid, gen_random_uuid(), 'item-' || g, jsonb_build_object('title', 'item ' || g),
        jsonb_build_object('title', 'item ' || g), true, 'bench',
        array(select (random() - 0.5)::real from generate_series(1, ${dimensions}::int) d where g > 0), 'bench', now()
      from generate_series(${from}::int, ${Math.min(items, from + 10_000) - 1}::int) g`.execute(db);
  }
  await sql`analyze search_items`.execute(db);
  const loadSeconds = (performance.now() - loadStarted) / 1000;

  const available = await searchRepository.vectorMethod(db);
  const methods: VectorMethod[] = available.kind === 'pgvector' ? [available, { kind: 'scan' }] : [{ kind: 'scan' }];
  const vectors = Array.from({ length: queries }, () => Array.from({ length: dimensions }, () => Math.random() - 0.5));
  const results: Record<string, unknown> = {};
  for (const method of methods) {
    // One search first, so that the data is in the cache as in a service that searches often.
    await searchRepository.nearestItems(db, businessId, { vector: vectors[0], limit: 5 }, method);
    const times: number[] = [];
    for (const vector of vectors) {
      const started = performance.now();
      const found = await searchRepository.nearestItems(db, businessId, { vector, limit: 5 }, method);
      times.push(performance.now() - started);
      if (found.length !== 5) throw new Error(`expected 5 items, got ${found.length}`);
    }
    times.sort((a, b) => a - b);
    const at = (p: number) => Math.round(times[Math.min(times.length - 1, Math.floor(p * times.length))]);
    results[method.kind] = { p50_ms: at(0.5), p95_ms: at(0.95), max_ms: Math.round(times[times.length - 1]) };
  }
  const loadS = Math.round(loadSeconds);
  console.log(JSON.stringify({ engine: database.engine, items, dimensions, queries, load_s: loadS, ...results }));
} finally {
  await database.close();
  await postgres?.drop();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
}
