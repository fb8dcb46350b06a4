import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../../src/lib/ids.ts';
import { adminHeaders, createTenant } from '../../helpers/tenants.ts';
import { buildTestApp, type TestApp } from '../../helpers/test-app.ts';
import { call, createUser, DAY, postSignIn, signIn, TestClock } from './dashboard-helpers.ts';

let t: TestApp;
let businessId: string;
const clock = new TestClock();

beforeAll(async () => {
  t = await buildTestApp({}, { workers: false, clock });
  businessId = (await createTenant(t.app, 'Acme')).businessId;
});
afterAll(() => t.close());

const operator = (method: 'PATCH' | 'DELETE', path: string, payload?: unknown, bid = businessId) =>
  t.app.inject({
    method,
    url: `/admin/v1/businesses/${bid}/${path}`,
    headers: adminHeaders,
    ...(payload !== undefined ? { payload: payload as object } : {}),
  });

describe('session expiry', () => {
  it('ends a session unused for 7 days; use keeps it alive', async () => {
    await createUser(t.app, businessId, { email: 'idle@acme.test', password: 'correct horse' });
    const used = await signIn(t.app, 'idle@acme.test', 'correct horse');
    const idle = await signIn(t.app, 'idle@acme.test', 'correct horse');
    clock.advance(6 * DAY);
    expect((await call(t.app, used, 'GET', '/session')).statusCode).toBe(200);
    clock.advance(DAY);
    expect((await call(t.app, used, 'GET', '/session')).statusCode).toBe(200);
    const ended = await call(t.app, idle, 'GET', '/session');
    expect(ended.statusCode).toBe(401);
    expect(ended.json().error.code).toBe('unauthorized');
  });

  it('tells a long-lived answer whether its session is still live', async () => {
    await createUser(t.app, businessId, { email: 'stream@acme.test', password: 'correct horse' });
    const browser = await signIn(t.app, 'stream@acme.test', 'correct horse');
    const { id } = (await call(t.app, browser, 'GET', '/sessions')).json().sessions[0];
    const sessions = t.app.services.dashboardSessions;
    expect(await sessions.isLive(id)).toBe(true);
    clock.advance(7 * DAY);
    expect(await sessions.isLive(id)).toBe(false);
    const next = await signIn(t.app, 'stream@acme.test', 'correct horse');
    const nextId = (await call(t.app, next, 'GET', '/sessions')).json().sessions[0].id;
    await call(t.app, next, 'DELETE', '/session');
    expect(await sessions.isLive(nextId)).toBe(false);
  });

  it('ends a session 30 days after sign-in however used, and cleanup deletes it', async () => {
    await createUser(t.app, businessId, { email: 'long@acme.test', password: 'correct horse' });
    const browser = await signIn(t.app, 'long@acme.test', 'correct horse');
    for (let day = 6; day < 30; day += 6) {
      clock.advance(6 * DAY);
      expect((await call(t.app, browser, 'GET', '/session')).statusCode, `day ${day}`).toBe(200);
    }
    clock.advance(6 * DAY);
    const ended = await call(t.app, browser, 'GET', '/session');
    expect(ended.statusCode).toBe(401);
    // The browser is told to forget the cookie.
    expect(ended.cookies).toContainEqual(expect.objectContaining({ name: 'session', value: '' }));
    const before = (await t.database.db.selectFrom('dashboard_sessions').select('id').execute()).length;
    const { sessions } = await t.app.services.dashboardSessions.deleteExpired();
    expect(sessions).toBeGreaterThan(0);
    expect((await t.database.db.selectFrom('dashboard_sessions').select('id').execute()).length).toBe(
      before - sessions,
    );
  });

  it('answers 401 for a missing, malformed or unknown cookie', async () => {
    expect((await t.app.inject({ method: 'GET', url: '/dashboard/api/session' })).statusCode).toBe(401);
    for (const token of ['x', 'a'.repeat(43), '%%%']) {
      const res = await t.app.inject({
        method: 'GET',
        url: '/dashboard/api/session',
        headers: { cookie: `session=${token}` },
      });
      expect(res.statusCode, token).toBe(401);
    }
  });
});

describe('the list of sessions and revocation', () => {
  it("lists the user's live sessions, ends one, and answers 404 for another user's or an unknown one", async () => {
    await createUser(t.app, businessId, { email: 'many@acme.test', password: 'correct horse' });
    await createUser(t.app, businessId, { email: 'else@acme.test', password: 'correct horse' });
    const here = await signIn(t.app, 'many@acme.test', 'correct horse');
    const res = await t.app.inject({
      method: 'POST',
      url: '/dashboard/api/session',
      headers: { 'content-type': 'application/json', 'user-agent': 'Phone browser' },
      payload: JSON.stringify({ email: 'many@acme.test', password: 'correct horse' }),
      remoteAddress: '203.0.113.9',
    });
    const phone = { token: res.cookies.find((c) => c.name === 'session')!.value, csrf: res.json().csrf_token };
    const elsewhere = await signIn(t.app, 'else@acme.test', 'correct horse');

    const list = await call(t.app, here, 'GET', '/sessions');
    expect(list.statusCode).toBe(200);
    const sessions = list.json().sessions;
    expect(sessions).toHaveLength(2);
    expect(sessions[0]).toEqual({
      id: expect.any(String),
      created_at: expect.any(String),
      last_seen_at: expect.any(String),
      expires_at: expect.any(String),
      ip: '203.0.113.9',
      user_agent: 'Phone browser',
      current: false,
    });
    expect(sessions[1]).toMatchObject({ current: true, ip: '127.0.0.1' });
    expect(JSON.stringify(sessions)).not.toContain(phone.token);

    const otherId = (await call(t.app, elsewhere, 'GET', '/sessions')).json().sessions[0].id;
    for (const id of [otherId, newId()]) {
      const refused = await call(t.app, here, 'DELETE', `/sessions/${id}`);
      expect(refused.statusCode).toBe(404);
      expect(refused.json().error.code).toBe('not_found');
    }
    expect((await call(t.app, elsewhere, 'GET', '/session')).statusCode).toBe(200);
    expect((await call(t.app, here, 'DELETE', '/sessions/not-a-uuid')).statusCode).toBe(400);

    expect((await call(t.app, here, 'DELETE', `/sessions/${sessions[0].id}`)).statusCode).toBe(204);
    expect((await call(t.app, phone, 'GET', '/session')).statusCode).toBe(401);
    expect((await call(t.app, here, 'GET', '/sessions')).json().sessions).toHaveLength(1);

    const own = await call(t.app, here, 'DELETE', `/sessions/${sessions[1].id}`);
    expect(own.statusCode).toBe(204);
    expect(own.cookies).toContainEqual(expect.objectContaining({ name: 'session', value: '' }));
    expect((await call(t.app, here, 'GET', '/session')).statusCode).toBe(401);
  });
});

describe('password change', () => {
  it('checks the current password, sets the new one in every business it opened, and ends the other sessions', async () => {
    const other = (await createTenant(t.app, 'Other')).businessId;
    await createUser(t.app, businessId, { email: 'pw@acme.test', password: 'first password' });
    await createUser(t.app, other, { email: 'pw@acme.test', password: 'first password' });
    await createUser(t.app, other, { email: 'bystander@acme.test', password: 'first password' });
    const bystander = await signIn(t.app, 'bystander@acme.test', 'first password');
    const [a, b, c] = [
      await signIn(t.app, 'pw@acme.test', 'first password'),
      await signIn(t.app, 'pw@acme.test', 'first password'),
      await signIn(t.app, 'pw@acme.test', 'first password'),
    ];

    const wrong = await call(t.app, a, 'PUT', '/password', {
      current_password: 'not it',
      new_password: 'second password',
    });
    expect(wrong.statusCode).toBe(403);
    expect(wrong.json().error.code).toBe('invalid_credentials');

    for (const payload of [
      { current_password: 'first password', new_password: 'short' },
      { current_password: 'first password' },
      { current_password: 'first password', new_password: 'second password', confirm: 'second password' },
      { current_password: '', new_password: 'second password' },
    ]) {
      const res = await call(t.app, a, 'PUT', '/password', payload);
      expect(res.statusCode, JSON.stringify(payload)).toBe(400);
      expect(res.json().error.code).toBe('validation_error');
    }

    const changed = await call(t.app, a, 'PUT', '/password', {
      current_password: 'first password',
      new_password: 'second password',
    });
    expect(changed.statusCode).toBe(204);
    expect((await call(t.app, a, 'GET', '/session')).statusCode).toBe(200);
    for (const ended of [b, c]) expect((await call(t.app, ended, 'GET', '/session')).statusCode).toBe(401);
    // The statement ends the sessions of these users only.
    expect((await call(t.app, bystander, 'GET', '/session')).statusCode).toBe(200);

    expect((await postSignIn(t.app, { email: 'pw@acme.test', password: 'first password' })).statusCode).toBe(401);
    const again = await postSignIn(t.app, { email: 'pw@acme.test', password: 'second password' });
    expect(
      again
        .json()
        .businesses.map((x: { id: string }) => x.id)
        .sort(),
    ).toEqual([businessId, other].sort());
  });
});

describe('roles and removal through the operator API', () => {
  it('shows roles, changes them with effect on the next request, and refuses what would leave no owner', async () => {
    const tenant = (await createTenant(t.app, 'Roles')).businessId;
    const owner = await createUser(t.app, tenant, {
      email: 'boss@roles.test',
      password: 'correct horse',
      role: 'owner',
    });
    const agent = await createUser(t.app, tenant, { email: 'agent@roles.test', password: 'correct horse' });
    const users = await t.app.inject({
      method: 'GET',
      url: `/admin/v1/businesses/${tenant}/users`,
      headers: adminHeaders,
    });
    expect(users.json().users.map((u: { role: string }) => u.role)).toEqual(['owner', 'agent']);

    const browser = await signIn(t.app, 'agent@roles.test', 'correct horse');
    const invite = { email: 'new@roles.test', name: 'New' };
    const forbidden = await call(t.app, browser, 'POST', '/users', invite);
    expect(forbidden.statusCode).toBe(403);
    expect(forbidden.json().error.code).toBe('forbidden');

    const promoted = await operator('PATCH', `users/${agent.id}`, { role: 'admin', name: 'Agent Smith' }, tenant);
    expect(promoted.statusCode).toBe(200);
    expect(promoted.json().user).toEqual({
      id: agent.id,
      email: 'agent@roles.test',
      name: 'Agent Smith',
      role: 'admin',
    });
    const invited = await call(t.app, browser, 'POST', '/users', invite);
    expect(invited.statusCode).toBe(201);
    expect(invited.json()).toMatchObject({
      user: { email: 'new@roles.test', role: 'agent' },
      invitation: { url: expect.stringMatching(/^http:\/\/dashboard\.test\/dashboard\/invitations\//) },
    });
    const duplicate = await call(t.app, browser, 'POST', '/users', invite);
    expect(duplicate.statusCode).toBe(409);
    for (const payload of [
      {},
      { email: 'x@roles.test' },
      { email: 'nope', name: 'X' },
      { email: 'x@roles.test', name: 'X', role: 'boss' },
      { email: 'x@roles.test', name: 'X', password: 'chosen password' },
    ]) {
      const res = await call(t.app, browser, 'POST', '/users', payload);
      expect(res.statusCode, JSON.stringify(payload)).toBe(400);
      expect(res.json().error.code).toBe('validation_error');
    }
    const ownerInvite = await call(t.app, browser, 'POST', '/users', {
      email: 'o2@roles.test',
      name: 'O',
      role: 'owner',
    });
    expect(ownerInvite.statusCode).toBe(403);

    for (const change of [
      () => operator('PATCH', `users/${owner.id}`, { role: 'admin' }, tenant),
      () => operator('DELETE', `users/${owner.id}`, undefined, tenant),
    ]) {
      const refused = await change();
      expect(refused.statusCode).toBe(409);
      expect(refused.json().error.code).toBe('last_owner');
    }
    expect((await operator('PATCH', `users/${agent.id}`, { role: 'owner' }, tenant)).statusCode).toBe(200);
    expect((await operator('PATCH', `users/${owner.id}`, { role: 'agent' }, tenant)).statusCode).toBe(200);
  });

  it('removes a user: their sessions end, they cannot sign in, the email can be given again, history keeps the row', async () => {
    const { id } = await createUser(t.app, businessId, { email: 'leaving@acme.test', password: 'correct horse' });
    const browser = await signIn(t.app, 'leaving@acme.test', 'correct horse');
    const removed = await operator('DELETE', `users/${id}`);
    expect(removed.statusCode).toBe(200);
    expect(removed.json()).toEqual({ success: true });
    expect((await call(t.app, browser, 'GET', '/session')).statusCode).toBe(401);
    expect(
      await t.database.db.selectFrom('dashboard_sessions').select('id').where('user_id', '=', id).execute(),
    ).toEqual([]);
    expect((await postSignIn(t.app, { email: 'leaving@acme.test', password: 'correct horse' })).statusCode).toBe(401);
    expect((await operator('DELETE', `users/${id}`)).statusCode).toBe(404);
    expect((await operator('PATCH', `users/${id}`, { name: 'Back' })).statusCode).toBe(404);
    const row = await t.database.db
      .selectFrom('users')
      .select(['email', 'deleted_at'])
      .where('id', '=', id)
      .executeTakeFirstOrThrow();
    expect(row.deleted_at).not.toBeNull();
    await createUser(t.app, businessId, { email: 'leaving@acme.test', password: 'correct horse' });
    expect((await postSignIn(t.app, { email: 'leaving@acme.test', password: 'correct horse' })).statusCode).toBe(200);
  });

  it("answers 404 for another business's user, and 400 for bad input", async () => {
    const other = (await createTenant(t.app, 'Elsewhere')).businessId;
    const { id } = await createUser(t.app, other, { email: 'theirs@else.test' });
    expect((await operator('PATCH', `users/${id}`, { name: 'Mine' })).statusCode).toBe(404);
    expect((await operator('DELETE', `users/${id}`)).statusCode).toBe(404);
    for (const payload of [{}, { role: 'boss' }, { name: '' }, { email: 'x@y.test' }, { name: 5 }]) {
      const res = await operator('PATCH', `users/${id}`, payload, other);
      expect(res.statusCode, JSON.stringify(payload)).toBe(400);
      expect(res.json().error.code).toBe('validation_error');
    }
    expect((await operator('DELETE', 'users/nope', undefined, other)).statusCode).toBe(400);
  });
});
