import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PgliteSocket } from '../../src/db/pglite-socket.ts';

// node-postgres over the in-process socket to PGlite (src/db/pglite-socket.ts). Embedded engine only.
describe.skipIf(process.env.TEST_ENGINE === 'postgres')('node-postgres over the PGlite socket', () => {
  let pglite: PGlite;
  let pool: pg.Pool;
  /** The protocol bytes of each call into PGlite since the test began. */
  let calls: Uint8Array[] = [];

  beforeAll(async () => {
    pglite = await PGlite.create();
    const raw = pglite.execProtocolRawStream.bind(pglite);
    pglite.execProtocolRawStream = (message, options) => {
      calls.push(message);
      return raw(message, options);
    };
    pool = new pg.Pool({ stream: () => new PgliteSocket(pglite), user: 'postgres', database: 'postgres', max: 1 });
  });
  afterAll(async () => {
    await pool.end();
    await pglite.close();
  });

  /** The message types of a call, in order ('P' parse, 'B' bind, 'D' describe, 'E' execute, 'S' sync). */
  function messageTypes(bytes: Uint8Array): string {
    let types = '';
    for (let at = 0; at < bytes.length;) {
      types += String.fromCharCode(bytes[at]);
      at += 1 + new DataView(bytes.buffer, bytes.byteOffset + at + 1, 4).getInt32(0);
    }
    return types;
  }

  it('hands a whole query to PGlite in one call and reads typed rows from its answer', async () => {
    await pool.query('select 1'); // connects first: the startup is a call of its own
    calls = [];
    const { rows } = await pool.query({
      name: 'socket_test',
      text: 'select $1::int + 1 as n, $2::text as t, null::text as z',
      values: [41, 'é ✓'],
    });
    expect(rows).toEqual([{ n: 42, t: 'é ✓', z: null }]);
    expect(calls.map(messageTypes)).toEqual(['PBDES']);

    calls = [];
    await pool.query({
      name: 'socket_test',
      text: 'select $1::int + 1 as n, $2::text as t, null::text as z',
      values: [1, ''],
    });
    expect(calls.map(messageTypes)).toEqual(['BDES']); // the named statement is parsed once
  });

  it("carries an answer far larger than PGlite's receive buffer intact", async () => {
    const { rows } = await pool.query<{ s: string }>(`select repeat('abc', 1000000) as s from generate_series(1, 3)`);
    expect(rows).toHaveLength(3);
    expect(rows.every((r) => r.s.length === 3_000_000 && r.s.endsWith('abcabc'))).toBe(true);
  });

  it('reports a database error to its query and keeps the session usable, in and out of a transaction', async () => {
    await expect(pool.query('select 1 / $1::int', [0])).rejects.toThrow(/division by zero/);
    const client = await pool.connect();
    try {
      await client.query('begin');
      await client.query('create temporary table socket_rows (n int)');
      await client.query('insert into socket_rows values (1)');
      await expect(client.query('insert into socket_rows values ($1)', ['not a number'])).rejects.toThrow(
        /invalid input syntax/,
      );
      await expect(client.query('select 1')).rejects.toThrow(/current transaction is aborted/);
      await client.query('rollback');
    } finally {
      client.release();
    }
    expect(
      (await pool.query('select count(*)::int as n from pg_class where relname = $1', ['socket_rows'])).rows,
    ).toEqual([{ n: 0 }]);
  });

  it('answers queries sent while another is running, in order', async () => {
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) => pool.query<{ n: number }>('select $1::int as n', [i])),
    );
    expect(answers.map((a) => a.rows[0].n)).toEqual(Array.from({ length: 20 }, (_, i) => i));
  });

  it('ends a client cleanly, and a new one connects to the same engine', async () => {
    const client = new pg.Client({ stream: () => new PgliteSocket(pglite), user: 'postgres', database: 'postgres' });
    await client.connect();
    await client.query('create table socket_kept (n int)');
    await client.end();
    const again = new pg.Client({ stream: () => new PgliteSocket(pglite), user: 'postgres', database: 'postgres' });
    await again.connect();
    expect((await again.query('select count(*)::int as n from socket_kept')).rows).toEqual([{ n: 0 }]);
    await again.end();
  });
});
