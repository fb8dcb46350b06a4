import { execFile } from 'node:child_process';
import { userInfo } from 'node:os';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { withDefaultUser } from '../../src/db/connection-string.ts';

describe('a PostgreSQL URL without a user', () => {
  const me = userInfo().username;

  it("takes the operating system's user, as psql does; a URL with a user or anything else is kept", () => {
    expect(withDefaultUser('postgres://localhost/warehouse')).toBe(`postgres://${me}@localhost/warehouse`);
    expect(withDefaultUser('postgresql://127.0.0.1:5432/db?options=-c%20search_path%3Dx')).toBe(
      `postgresql://${me}@127.0.0.1:5432/db?options=-c%20search_path%3Dx`,
    );
    expect(withDefaultUser('postgres://ana:secret@db.example/x')).toBe('postgres://ana:secret@db.example/x');
    expect(withDefaultUser('/var/run/postgresql warehouse')).toBe('/var/run/postgresql warehouse');
  });

  // node-postgres reads $USER when the process starts, so the check runs in a process without it.
  it.runIf(process.env.TEST_DATABASE_URL)(
    'connects when $USER is unset (the sync tool, a service manager)',
    async () => {
      const url = new URL(process.env.TEST_DATABASE_URL!);
      const bare = `postgres://${url.host}${url.pathname}`;
      const env: NodeJS.ProcessEnv = { ...process.env, TEST_BARE_URL: bare };
      delete env.USER;
      delete env.PGUSER;
      const script = `
      import pg from 'pg';
      import { withDefaultUser } from './src/db/connection-string.ts';
      const client = new pg.Client({ connectionString: withDefaultUser(process.env.TEST_BARE_URL) });
      await client.connect();
      const { rows } = await client.query('select current_user as user');
      await client.end();
      process.stdout.write(rows[0].user);`;
      const { stdout } = await promisify(execFile)('npx', ['tsx', '--input-type=module', '-e', script], { env });
      expect(stdout).toBe(me);
    },
  );
});
