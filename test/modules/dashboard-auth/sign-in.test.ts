import { randomBytes, scrypt } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../../src/lib/ids.ts';
import { createTenant } from '../../helpers/tenants.ts';
import { buildTestApp, type TestApp } from '../../helpers/test-app.ts';
import { call, createUser, postSignIn, sessionCookie, signIn, TestClock } from './dashboard-helpers.ts';

let t: TestApp;
let businessId: string;
const clock = new TestClock();
let address = 0;
/** Each test signs in from its own address, so that one's failures never slow another. */
const nextAddress = () => `10.0.0.${++address}`;

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

const passwordHash = async (email: string) =>
  (await t.database.db.selectFrom('users').select('password_hash').where('email', '=', email).executeTakeFirstOrThrow())
    .password_hash!;

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
    expect((cookie.expires as Date).getTime()).toBe(Math.floor((clock.now() + 30 * 24 * 3600 * 1000) / 1000) * 1000);

    const browser = { token: cookie.value, csrf: body.csrf_token };
    const session = await call(t.app, browser, 'GET', '/session');
    expect(session.statusCode).toBe(200);
    expect(session.json()).toEqual(body);

    const out = await call(t.app, browser, 'DELETE', '/session');
    expect(out.statusCode).toBe(204);
    expect(sessionCookie(out)).toMatchObject({ value: '', path: '/dashboard' });
    const after = await call(t.app, browser, 'GET', '/session');
    expect(after.statusCode).toBe(401);
    expect(after.json().error.code).toBe('unauthorized');
  });

  it('answers an unknown email as a wrong password, after as much work', async () => {
    const remoteAddress = nextAddress();
    const wrong = await postSignIn(t.app, { email: 'owner@acme.test', password: 'wrong horse' }, { remoteAddress });
    const unknown = await postSignIn(t.app, { email: 'nobody@acme.test', password: 'wrong horse' }, { remoteAddress });
    for (const res of [wrong, unknown]) {
      expect(res.statusCode).toBe(401);
      expect(sessionCookie(res)).toBeUndefined();
    }
    expect(unknown.body).toBe(wrong.body);
    expect(wrong.json()).toEqual({ error: { code: 'invalid_credentials', message: 'wrong email or password' } });

    // Both verify one Argon2id hash (a decoy for the unknown email); without the decoy an unknown email would
    // answer in a tenth of the time. Interleaved, the fastest of each, on a machine that may be busy.
    await createUser(t.app, businessId, { email: 'timing@acme.test', password: 'correct horse' });
    const best = { known: Infinity, unknown: Infinity };
    for (let i = 0; i < 4; i++) {
      for (const [kind, email] of [
        ['known', 'timing@acme.test'],
        ['unknown', 'nobody-timing@acme.test'],
      ] as const) {
        const started = performance.now();
        await postSignIn(t.app, { email, password: 'wrong horse' }, { remoteAddress: nextAddress() });
        best[kind] = Math.min(best[kind], performance.now() - started);
      }
    }
    expect(best.unknown).toBeGreaterThan(best.known / 3);
    expect(best.known).toBeGreaterThan(best.unknown / 3);
  });

  it('marks the cookie Secure only when PUBLIC_URL is https; behind a trusted proxy, takes its client address', async () => {
    const https = await buildTestApp({ PUBLIC_URL: 'https://dashboard.test', TRUST_PROXY: '1' }, { workers: false });
    try {
      const tenant = await createTenant(https.app);
      await createUser(https.app, tenant.businessId, { email: 'a@secure.test', password: 'correct horse' });
      const res = await postSignIn(
        https.app,
        { email: 'a@secure.test', password: 'correct horse' },
        { headers: { origin: 'https://dashboard.test', 'x-forwarded-for': '198.51.100.4, 203.0.113.7' } },
      );
      expect(res.statusCode).toBe(200);
      expect(sessionCookie(res)).toMatchObject({ secure: true, httpOnly: true, sameSite: 'Lax', path: '/dashboard' });
      const browser = { token: sessionCookie(res)!.value, csrf: res.json().csrf_token };
      const [session] = (await call(https.app, browser, 'GET', '/sessions')).json().sessions;
      expect(session.ip).toBe('203.0.113.7');
    } finally {
      await https.close();
    }
  });

  it('verifies a password stored with scrypt and stores it again as Argon2id', async () => {
    const { id } = await createUser(t.app, businessId, { email: 'legacy@acme.test' });
    const salt = randomBytes(16);
    const key = await new Promise<Buffer>((resolve, reject) =>
      scrypt('old secret 1', salt, 64, { N: 16384, r: 8, p: 1 }, (err, k) => (err ? reject(err) : resolve(k))),
    );
    const legacy = ['scrypt', 16384, 8, 1, salt.toString('base64url'), key.toString('base64url')].join('$');
    await t.database.db.updateTable('users').set({ password_hash: legacy }).where('id', '=', id).execute();

    const remoteAddress = nextAddress();
    const wrong = await postSignIn(t.app, { email: 'legacy@acme.test', password: 'old secret 2' }, { remoteAddress });
    expect(wrong.statusCode).toBe(401);
    expect(await passwordHash('legacy@acme.test')).toBe(legacy);

    await signIn(t.app, 'legacy@acme.test', 'old secret 1', { remoteAddress });
    const rehashed = await passwordHash('legacy@acme.test');
    expect(rehashed).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
    await signIn(t.app, 'legacy@acme.test', 'old secret 1', { remoteAddress });
    expect(await passwordHash('legacy@acme.test')).toBe(rehashed);
  });

  it('ends the session the browser held when it signs in again', async () => {
    const first = await signIn(t.app, 'owner@acme.test', 'correct horse');
    const again = await postSignIn(
      t.app,
      { email: 'owner@acme.test', password: 'correct horse' },
      { headers: { cookie: `session=${first.token}` } },
    );
    expect(again.statusCode).toBe(200);
    expect((await call(t.app, first, 'GET', '/session')).statusCode).toBe(401);
  });

  it.each([
    ['no password', { email: 'owner@acme.test' }],
    ['no email', { password: 'correct horse' }],
    ['an email that is not one', { email: 'owner', password: 'correct horse' }],
    ['an empty password', { email: 'owner@acme.test', password: '' }],
    ['an over-long password', { email: 'owner@acme.test', password: 'p'.repeat(201) }],
    ['a number for a password', { email: 'owner@acme.test', password: 12345678 }],
    ['an unknown field', { email: 'owner@acme.test', password: 'correct horse', remember: true }],
  ])('answers 400 for %s', async (_name, payload) => {
    const res = await postSignIn(t.app, payload, { remoteAddress: nextAddress() });
    expect(res.statusCode).toBe(400);
    expect(res.json().error.code).toBe('validation_error');
    expect(sessionCookie(res)).toBeUndefined();
  });

  it('answers 400 for malformed JSON, and 415 for a body that is not declared JSON', async () => {
    const malformed = await t.app.inject({
      method: 'POST',
      url: '/dashboard/api/session',
      headers: { 'content-type': 'application/json' },
      payload: '{"email":',
    });
    expect(malformed.statusCode).toBe(400);
    for (const type of ['text/plain', 'application/x-www-form-urlencoded']) {
      const res = await t.app.inject({
        method: 'POST',
        url: '/dashboard/api/session',
        headers: { 'content-type': type },
        payload: 'email=owner@acme.test&password=correct horse',
      });
      expect(res.statusCode, type).toBe(415);
      expect(res.json().error.code).toBe('unsupported_media_type');
    }
  });

  it("refuses a sign-in from another site's page, and takes one from the service's own origin", async () => {
    const payload = { email: 'owner@acme.test', password: 'correct horse' };
    const foreign = await postSignIn(t.app, payload, { headers: { origin: 'https://evil.test' } });
    expect(foreign.statusCode).toBe(403);
    expect(foreign.json().error.code).toBe('csrf_failed');
    expect(sessionCookie(foreign)).toBeUndefined();
    expect((await postSignIn(t.app, payload, { headers: { origin: 'http://dashboard.test' } })).statusCode).toBe(200);
  });
});

describe('several businesses', () => {
  let a: string, b: string, c: string;
  beforeAll(async () => {
    [a, b, c] = [
      (await createTenant(t.app, 'Alpha')).businessId,
      (await createTenant(t.app, 'Beta')).businessId,
      (await createTenant(t.app, 'Gamma')).businessId,
    ];
    await createUser(t.app, a, { email: 'pat@multi.test', password: 'shared secret', role: 'agent' });
    await createUser(t.app, b, { email: 'Pat@Multi.test', password: 'shared secret', role: 'admin' });
    await createUser(t.app, c, { email: 'pat@multi.test', password: 'another secret', role: 'owner' });
    await createUser(t.app, b, { email: 'colleague@multi.test', password: 'shared secret' });
  });

  it('opens the businesses the password opens, acting for the first, and switches only among them', async () => {
    const res = await postSignIn(t.app, { email: 'pat@multi.test', password: 'shared secret' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({
      business: { id: a, name: 'Alpha' },
      user: { role: 'agent' },
      businesses: [
        { id: a, name: 'Alpha', role: 'agent' },
        { id: b, name: 'Beta', role: 'admin' },
      ],
    });
    const browser = { token: sessionCookie(res)!.value, csrf: res.json().csrf_token };
    const alphaUsers = await call(t.app, browser, 'GET', '/users');
    expect(alphaUsers.json().users.map((u: { email: string }) => u.email)).toEqual(['pat@multi.test']);

    clock.advance(1000);
    const switched = await call(t.app, browser, 'PUT', '/session/business', { business_id: b });
    expect(switched.statusCode).toBe(200);
    expect(switched.json()).toMatchObject({ business: { id: b, name: 'Beta' }, user: { role: 'admin' } });
    expect((await call(t.app, browser, 'GET', '/session')).json().business.id).toBe(b);
    const betaUsers = await call(t.app, browser, 'GET', '/users');
    expect(betaUsers.json().users.map((u: { email: string }) => u.email)).toEqual([
      'Pat@Multi.test',
      'colleague@multi.test',
    ]);

    // Gamma's password differs, the others are not Pat's: each answers as a business that does not exist.
    for (const other of [c, businessId, newId()]) {
      const refused = await call(t.app, browser, 'PUT', '/session/business', { business_id: other });
      expect(refused.statusCode).toBe(404);
      expect(refused.json().error.code).toBe('not_found');
    }
    expect((await call(t.app, browser, 'GET', '/session')).json().business.id).toBe(b);

    // The next sign-in acts for the business used last.
    const next = await postSignIn(t.app, { email: 'pat@multi.test', password: 'shared secret' });
    expect(next.json().business.id).toBe(b);
    const gamma = await postSignIn(t.app, { email: 'pat@multi.test', password: 'another secret' });
    expect(gamma.json()).toMatchObject({ business: { id: c }, businesses: [{ id: c, role: 'owner' }] });
  });

  it('answers 400 for a switch to something that is not a business id, or with other fields', async () => {
    const browser = await signIn(t.app, 'pat@multi.test', 'shared secret');
    for (const payload of [{}, { business_id: 'alpha' }, { business_id: a, role: 'owner' }, { business_id: 5 }]) {
      const res = await call(t.app, browser, 'PUT', '/session/business', payload);
      expect(res.statusCode, JSON.stringify(payload)).toBe(400);
      expect(res.json().error.code).toBe('validation_error');
    }
  });
});
