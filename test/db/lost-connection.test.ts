import { describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import pg from 'pg';
import { openDatabase } from '../../src/db/database.ts';
import { engine } from '../helpers/test-app.ts';

// Only PostgreSQL has connections a server can close under the process.
describe.runIf(engine === 'postgres')('a PostgreSQL connection closed by the server', () => {
  it('is replaced, and the process goes on', async () => {
    const database = await openDatabase({ databaseUrl: process.env.TEST_DATABASE_URL, poolSize: 2 });
    try {
      const before = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(database.db);
      const admin = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
      await admin.connect();
      await admin.query('select pg_terminate_backend($1)', [before.rows[0].pid]);
      await admin.end();
      await new Promise((r) => setTimeout(r, 100));
      const after = await sql<{ one: number }>`select 1 as one`.execute(database.db);
      expect(after.rows[0].one).toBe(1);
    } finally {
      await database.close();
    }
  });
});
