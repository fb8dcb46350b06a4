import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminHeaders, createTenant } from '../../helpers/tenants.ts';
import { buildTestApp, type TestApp } from '../../helpers/test-app.ts';
import { call, createUser, DAY, postSignIn, sessionCookie, signIn, TestClock } from './dashboard-helpers.ts';

let t: TestApp;
let businessId: string;
const clock = new TestClock();

beforeAll(async () => {
  t = await buildTestApp({}, { workers: false, clock });
  businessId = (await createTenant(t.app, 'Acme')).businessId;
});
afterAll(() => t.close());

const accept = (payload: unknown, headers: Record<string, string> = {}) =>
  t.app.inject({
    method: 'POST',
    url: '/dashboard/api/invitations/accept',
    headers: { 'content-type': 'application/json', ...headers },
    payload: JSON.stringify(payload),
  });
const tokenOf = (url: string) => url.split('/').pop()!;

describe('invitations', () => {
  it('creates a user without a password and a link that sets it and signs in, once', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: `/admin/v1/businesses/${businessId}/users`,
      headers: adminHeaders,
      payload: { email: 'new@acme.test', name: 'Newcomer', role: 'admin', invite: true },
    });
    expect(res.statusCode).toBe(201);
    const { user, invitation } = res.json();
    expect(user).toEqual({ id: expect.any(String), email: 'new@acme.test', name: 'Newcomer', role: 'admin' });
    expect(invitation.url).toMatch(
      /^http:\/\/dashboard\.test\/dashboard\/invitations\/[A-Za-z0-9_-]{32}\.[0-9]+\.[A-Za-z0-9_-]{43}$/,
    );
    expect(Date.parse(invitation.expires_at)).toBe(clock.now() + 7 * DAY);
    const stored = await t.database.db.selectFrom('dashboard_invitations').select('token_hash').execute();
    expect(JSON.stringify(stored)).not.toContain(tokenOf(invitation.url));

    // No password yet: sign-in answers as for anyone else.
    expect((await postSignIn(t.app, { email: 'new@acme.test', password: 'chosen password' })).statusCode).toBe(401);

    const accepted = await accept({ token: tokenOf(invitation.url), password: 'chosen password', name: 'Nora' });
    expect(accepted.statusCode).toBe(200);
    expect(accepted.json()).toMatchObject({
      user: { id: user.id, email: 'new@acme.test', name: 'Nora', role: 'admin' },
      business: { id: businessId, name: 'Acme' },
    });
    const browser = { token: sessionCookie(accepted)!.value, csrf: accepted.json().csrf_token };
    expect((await call(t.app, browser, 'GET', '/session')).statusCode).toBe(200);
    await signIn(t.app, 'new@acme.test', 'chosen password');

    const again = await accept({ token: tokenOf(invitation.url), password: 'another password' });
    expect(again.statusCode).toBe(410);
    expect(again.json().error.code).toBe('invitation_used');
    expect((await postSignIn(t.app, { email: 'new@acme.test', password: 'another password' })).statusCode).toBe(401);
  });

  it('refuses an expired link, a made-up or altered one, and the link of a removed user', async () => {
    const late = await createUser(t.app, businessId, { email: 'late@acme.test', invite: true });
    const removed = await createUser(t.app, businessId, { email: 'gone@acme.test', invite: true });
    const token = tokenOf(late.invitation!.url);
    const [nonce, exp, sig] = token.split('.');

    for (const made of [
      `${nonce}.${Number(exp) + 86400}.${sig}`,
      `${'A'.repeat(32)}.${exp}.${sig}`,
      `${nonce}.${exp}.${'B'.repeat(43)}`,
      'not-a-token',
    ]) {
      const res = await accept({ token: made, password: 'chosen password' });
      expect(res.statusCode, made).toBe(404);
      expect(res.json().error.code).toBe('not_found');
    }

    await t.app.inject({
      method: 'DELETE',
      url: `/admin/v1/businesses/${businessId}/users/${removed.id}`,
      headers: adminHeaders,
    });
    const ofRemoved = await accept({ token: tokenOf(removed.invitation!.url), password: 'chosen password' });
    expect(ofRemoved.statusCode).toBe(410);

    clock.advance(7 * DAY);
    const expired = await accept({ token, password: 'chosen password' });
    expect(expired.statusCode).toBe(410);
    expect(expired.json().error.code).toBe('invitation_expired');
  });

  it.each([
    ['no token', { password: 'chosen password' }],
    ['no password', { token: 'x.1.y' }],
    ['a short password', { token: 'x.1.y', password: 'short' }],
    ['an empty name', { token: 'x.1.y', password: 'chosen password', name: '' }],
    ['an unknown field', { token: 'x.1.y', password: 'chosen password', role: 'owner' }],
    ['an over-long token', { token: 'x'.repeat(201), password: 'chosen password' }],
  ])('answers 400 for %s', async (_name, payload) => {
    const res = await accept(payload);
    expect(res.statusCode).toBe(400);
    expect(res.json().error.code).toBe('validation_error');
  });

  it('needs a JSON body from the service’s own origin', async () => {
    const foreign = await accept({ token: 'x.1.y', password: 'chosen password' }, { origin: 'https://evil.test' });
    expect(foreign.statusCode).toBe(403);
    const form = await t.app.inject({
      method: 'POST',
      url: '/dashboard/api/invitations/accept',
      headers: { 'content-type': 'text/plain' },
      payload: 'token=x',
    });
    expect(form.statusCode).toBe(415);
  });
});
