import { CompiledQuery, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { contactsRepository } from '../../../src/modules/contacts/contacts.repository.ts';
import { newId } from '../../../src/lib/ids.ts';
import { at, insertAliases, insertContact } from '../../helpers/factories.ts';
import { createTenant, type Tenant } from '../../helpers/tenants.ts';
import { buildTestApp, type TestApp } from '../../helpers/test-app.ts';

let t: TestApp;
let tenant: Tenant;
let other: Tenant;

beforeAll(async () => {
  t = await buildTestApp();
  tenant = await createTenant(t.app);
  other = await createTenant(t.app, 'Other');
});
afterAll(() => t.close());

const search = (query: string, headers: Record<string, string> = tenant.headers) =>
  t.app.inject({ method: 'GET', url: `/external/v2/contacts?${query}`, headers });
const ids = (res: { json(): { results: { id: string }[] } }) => res.json().results.map((c) => c.id);

describe('GET /contacts', () => {
  it('answers the snake_case form', async () => {
    const c = await insertContact(t.database.db, tenant.businessId, {
      first_name: 'Grace',
      last_name: 'Hopper',
      email: 'Grace@Navy.mil',
      phone_number: '14155550101',
      external_id: 'crm-1',
    });
    const res = await search('external_id=crm-1');
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      results: [
        {
          id: c.id,
          first_name: 'Grace',
          last_name: 'Hopper',
          email: 'Grace@Navy.mil',
          phone_number: '14155550101',
          external_id: 'crm-1',
          identities: [],
          created_at: c.created_at,
        },
      ],
    });
    expect(c.created_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/);
  });

  it('matches email in any case and gives external_id null when absent', async () => {
    const c = await insertContact(t.database.db, tenant.businessId, { email: 'MiXed@Example.com' });
    const res = await search('email=mixed@EXAMPLE.COM');
    expect(ids(res)).toEqual([c.id]);
    expect(res.json().results[0].external_id).toBeNull();
  });

  it.each([
    ['Argentina', '5491123456789', '541123456789'],
    ['Chile', '56912345678', '5612345678'],
    ['Mexico', '5215512345678', '525512345678'],
  ])(
    'matches %s numbers with and without the optional mobile digit, both ways',
    async (_country, withDigit, withoutDigit) => {
      const stored = await insertContact(t.database.db, tenant.businessId, { phone_number: withDigit });
      expect(ids(await search(`phone=${withoutDigit}`))).toEqual([stored.id]);
      expect(ids(await search(`phone=${withDigit}`))).toEqual([stored.id]);
      // The shorter form stored, the longer one searched (a separate business, so the first contact is not in the way).
      const reverseTenant = await createTenant(t.app, 'Reverse');
      const reverse = await insertContact(t.database.db, reverseTenant.businessId, { phone_number: withoutDigit });
      expect(ids(await search(`phone=${withDigit}`, reverseTenant.headers))).toEqual([reverse.id]);
      expect(ids(await search(`phone=${withoutDigit}`, reverseTenant.headers))).toEqual([reverse.id]);
    },
  );

  it('accepts a leading plus on the phone', async () => {
    const c = await insertContact(t.database.db, tenant.businessId, { phone_number: '4915112345678' });
    expect(ids(await search('phone=%2B4915112345678'))).toEqual([c.id]);
  });

  it('returns every contact matching any identifier (OR), oldest first', async () => {
    const byPhone = await insertContact(t.database.db, tenant.businessId, {
      phone_number: '447700900123',
      created_at: at(30),
    });
    const byEmail = await insertContact(t.database.db, tenant.businessId, {
      email: 'or@example.com',
      created_at: at(10),
    });
    const byExternal = await insertContact(t.database.db, tenant.businessId, {
      external_id: 'or-ext',
      created_at: at(20),
    });
    const res = await search('phone=447700900123&email=or@example.com&external_id=or-ext');
    expect(ids(res)).toEqual([byEmail.id, byExternal.id, byPhone.id]);
  });

  it('resolves email and phone aliases to the surviving contact', async () => {
    const survivor = await insertContact(t.database.db, tenant.businessId, {
      email: 'survivor@example.com',
      phone_number: '5491199990000',
    });
    await insertAliases(t.database.db, [
      { business_id: tenant.businessId, kind: 'email', value: 'old@example.com', contact_id: survivor.id },
      { business_id: tenant.businessId, kind: 'phone', value: '541188887777', contact_id: survivor.id },
    ]);
    expect(ids(await search('email=OLD@example.com'))).toEqual([survivor.id]);
    expect(ids(await search('phone=5491188887777'))).toEqual([survivor.id]);
    expect(ids(await search('phone=541188887777&email=old@example.com'))).toEqual([survivor.id]);
  });

  it('answers at most 50 contacts, the oldest', async () => {
    const crowd = await createTenant(t.app, 'Crowd');
    const made = [];
    for (let i = 0; i < 55; i++) {
      made.push(
        await insertContact(t.database.db, crowd.businessId, { email: 'same@example.com', created_at: at(1000 - i) }),
      );
    }
    const res = await search('email=same@example.com', crowd.headers);
    const expected = [...made]
      .sort((a, b) => a.created_at.localeCompare(b.created_at))
      .slice(0, 50)
      .map((c) => c.id);
    expect(ids(res)).toEqual(expected);
  });

  it('answers an empty list when nothing matches', async () => {
    expect((await search('email=nobody@example.com')).json()).toEqual({ results: [] });
  });

  it('does not see the contacts of another business', async () => {
    await insertContact(t.database.db, tenant.businessId, { email: 'private@example.com' });
    expect((await search('email=private@example.com', other.headers)).json()).toEqual({ results: [] });
  });

  it('answers concurrent lookups of two businesses, which share statements, each with its own contacts', async () => {
    // The same phones in both businesses, and lookups made at once so they run in shared statements.
    const phones = ['5491155550001', '5215555550002', '34600555003', '14155550004', '56955550005'];
    const mine: { id: string }[] = [];
    const theirs: { id: string }[] = [];
    for (const phone of phones) {
      mine.push(await insertContact(t.database.db, tenant.businessId, { phone_number: phone }));
      theirs.push(await insertContact(t.database.db, other.businessId, { phone_number: phone }));
    }
    const lookups = phones.flatMap((phone, i) => [
      { headers: tenant.headers, query: `phone=${phone}`, expected: [mine[i].id] },
      { headers: other.headers, query: `phone=${phone}`, expected: [theirs[i].id] },
      { headers: tenant.headers, query: `phone=${phone}&email=shared-none@example.com`, expected: [mine[i].id] },
    ]);
    const answers = await Promise.all([...lookups, ...lookups].map((l) => search(l.query, l.headers)));
    answers.forEach((res, i) => expect(ids(res)).toEqual(lookups[i % lookups.length].expected));
  });

  it.each([
    ['no identifier', ''],
    ['empty email', 'email='],
    ['invalid email', 'email=not-an-email'],
    ['invalid phone', 'phone=abc'],
    ['too short phone', 'phone=123'],
    ['phone with an unknown country code', 'phone=99912345678'],
    ['empty external_id', 'external_id='],
    ['over-long external_id', `external_id=${'x'.repeat(256)}`],
    ['over-long phone', `phone=${'1'.repeat(40)}`],
    ['unknown parameter', 'email=a@b.co&nickname=x'],
    ['repeated email', 'email=a@b.co&email=c@d.co'],
  ])('answers 400 for %s', async (_name, query) => {
    const res = await search(query);
    expect(res.statusCode).toBe(400);
    expect(res.json().error.code).toBe('validation_error');
  });

  it("finds a contact by a channel's address, a merged duplicate's included, and lists the addresses channels know it by", async () => {
    const [visitor] = await contactsRepository.insertMany(t.database.db, [
      {
        business_id: tenant.businessId,
        id: newId(),
        first_name: 'Page',
        identity: { kind: 'page_scoped_id', value: '7310000000000901' },
        address: null,
        source: 'messenger',
      },
    ]);
    const survivor = await insertContact(t.database.db, tenant.businessId, { phone_number: '14155550901' });
    // By a phone channel's address, in any form of the number: the contact its traffic lands on.
    expect(ids(await search('channel=sms&address=%2B1%20415%20555%200901'))).toEqual([survivor.id]);
    expect(ids(await search('channel=whatsapp&address=14155550901&external_id=none'))).toEqual([survivor.id]);

    const merged = await t.app.inject({
      method: 'POST',
      url: '/external/v2/contacts/merge',
      headers: tenant.headers,
      payload: { survivor_id: survivor.id, loser_id: visitor.id },
    });
    expect(merged.statusCode).toBe(200);
    const got = await t.app.inject({
      method: 'GET',
      url: `/external/v2/contacts/${survivor.id}`,
      headers: tenant.headers,
    });
    expect(got.json().contact.identities).toEqual([{ kind: 'page_scoped_id', value: '7310000000000901' }]);
    // Another business sees none of it.
    expect(ids(await search('channel=sms&address=14155550901', other.headers))).toEqual([]);
  });

  it('answers 400 for a channel without its address, an address that is not of its kind, or a channel no provider serves', async () => {
    for (const query of [
      'channel=sms',
      'address=14155550101',
      'channel=sms&address=not-a-phone',
      'channel=tiktok&address=not%20a%20conversation',
      'channel=voice&address=x',
      'channel=fax&address=1',
    ]) {
      const res = await search(query);
      expect(res.statusCode, query).toBe(400);
      expect(res.json().error, query).toBeDefined();
    }
  });

  it('answers 401 without a valid key', async () => {
    expect((await search('email=a@b.co', {})).statusCode).toBe(401);
  });
});

describe('the identifier lookup plan', () => {
  // Matching is index probes, whatever the size of the business and whether the table has statistics
  // yet: no plan node reads more rows than the lookup finds.
  it('reads only the matching rows, also on a table that was never analysed', async () => {
    const db = t.database.db;
    const crowd = await createTenant(t.app, 'Crowd');
    await sql`insert into contacts (business_id, id, first_name, last_name, phone_number, phone_key, email, tags, source)
      select ${crowd.businessId}::uuid, gen_random_uuid(), 'Many', 'More', '1415555' || lpad(g::text, 4, '0'), '1415555' || lpad(g::text, 4, '0'),
             'many' || g || '@example.com', '{}', 'api'
      from generate_series(1, 3000) g`.execute(db);
    const query = contactsRepository.identifiersQuery(
      db,
      crowd.businessId,
      { phoneKey: '14155551234', email: 'many77@example.com' },
      50,
    )!;
    const { sql: text, parameters } = query.compile();
    const { rows } = await db.executeQuery<{ 'QUERY PLAN': unknown }>(
      CompiledQuery.raw(`explain (analyze, format json) ${text}`, [...parameters]),
    );
    const raw = rows[0]['QUERY PLAN'];
    const plan = (typeof raw === 'string' ? JSON.parse(raw) : raw) as [{ Plan: PlanNode }];
    const nodes: PlanNode[] = [];
    const walk = (node: PlanNode) => {
      nodes.push(node);
      node.Plans?.forEach(walk);
    };
    walk(plan[0].Plan);
    expect(nodes.filter((n) => n['Node Type'] === 'Seq Scan')).toEqual([]);
    for (const node of nodes) {
      expect(node['Actual Rows'] * node['Actual Loops'], node['Node Type']).toBeLessThanOrEqual(4);
      expect(node['Rows Removed by Filter'] ?? 0, node['Node Type']).toBe(0);
    }
    const found = await db.executeQuery<{ email: string }>(CompiledQuery.raw(text, [...parameters]));
    expect(found.rows.map((r) => r.email).sort()).toEqual(['many1234@example.com', 'many77@example.com']);
  });
});

interface PlanNode {
  'Node Type': string;
  'Actual Rows': number;
  'Actual Loops': number;
  'Rows Removed by Filter'?: number;
  Plans?: PlanNode[];
}
