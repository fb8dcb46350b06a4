import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertAliases, insertContact } from '../../helpers/factories.ts';
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

const create = (payload: unknown, headers: Record<string, string> = tenant.headers) =>
  t.app.inject({ method: 'POST', url: '/external/v2/contacts', headers, payload: payload as object });
const read = (id: string, headers: Record<string, string> = tenant.headers) =>
  t.app.inject({ method: 'GET', url: `/external/v2/contacts/${id}`, headers });

describe('POST /contacts', () => {
  it('creates a contact and answers 201 with the snake_case form', async () => {
    const res = await create({
      first_name: 'Ada',
      last_name: 'Lovelace',
      email: 'ada@example.com',
      phone_number: '+54 9 11 2345-6789',
      external_id: 'crm-ada',
      tags: ['vip', 'vip', 'new'],
      custom_fields: { plan: 'gold', seats: 3, active: true, gone: null },
    });
    expect(res.statusCode).toBe(201);
    const contact = res.json().contact;
    expect(contact).toEqual({
      id: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-7/),
      first_name: 'Ada',
      last_name: 'Lovelace',
      email: 'ada@example.com',
      phone_number: '5491123456789',
      external_id: 'crm-ada',
      identities: [],
      created_at: expect.stringMatching(/\.\d{6}Z$/),
    });
    const row = await t.database.db
      .selectFrom('contacts')
      .selectAll()
      .where('id', '=', contact.id)
      .executeTakeFirstOrThrow();
    expect(row).toMatchObject({
      business_id: tenant.businessId,
      phone_number: '5491123456789',
      phone_key: '541123456789',
      tags: ['vip', 'new'],
      custom_fields: { plan: 'gold', seats: 3, active: true },
      source: 'api',
      is_test: false,
    });
    expect((await read(contact.id)).json()).toEqual({ contact });
  });

  it('needs only one identifier; absent names are empty and absent identifiers null', async () => {
    for (const payload of [
      { email: 'only-email@example.com' },
      { phone_number: '14155550199' },
      { external_id: 'only-ext' },
    ]) {
      const res = await create(payload);
      expect(res.statusCode, JSON.stringify(payload)).toBe(201);
      const contact = res.json().contact;
      expect(contact.first_name).toBe('');
      expect(contact.last_name).toBe('');
      for (const field of ['email', 'phone_number', 'external_id'] as const) {
        const sent = field in payload;
        if (!sent) expect(contact[field]).toBeNull();
      }
    }
  });

  it('makes the new contact findable by its identifiers', async () => {
    const { contact } = (await create({ phone_number: '56987654321', email: 'Find.Me@example.com' })).json();
    const byPhone = await t.app.inject({
      method: 'GET',
      url: '/external/v2/contacts?phone=5687654321',
      headers: tenant.headers,
    });
    expect(byPhone.json().results.map((c: { id: string }) => c.id)).toEqual([contact.id]);
  });

  it.each([
    ['email, in another case', { email: 'taken@example.com' }, { email: 'TAKEN@example.com' }, 'email'],
    [
      'phone, in another country form',
      { phone_number: '5215599998888' },
      { phone_number: '525599998888' },
      'phone_number',
    ],
    ['external_id', { external_id: 'taken-ext' }, { external_id: 'taken-ext' }, 'external_id'],
  ])('answers 409 conflict when the %s already belongs to a contact', async (_name, first, second, field) => {
    const existing = (await create(first)).json().contact;
    const res = await create({ ...second, first_name: 'Dup' });
    expect(res.statusCode).toBe(409);
    expect(res.json().error.code).toBe('conflict');
    expect(res.json().error.details).toEqual([{ field, contact_id: existing.id }]);
  });

  it('answers 409 naming the survivor when the identifier is an alias', async () => {
    const survivor = await insertContact(t.database.db, tenant.businessId, { email: 'kept@example.com' });
    await insertAliases(t.database.db, {
      business_id: tenant.businessId,
      kind: 'email',
      value: 'merged-away@example.com',
      contact_id: survivor.id,
    });
    const res = await create({ email: 'Merged-Away@example.com' });
    expect(res.statusCode).toBe(409);
    expect(res.json().error.details).toEqual([{ field: 'email', contact_id: survivor.id }]);
  });

  it('lets another business use the same identifiers', async () => {
    await create({ email: 'shared@example.com', external_id: 'shared-ext' });
    expect((await create({ email: 'shared@example.com', external_id: 'shared-ext' }, other.headers)).statusCode).toBe(
      201,
    );
  });

  it('creates one contact when two requests claim the same email at once', async () => {
    const results = await Promise.all([create({ email: 'race@example.com' }), create({ email: 'race@example.com' })]);
    expect(results.map((r) => r.statusCode).sort()).toEqual([201, 409]);
  });

  it.each([
    ['no identifier', { first_name: 'Nobody' }],
    ['an empty body', {}],
    ['an invalid email', { email: 'not-an-email' }],
    ['an invalid phone', { phone_number: 'call me' }],
    ['a too short phone', { phone_number: '1234' }],
    ['an unknown field', { email: 'u@example.com', nickname: 'x' }],
    ['a number as email', { email: 42 }],
    ['a number as phone', { phone_number: 5491123456789 }],
    ['tags not an array', { email: 'u@example.com', tags: 'vip' }],
    ['an empty tag', { email: 'u@example.com', tags: [''] }],
    ['too many tags', { email: 'u@example.com', tags: Array.from({ length: 51 }, (_, i) => `t${i}`) }],
    ['custom_fields not an object', { email: 'u@example.com', custom_fields: ['a'] }],
    ['a nested custom field value', { email: 'u@example.com', custom_fields: { a: { b: 1 } } }],
    ['a custom field key with spaces', { email: 'u@example.com', custom_fields: { 'a b': 1 } }],
    ['an over-long custom field key', { email: 'u@example.com', custom_fields: { ['k'.repeat(65)]: 1 } }],
    ['an over-long custom field value', { email: 'u@example.com', custom_fields: { k: 'v'.repeat(2001) } }],
    [
      'too many custom fields',
      { email: 'u@example.com', custom_fields: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, i])) },
    ],
    ['an over-long first_name', { email: 'u@example.com', first_name: 'a'.repeat(201) }],
    ['an over-long email', { email: `${'a'.repeat(250)}@example.com` }],
    ['an over-long external_id', { external_id: 'x'.repeat(256) }],
    ['is_test (operator only)', { email: 'u@example.com', is_test: true }],
  ])('answers 400 for %s', async (_name, payload) => {
    const res = await create(payload);
    expect(res.statusCode).toBe(400);
    expect(res.json().error.code).toBe('validation_error');
  });

  it('answers 400 for malformed JSON and for a body that is not an object', async () => {
    for (const payload of ['{"email": ', '[]', '"x"']) {
      const res = await t.app.inject({
        method: 'POST',
        url: '/external/v2/contacts',
        headers: { ...tenant.headers, 'content-type': 'application/json' },
        payload,
      });
      expect(res.statusCode, payload).toBe(400);
      expect(res.json().error.code).toBe('validation_error');
    }
  });

  it('answers 401 without a valid key', async () => {
    expect((await create({ email: 'k@example.com' }, {})).statusCode).toBe(401);
  });
});

describe('GET /contacts/:uuid', () => {
  it('answers 404 for an unknown id and for a contact of another business', async () => {
    const mine = (await create({ email: 'mine@example.com' })).json().contact;
    for (const res of [await read('0190a6f0-0000-7000-8000-000000000000'), await read(mine.id, other.headers)]) {
      expect(res.statusCode).toBe(404);
      expect(res.json().error.code).toBe('not_found');
    }
  });

  it('answers 400 for a malformed id and 401 without a key', async () => {
    expect((await read('not-a-uuid')).statusCode).toBe(400);
    expect((await read('0190a6f0-0000-7000-8000-000000000000', {})).statusCode).toBe(401);
  });
});
