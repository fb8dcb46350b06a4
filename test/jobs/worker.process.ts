import { buildApp } from '../../src/app.ts';
import { openDatabase } from '../../src/db/database.ts';
import { testConfig } from '../helpers/test-app.ts';

// A server process with its background workers over the PostgreSQL database named by
// WORKER_DATABASE_URL (and WORKER_SCHEMA), as a test's other process: it prints `ready` once its
// workers run, and runs until it is killed.

const database = await openDatabase({
  databaseUrl: process.env.WORKER_DATABASE_URL,
  schema: process.env.WORKER_SCHEMA || undefined,
  poolSize: 5,
});
// Its provider (a fake Graph API) listens on loopback.
const app = await buildApp(testConfig({ ALLOW_PRIVATE_WEBHOOK_TARGETS: 'true' }), { database, logger: false });
await app.ready();
process.stdout.write('ready\n');
