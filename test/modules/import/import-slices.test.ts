import { Readable } from 'node:stream';
import { sql } from 'kysely';
import { v7 } from 'uuid';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sliceSizes } from '../../../src/db/slices.ts';
import { createTenant, type Tenant } from '../../helpers/tenants.ts';
import { buildTestApp, engine, type TestApp } from '../../helpers/test-app.ts';
import { postImport } from './import-helpers.ts';

// The import writes each table's rows a slice at a time (src/db/slices.ts), letting the other callers
// of the database in between two statements, and writes the contact_changed domain event of each
// contact it creates in the transaction of its rows.

let t: TestApp;
let tenant: Tenant;
const slice = sliceSizes(engine).importRows;

beforeAll(async () => {
  t = await buildTestApp();
  tenant = await createTenant(t.app, 'Sliced import');
});
afterAll(() => t.close());

const db = () => t.database.db;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const contactRecord = (id: string, i: number, tag: string) => ({
  type: 'contact',
  id,
  first_name: `${tag} ${i}`,
  email: `${tag}.${i}@example.com`,
  created_at: '2026-01-01T00:00:00.000001Z',
});

/** The records as one NDJSON stream whose lines are always ready: the import never waits for input. */
const stream = (records: object[]) => Readable.from([records.map((r) => JSON.stringify(r) + '\n').join('')]);

async function contactCount(tag: string): Promise<number> {
  const row = await db()
    .selectFrom('contacts')
    .select(sql<number>`count(*)::int`.as('n'))
    .where('business_id', '=', tenant.businessId)
    .where('first_name', 'like', `${tag} %`)
    .executeTakeFirstOrThrow();
  return row.n;
}

async function contactChangedOf(ids: string[]) {
  return db()
    .selectFrom('domain_events')
    .select(['subject_id', sql<string>`data->>'change'`.as('change')])
    .where('business_id', '=', tenant.businessId)
    .where('type', '=', 'contact_changed')
    .where('subject_id', 'in', ids)
    .execute();
}

describe('an import of many slices', () => {
  it('lets a request in between two statements: it is answered while the import is still writing', async () => {
    const total = slice * 8;
    const records = Array.from({ length: total }, (_, i) => contactRecord(v7(), i, 'interleave'));
    let answered = false;
    const importing = postImport(t.app, tenant.businessId, stream(records)).then((res) => {
      answered = true;
      return res;
    });
    const seen: number[] = [];
    while (!answered) {
      const read = await t.app.inject({
        method: 'GET',
        url: '/external/v2/contacts?email=nobody@example.com',
        headers: tenant.headers,
      });
      expect(read.statusCode).toBe(200);
      if (!answered) seen.push(await contactCount('interleave'));
      await sleep(2);
    }
    const res = await importing;
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().imported.contacts).toBe(total);
    const between = seen.filter((n) => n > 0 && n < total);
    expect(between.length, `contact counts seen while it was written: ${seen.join(' ')}`).toBeGreaterThan(0);
    expect(between.every((n) => n % slice === 0)).toBe(true);
  });
});

describe('contact_changed of imported contacts', () => {
  it('is written once per contact created, with the rows; a contact whose id exists gets none', async () => {
    const ids = Array.from({ length: slice + 3 }, () => v7());
    const records = ids.map((id, i) => contactRecord(id, i, 'events'));
    const first = await postImport(t.app, tenant.businessId, stream(records));
    expect(first.statusCode, first.body).toBe(200);
    expect(first.json().imported.contacts).toBe(ids.length);
    const events = await contactChangedOf(ids);
    expect(events).toHaveLength(ids.length);
    expect(new Set(events.map((e) => e.subject_id))).toEqual(new Set(ids));
    expect(events.every((e) => e.change === 'created')).toBe(true);

    // The same file again skips every contact: no event.
    const again = await postImport(t.app, tenant.businessId, stream(records));
    expect(again.json().imported.contacts).toBe(0);
    expect(await contactChangedOf(ids)).toHaveLength(ids.length);
  });

  it('is not written for a contact refused, and the rest of its batch keeps theirs', async () => {
    const taken = v7();
    const ok = await postImport(t.app, tenant.businessId, [
      { ...contactRecord(taken, 0, 'refused'), external_id: 'crm-taken' },
    ]);
    expect(ok.statusCode).toBe(200);
    const ids = [v7(), v7(), v7()];
    const res = await postImport(t.app, tenant.businessId, [
      contactRecord(ids[0], 1, 'refused'),
      // Its external_id belongs to another contact: refused alone, after the batch failed whole.
      { ...contactRecord(ids[1], 2, 'refused'), external_id: 'crm-taken' },
      contactRecord(ids[2], 3, 'refused'),
    ]);
    expect(res.statusCode).toBe(200);
    expect(res.json().imported.contacts).toBe(2);
    expect(res.json().errors).toHaveLength(1);
    const events = await contactChangedOf(ids);
    expect(new Set(events.map((e) => e.subject_id))).toEqual(new Set([ids[0], ids[2]]));
  });
});
