import { sql } from 'kysely';
import { describe, expect, it, vi } from 'vitest';
import { openDatabase } from '../../src/db/database.ts';

// Creating a database in WebAssembly takes a core for seconds; on a busy CI machine, far more than the default.
vi.setConfig({ testTimeout: 120_000 });

describe.skipIf(process.env.TEST_ENGINE === 'postgres')('an in-memory database started from a copy', () => {
  it('holds what the copy held, and its own changes reach neither the copy nor the original', async () => {
    const original = await openDatabase({ dataDir: 'memory://' });
    await sql`create table notes (id int primary key, body text)`.execute(original.db);
    await sql`insert into notes values (1, 'kept')`.execute(original.db);
    const copy = await original.snapshot!();

    const started = await openDatabase({ dataDir: 'memory://', snapshot: copy });
    const again = await openDatabase({ dataDir: 'memory://', snapshot: copy });
    try {
      expect((await sql<{ body: string }>`select body from notes`.execute(started.db)).rows).toEqual([
        { body: 'kept' },
      ]);
      await sql`insert into notes values (2, 'mine')`.execute(started.db);
      await sql`insert into notes values (3, 'original')`.execute(original.db);
      expect((await sql<{ id: number }>`select id from notes order by id`.execute(again.db)).rows).toEqual([{ id: 1 }]);
      expect((await sql<{ id: number }>`select id from notes order by id`.execute(original.db)).rows).toEqual([
        { id: 1 },
        { id: 3 },
      ]);
      // Timestamps read as on any database of the service (UTC, microseconds).
      expect(
        (await sql<{ at: string }>`select '2026-08-01 00:00:00.000001+00'::timestamptz as at`.execute(started.db))
          .rows[0].at,
      ).toBe('2026-08-01T00:00:00.000001Z');
    } finally {
      await Promise.all([original.close(), started.close(), again.close()]);
    }
  });
});
