import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant } from '../../helpers/tenants.ts';
import { buildTestApp, type TestApp } from '../../helpers/test-app.ts';
import { call, createUser, postSignIn, sessionCookie, TestClock } from './dashboard-helpers.ts';

let t: TestApp;
let businessId: string;
const clock = new TestClock();

beforeAll(async () => {
  t = await buildTestApp({}, { workers: false, clock });
  businessId = (await createTenant(t.app, 'Acme')).businessId;
  await createUser(t.app, businessId, {
    email: 'owner@acme.test',
    name: 'Olga',
    password: 'correct horse',
    role: 'owner',
  });
});
afterAll(() => t.close());

describe('sign-in', () => {
  it('signs in, sets the session cookie, answers the session, and signs out', async () => {
    const res = await postSignIn(t.app, { email: 'Owner@Acme.test', password: 'correct horse' });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body).toEqual({
      user: { id: expect.any(String), email: 'owner@acme.test', name: 'Olga', role: 'owner' },
      business: { id: businessId, name: 'Acme' },
      businesses: [{ id: businessId, name: 'Acme', role: 'owner' }],
      csrf_token: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
    });
    const cookie = sessionCookie(res)!;
    expect(cookie).toMatchObject({ path: '/dashboard', httpOnly: true, sameSite: 'Lax' });
    expect(cookie.secure).toBeUndefined();
    expect(cookie.value).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect((cookie.expires as Date).getTime()).toBe(clock.now() + 30 * 24 * 3600 * 1000 - (clock.now() % 1000));

    const browser = { token: cookie.value, csrf: body.csrf_token };
    const session = await call(t.app, browser, 'GET', '/session');
    expect(session.statusCode).toBe(200);
    expect(session.json()).toEqual(body);

    const out = await call(t.app, browser, 'DELETE', '/session');
    expect(out.statusCode).toBe(204);
    expect(sessionCookie(out)).toMatchObject({ value: '', path: '/dashboard' });
    expect((await call(t.app, browser, 'GET', '/session')).statusCode).toBe(401);
  });
});
