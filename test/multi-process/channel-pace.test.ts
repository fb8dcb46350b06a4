import pg from 'pg';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { startFakeGraphApi, type FakeGraphApi } from '../helpers/fake-graph-api.ts';
import { ADMIN_TOKEN, engine, postgresTestDatabase, type PostgresTestDatabase } from '../helpers/test-app.ts';
import { expectPaceKeptAcross, processName } from './paced-sends.ts';
import { bundleServer, startServerProcess, type ServerProcess } from './server-processes.ts';

// Two server processes without Redis share a channel's pace in PostgreSQL (`channel_paces`). The
// processes of many-processes.test.ts share it in Redis when TEST_REDIS_URL is set and check it
// there; without Redis they pace in PostgreSQL, and this file has nothing to add.

let postgres: PostgresTestDatabase;
let bundle: Awaited<ReturnType<typeof bundleServer>>;
let servers: ServerProcess[] = [];
let graph: FakeGraphApi;
let db: pg.Pool;

describe.runIf(engine === 'postgres' && Boolean(process.env.TEST_REDIS_URL))(
  "a channel's pace kept in PostgreSQL by two server processes",
  () => {
    beforeAll(async () => {
      [postgres, bundle, graph] = await Promise.all([postgresTestDatabase(), bundleServer(), startFakeGraphApi()]);
      if (postgres.schema) throw new Error('the processes need a database of their own (CREATE DATABASE was refused)');
      db = new pg.Pool({ connectionString: postgres.databaseUrl, max: 2 });
      const env = {
        DATABASE_URL: postgres.databaseUrl,
        SECRET_KEY: 'test-secret-key-0123456789-0123456789',
        ADMIN_TOKEN,
        DATA_DIR: `${bundle.entry}.data`,
        // The fake Graph API listens on loopback, a private target.
        ALLOW_PRIVATE_WEBHOOK_TARGETS: 'true',
        REDIS_URL: '',
      };
      servers = await Promise.all(
        [0, 1].map((i) => startServerProcess(bundle.entry, { ...env, PGAPPNAME: processName(i) })),
      );
    }, 90_000);

    afterAll(async () => {
      await Promise.all(servers.map((server) => server.stop()));
      await db?.end();
      await Promise.all([graph?.close(), bundle?.remove()]);
      await postgres?.drop();
    });

    // One try more, as in many-processes.test.ts: a starved machine may release two turns' calls together.
    it('keeps the pace across both processes', { retry: 1 }, async () => {
      await expectPaceKeptAcross(servers, db, graph);
    });
  },
);
