import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../../src/lib/ids.ts';
import { createTenant, type Tenant } from '../../helpers/tenants.ts';
import { buildTestApp, type TestApp } from '../../helpers/test-app.ts';
import { call, createUser, signIn, type Browser } from '../dashboard-auth/dashboard-helpers.ts';

let t: TestApp;
let acme: Tenant;
let other: Tenant;
let admin: Browser;
let owner: Browser;
let agent: Browser;
let stranger: Browser;

beforeAll(async () => {
  t = await buildTestApp({}, { workers: false });
  acme = await createTenant(t.app, 'Acme');
  other = await createTenant(t.app, 'Other');
  const password = 'correct horse';
  await createUser(t.app, acme.businessId, { email: 'owner@acme.test', password, role: 'owner' });
  await createUser(t.app, acme.businessId, { email: 'admin@acme.test', password, role: 'admin' });
  await createUser(t.app, acme.businessId, { email: 'agent@acme.test', password, role: 'agent' });
  await createUser(t.app, other.businessId, { email: 'admin@other.test', password, role: 'admin' });
  owner = await signIn(t.app, 'owner@acme.test', password);
  admin = await signIn(t.app, 'admin@acme.test', password);
  agent = await signIn(t.app, 'agent@acme.test', password);
  stranger = await signIn(t.app, 'admin@other.test', password);
});
afterAll(() => t.close());

const contacts = (key: string) =>
  t.app.inject({ method: 'GET', url: '/external/v2/contacts?email=nobody%40acme.test', headers: { 'x-api-key': key } });

async function waitForLastUse(id: string): Promise<string> {
  for (let i = 0; i < 200; i++) {
    const row = await t.database.db
      .selectFrom('api_keys')
      .select('last_used_at')
      .where('id', '=', id)
      .executeTakeFirstOrThrow();
    if (row.last_used_at) return row.last_used_at;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error('the key was never marked used');
}

describe('API keys in the dashboard', () => {
  it('creates a key shown once, lists it with its last use, and revokes it at once', async () => {
    const created = await call(t.app, admin, 'POST', '/api-keys', { name: 'Zapier' });
    expect(created.statusCode).toBe(201);
    const { api_key: apiKey, key } = created.json();
    expect(key).toMatch(/^mk_live_[0-9A-Za-z]{43}$/);
    expect(apiKey).toMatchObject({ name: 'Zapier', prefix: key.slice(0, 12), revoked_at: null, last_used_at: null });

    // The key works on the public API, and that use is written to the key.
    expect((await contacts(key)).statusCode).toBe(200);
    const lastUse = await waitForLastUse(apiKey.id);
    const listed = await call(t.app, owner, 'GET', '/api-keys');
    expect(listed.statusCode).toBe(200);
    const row = listed.json().api_keys.find((k: { id: string }) => k.id === apiKey.id);
    expect(row).toEqual({ ...apiKey, last_used_at: lastUse });
    expect(listed.body).not.toContain(key);

    // Cached by the first request, yet refused by the next one after the revocation.
    expect((await contacts(key)).statusCode).toBe(200);
    const revoked = await call(t.app, admin, 'DELETE', `/api-keys/${apiKey.id}`);
    expect(revoked.statusCode).toBe(204);
    const refused = await contacts(key);
    expect(refused.statusCode).toBe(401);
    expect(refused.json().error.code).toBe('unauthorized');
    const after = (await call(t.app, admin, 'GET', '/api-keys')).json().api_keys;
    expect(after.find((k: { id: string }) => k.id === apiKey.id).revoked_at).not.toBeNull();
    // A second revocation finds no live key.
    expect((await call(t.app, admin, 'DELETE', `/api-keys/${apiKey.id}`)).statusCode).toBe(404);
  });

  it('writes a last use at most once a minute per key', async () => {
    const { api_key: apiKey, key } = (await call(t.app, admin, 'POST', '/api-keys', { name: 'Busy' })).json();
    await contacts(key);
    const first = await waitForLastUse(apiKey.id);
    await t.database.db
      .updateTable('api_keys')
      .set({ last_used_at: '2000-01-01T00:00:00Z' })
      .where('id', '=', apiKey.id)
      .execute();
    for (let i = 0; i < 3; i++) expect((await contacts(key)).statusCode).toBe(200);
    await new Promise((r) => setTimeout(r, 100));
    const row = await t.database.db
      .selectFrom('api_keys')
      .select('last_used_at')
      .where('id', '=', apiKey.id)
      .executeTakeFirstOrThrow();
    expect(first).not.toBe('2000-01-01T00:00:00.000000Z');
    expect(new Date(row.last_used_at!).getUTCFullYear()).toBe(2000);
  });

  it('answers 403 to an agent on every route', async () => {
    const id = newId();
    for (const [method, url, body] of [
      ['GET', '/api-keys', undefined],
      ['POST', '/api-keys', { name: 'x' }],
      ['DELETE', `/api-keys/${id}`, undefined],
    ] as const) {
      const res = await call(t.app, agent, method, url, body);
      expect(res.statusCode, `${method} ${url}`).toBe(403);
      expect(res.json().error.code).toBe('forbidden');
    }
  });

  it("lists only the session's business and answers 404 for another business's key", async () => {
    const { api_key: theirs, key } = (await call(t.app, stranger, 'POST', '/api-keys', { name: 'Theirs' })).json();
    const mine = (await call(t.app, admin, 'GET', '/api-keys')).json().api_keys as { id: string }[];
    expect(mine.map((k) => k.id)).not.toContain(theirs.id);
    const res = await call(t.app, admin, 'DELETE', `/api-keys/${theirs.id}`);
    expect(res.statusCode).toBe(404);
    expect(res.json().error.code).toBe('not_found');
    expect((await contacts(key)).statusCode).toBe(200);
  });

  it('refuses bad input with 400 and a write without the CSRF token with 403', async () => {
    for (const body of [{ name: '' }, { name: 'x'.repeat(101) }, { name: 'x', scopes: ['all'] }, { name: 7 }]) {
      const res = await call(t.app, admin, 'POST', '/api-keys', body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(res.json().error.code).toBe('validation_error');
    }
    expect((await call(t.app, admin, 'DELETE', '/api-keys/not-a-uuid')).statusCode).toBe(400);
    const csrf = await call(t.app, admin, 'POST', '/api-keys', { name: 'x' }, { 'x-csrf-token': undefined });
    expect(csrf.statusCode).toBe(403);
    expect(csrf.json().error.code).toBe('csrf_failed');
    const noSession = await t.app.inject({ method: 'GET', url: '/dashboard/api/api-keys' });
    expect(noSession.statusCode).toBe(401);
  });
});
