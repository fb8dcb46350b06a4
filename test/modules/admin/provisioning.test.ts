import { verify } from '@node-rs/argon2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminHeaders, createTenant, type Tenant } from '../../helpers/tenants.ts';
import { buildTestApp, type TestApp } from '../../helpers/test-app.ts';

let t: TestApp;
let tenant: Tenant;
const unknownBusiness = '0190a6f0-0000-7000-8000-000000000000';

beforeAll(async () => {
  t = await buildTestApp();
  tenant = await createTenant(t.app);
});
afterAll(() => t.close());

const post = (
  path: string,
  payload: unknown,
  businessId = tenant.businessId,
  headers: Record<string, string> = adminHeaders,
) =>
  t.app.inject({
    method: 'POST',
    url: `/admin/v1/businesses/${businessId}/${path}`,
    headers,
    payload: payload as object,
  });
const list = (path: string, businessId = tenant.businessId, query = '') =>
  t.app.inject({ method: 'GET', url: `/admin/v1/businesses/${businessId}/${path}${query}`, headers: adminHeaders });

describe('operator users', () => {
  it('creates a user, stores a salted Argon2id hash and never returns the password', async () => {
    const res = await post('users', { email: 'Agent@Acme.test', name: 'Agent', password: 'correct horse battery' });
    expect(res.statusCode).toBe(201);
    expect(res.json()).toEqual({
      user: { id: expect.any(String), email: 'Agent@Acme.test', name: 'Agent', role: 'agent' },
    });
    const row = await t.database.db
      .selectFrom('users')
      .selectAll()
      .where('id', '=', res.json().user.id)
      .executeTakeFirstOrThrow();
    expect(row.password_hash).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
    expect(await verify(row.password_hash!, 'correct horse battery')).toBe(true);
    const again = await post('users', { email: 'twin@acme.test', name: 'Twin', password: 'correct horse battery' });
    const twin = await t.database.db
      .selectFrom('users')
      .select('password_hash')
      .where('id', '=', again.json().user.id)
      .executeTakeFirstOrThrow();
    expect(twin.password_hash).not.toBe(row.password_hash);
    expect((await list('users')).body).not.toContain('argon2');
  });

  it('creates a user without a password', async () => {
    const res = await post('users', { email: 'nopass@acme.test', name: 'No Pass' });
    expect(res.statusCode).toBe(201);
    const row = await t.database.db
      .selectFrom('users')
      .select('password_hash')
      .where('id', '=', res.json().user.id)
      .executeTakeFirstOrThrow();
    expect(row.password_hash).toBeNull();
  });

  it('answers 409 for an email the business already has, in any case; another business may use it', async () => {
    await post('users', { email: 'dup@acme.test', name: 'One' });
    const res = await post('users', { email: 'DUP@acme.test', name: 'Two' });
    expect(res.statusCode).toBe(409);
    expect(res.json().error.code).toBe('conflict');
    const other = await createTenant(t.app, 'Other');
    expect((await post('users', { email: 'dup@acme.test', name: 'Elsewhere' }, other.businessId)).statusCode).toBe(201);
  });

  it('lists users oldest first, bounded by limit', async () => {
    const fresh = await createTenant(t.app, 'Listing');
    for (const n of [1, 2, 3]) await post('users', { email: `u${n}@list.test`, name: `U${n}` }, fresh.businessId);
    expect((await list('users', fresh.businessId)).json().users.map((u: { email: string }) => u.email)).toEqual([
      'u1@list.test',
      'u2@list.test',
      'u3@list.test',
    ]);
    expect((await list('users', fresh.businessId, '?limit=2')).json().users).toHaveLength(2);
    for (const query of ['?limit=0', '?limit=501', '?limit=x', '?other=1']) {
      expect((await list('users', fresh.businessId, query)).statusCode, query).toBe(400);
    }
  });

  it.each([
    ['an invalid email', { email: 'nope', name: 'X' }],
    ['a missing name', { email: 'x@acme.test' }],
    ['an empty name', { email: 'x@acme.test', name: '' }],
    ['a short password', { email: 'x@acme.test', name: 'X', password: 'short' }],
    ['an over-long password', { email: 'x@acme.test', name: 'X', password: 'p'.repeat(201) }],
    ['an over-long name', { email: 'x@acme.test', name: 'n'.repeat(201) }],
    ['an unknown field', { email: 'x@acme.test', name: 'X', team: 'admin' }],
    ['an unknown role', { email: 'x@acme.test', name: 'X', role: 'boss' }],
    ['invite and a password', { email: 'x@acme.test', name: 'X', invite: true, password: 'long enough' }],
    ['invite not a boolean', { email: 'x@acme.test', name: 'X', invite: 'yes' }],
    ['a wrong type', { email: 'x@acme.test', name: 7 }],
  ])('answers 400 for %s', async (_name, payload) => {
    const res = await post('users', payload);
    expect(res.statusCode).toBe(400);
    expect(res.json().error.code).toBe('validation_error');
  });
});

describe('operator teams and contact fields', () => {
  it('creates and lists teams', async () => {
    const res = await post('teams', { name: 'Support' });
    expect(res.statusCode).toBe(201);
    expect(res.json()).toEqual({ team: { id: expect.any(String), name: 'Support' } });
    expect((await list('teams')).json().teams).toContainEqual(res.json().team);
  });

  it('creates contact fields, refuses a duplicate key with 409, and lists them', async () => {
    const res = await post('contact-fields', { key: 'order_id', name: 'Order id' });
    expect(res.statusCode).toBe(201);
    expect(res.json()).toEqual({ contact_field: { id: expect.any(String), key: 'order_id', name: 'Order id' } });
    const dup = await post('contact-fields', { key: 'order_id', name: 'Again' });
    expect(dup.statusCode).toBe(409);
    expect(dup.json().error.code).toBe('conflict');
    expect((await list('contact-fields')).json().contact_fields).toEqual([res.json().contact_field]);
  });

  it.each([
    ['teams', { name: '' }],
    ['teams', { name: 'x'.repeat(201) }],
    ['teams', { name: 'A', extra: true }],
    ['contact-fields', { key: 'Order', name: 'Upper case' }],
    ['contact-fields', { key: '1st', name: 'Leading digit' }],
    ['contact-fields', { key: 'has-dash', name: 'Dash' }],
    ['contact-fields', { key: `k${'x'.repeat(64)}`, name: 'Too long' }],
    ['contact-fields', { key: 'ok' }],
    ['contact-fields', { key: 5, name: 'Number' }],
  ])('POST %s answers 400 for %j', async (path, payload) => {
    const res = await post(path, payload);
    expect(res.statusCode).toBe(400);
    expect(res.json().error.code).toBe('validation_error');
  });

  it('answers 400 for malformed JSON', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: `/admin/v1/businesses/${tenant.businessId}/teams`,
      headers: { ...adminHeaders, 'content-type': 'application/json' },
      payload: '{"name":',
    });
    expect(res.statusCode).toBe(400);
  });
});

describe('operator contacts', () => {
  it('creates a test contact and answers the snake_case form', async () => {
    const res = await post('contacts', { first_name: 'Test', phone_number: '5215512345678', is_test: true });
    expect(res.statusCode).toBe(201);
    expect(res.json().contact).toMatchObject({
      first_name: 'Test',
      last_name: '',
      email: null,
      phone_number: '5215512345678',
      external_id: null,
    });
    const row = await t.database.db
      .selectFrom('contacts')
      .selectAll()
      .where('id', '=', res.json().contact.id)
      .executeTakeFirstOrThrow();
    expect(row).toMatchObject({ business_id: tenant.businessId, is_test: true, phone_key: '525512345678' });
    const found = await t.app.inject({
      method: 'GET',
      url: '/external/v2/contacts?phone=525512345678',
      headers: tenant.headers,
    });
    expect(found.json().results.map((c: { id: string }) => c.id)).toEqual([row.id]);
  });

  it('follows the rules of POST /contacts: 409 for a taken identifier, 400 without one', async () => {
    await post('contacts', { external_id: 'op-1' });
    const dup = await post('contacts', { external_id: 'op-1', is_test: false });
    expect(dup.statusCode).toBe(409);
    expect((await post('contacts', { first_name: 'X', is_test: true })).statusCode).toBe(400);
    expect((await post('contacts', { email: 'x@acme.test', is_test: 'yes' })).statusCode).toBe(400);
  });
});

describe('operator provisioning of an unknown business', () => {
  it.each([
    ['POST', 'users', { email: 'a@b.co', name: 'A' }],
    ['POST', 'teams', { name: 'A' }],
    ['POST', 'contact-fields', { key: 'a', name: 'A' }],
    ['POST', 'contacts', { email: 'a@b.co' }],
    ['GET', 'users', undefined],
    ['GET', 'teams', undefined],
    ['GET', 'contact-fields', undefined],
  ])('%s %s answers 404', async (method, path, payload) => {
    const res = await t.app.inject({
      method: method as 'GET' | 'POST',
      url: `/admin/v1/businesses/${unknownBusiness}/${path}`,
      headers: adminHeaders,
      payload,
    });
    expect(res.statusCode).toBe(404);
    expect(res.json().error.code).toBe('not_found');
  });

  it('answers 400 for a malformed business id and 401 without the operator token', async () => {
    expect((await post('teams', { name: 'A' }, 'not-a-uuid')).statusCode).toBe(400);
    const res = await post('teams', { name: 'A' }, tenant.businessId, {});
    expect(res.statusCode).toBe(401);
    expect(res.json().error.code).toBe('unauthorized');
  });
});

describe('operator list of businesses', () => {
  const get = (query: string, headers: Record<string, string> = adminHeaders) =>
    t.app.inject({ method: 'GET', url: `/admin/v1/businesses${query}`, headers });
  const create = async (name: string) =>
    (
      await t.app.inject({ method: 'POST', url: '/admin/v1/businesses', headers: adminHeaders, payload: { name } })
    ).json().business as { id: string; name: string };

  it('pages through every business oldest first, and finds them by a part of the name in any case', async () => {
    const made = [];
    for (const name of ['Lost Demo 100%', 'lost demo_2', 'LOST DEMO three', 'Another shop'])
      made.push(await create(name));
    const seen: string[] = [];
    let after: string | null = null;
    do {
      const res = await get(`?limit=2${after ? `&after=${after}` : ''}`);
      expect(res.statusCode).toBe(200);
      const body = res.json();
      expect(body.businesses.length).toBeLessThanOrEqual(2);
      seen.push(...body.businesses.map((b: { id: string }) => b.id));
      after = body.next_after;
    } while (after);
    expect(seen).toEqual([...seen].sort());
    for (const business of made) expect(seen.filter((id) => id === business.id)).toHaveLength(1);

    const found = await get(`?name=${encodeURIComponent('lost DEMO')}`);
    expect(found.json()).toEqual({
      businesses: made.slice(0, 3).map((b) => expect.objectContaining(b)),
      next_after: null,
    });
    // % and _ are matched literally, not as patterns.
    expect((await get('?name=%25')).json().businesses.map((b: { name: string }) => b.name)).toEqual(['Lost Demo 100%']);
    expect((await get('?name=o_2')).json().businesses.map((b: { name: string }) => b.name)).toEqual(['lost demo_2']);
    expect((await get('?name=nobody-has-this-name')).json()).toEqual({ businesses: [], next_after: null });
  });

  it('answers 400 for a bad limit, cursor, name or unknown parameter, and 401 without the operator token', async () => {
    for (const query of ['?limit=0', '?limit=501', '?after=nope', '?name=', '?page=2']) {
      const res = await get(query);
      expect(res.statusCode, query).toBe(400);
      expect(res.json().error.code).toBe('validation_error');
    }
    expect((await get('', {})).statusCode).toBe(401);
  });
});
