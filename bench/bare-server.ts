/**
 * The baselines of the lookup benchmark, in one Fastify process with no auth or validation:
 *
 * - bare: the service's lookup paths answered with the bytes the service answered (body and extra
 *   headers captured from it), with no database;
 * - floor (when FLOOR_DATABASE_URL or FLOOR_DATA_DIR is set): the same bytes read from the database
 *   by one prepared primary-key read per request (`GET /floor<path>`), through the service's own
 *   database layer (src/db/database.ts: a pool as large as the service's on PostgreSQL, PGlite in
 *   this process under FLOOR_DATA_DIR). It is the cheapest route that asks the database for its
 *   answer, so it tells what a database round trip costs on the machine, against which the
 *   service's lookups (which also authenticate, validate and look up three tables) can be read.
 *
 * Run by bench/lib/bare.ts with PORT and BARE_RESPONSES (a JSON file).
 */
import { readFileSync } from 'node:fs';
import Fastify from 'fastify';
import { CompiledQuery } from 'kysely';
import { openDatabase } from '../src/db/database.ts';

interface CapturedResponse {
  path: string;
  contentType: string;
  headers: Record<string, string>;
  body: string;
}

const FLOOR_TABLE = 'bench_floor_answers';

const responses = JSON.parse(readFileSync(process.env.BARE_RESPONSES!, 'utf8')) as CapturedResponse[];
const app = Fastify({ logger: false });

app.get('/readyz', async () => ({ status: 'ready' }));
for (const captured of responses) {
  app.get(captured.path, async (_request, reply) =>
    reply.headers(captured.headers).type(captured.contentType).send(captured.body),
  );
}

const { FLOOR_DATABASE_URL: databaseUrl, FLOOR_DATA_DIR: dataDir } = process.env;
const floor = databaseUrl || dataDir ? await openDatabase({ databaseUrl, dataDir }) : undefined;
if (floor) {
  await floor.db.executeQuery(
    CompiledQuery.raw(`create table if not exists ${FLOOR_TABLE} (path text primary key, body text not null)`),
  );
  for (const captured of responses) {
    await floor.db.executeQuery(
      CompiledQuery.raw(
        `insert into ${FLOOR_TABLE} (path, body) values ($1, $2) on conflict (path) do update set body = excluded.body`,
        [captured.path, captured.body],
      ),
    );
    const read = CompiledQuery.raw(`select body from ${FLOOR_TABLE} where path = $1`, [captured.path]);
    app.get(`/floor${captured.path}`, async (_request, reply) => {
      const { rows } = await floor.db.executeQuery<{ body: string }>(read);
      return reply.headers(captured.headers).type(captured.contentType).send(rows[0].body);
    });
  }
}

const stop = async () => {
  await app.close();
  if (floor) {
    await floor.db.executeQuery(CompiledQuery.raw(`drop table if exists ${FLOOR_TABLE}`));
    await floor.close();
  }
  process.exit(0);
};
process.on('SIGTERM', () => void stop());
process.on('SIGINT', () => void stop());
await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });
