import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isoTimestampSql, pgTimestampToIso } from '../../src/db/timestamps.ts';
import { buildTestApp, engine, type TestApp } from '../helpers/test-app.ts';

let t: TestApp;

beforeAll(async () => {
  t = await buildTestApp({}, { workers: false });
});
afterAll(() => t.close());

describe(`timestamps (${engine})`, () => {
  // Whole seconds, a fraction with trailing zeros, all six digits, a time zone other than UTC.
  const inputs = [
    '2026-01-01 00:00:00+00',
    '2026-11-21 19:54:13.152+00',
    '2026-02-28 23:59:59.000123+00',
    '1999-12-31 21:30:00.5-03',
  ];

  it("writes a timestamp the same way in SQL (isoTimestampSql) as from the driver's text (pgTimestampToIso)", async () => {
    for (const input of inputs) {
      const { rows } = await sql<{ text: string; iso: string }>`
        select (${input}::timestamptz)::text as text, ${sql.raw(isoTimestampSql(`'${input}'::timestamptz`))} as iso`.execute(
        t.database.db,
      );
      expect(rows[0].iso).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/);
      expect(rows[0].iso).toBe(pgTimestampToIso(rows[0].text));
    }
  });
});
