import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../../src/app.ts';
import { openDatabase } from '../../../src/db/database.ts';
import { waitMs } from '../../../src/modules/dashboard-auth/sign-in-throttle.ts';
import { createTenant } from '../../helpers/tenants.ts';
import { buildTestApp, engine, type TestApp } from '../../helpers/test-app.ts';
import { createUser, MINUTE, postSignIn, TestClock } from './dashboard-helpers.ts';

let t: TestApp;
let businessId: string;
const clock = new TestClock();
let address = 0;
const nextAddress = () => `10.1.0.${++address}`;

// Small limits, so that a test reaches them in a few attempts: an account slows after 3 failures and
// locks at 5; an address slows after 6 and locks at 8; a lock lasts 15 minutes.
const env = {
  DASHBOARD_SIGN_IN_ACCOUNT_DELAY_AFTER: '3',
  DASHBOARD_SIGN_IN_ACCOUNT_LOCK_AFTER: '5',
  DASHBOARD_SIGN_IN_ADDRESS_DELAY_AFTER: '6',
  DASHBOARD_SIGN_IN_ADDRESS_LOCK_AFTER: '8',
};

beforeAll(async () => {
  t = await buildTestApp(env, { workers: false, clock });
  businessId = (await createTenant(t.app, 'Acme')).businessId;
});
afterAll(() => t.close());

const attempt = (email: string, password: string, remoteAddress: string, app: FastifyInstance = t.app) =>
  postSignIn(app, { email, password }, { remoteAddress });

describe('the delay rule', () => {
  const limit = { delayAfter: 5, lockAfter: 10 };
  const lock = 15 * MINUTE;
  it('waits 1 s from the 5th failure, doubling, then the lock; a count older than the lock is forgotten', () => {
    expect([0, 4, 5, 6, 7, 9].map((failures) => waitMs(failures, 0, limit, lock, 0))).toEqual([
      0, 0, 1000, 2000, 4000, 16000,
    ]);
    expect(waitMs(10, 0, limit, lock, 60_000)).toBe(lock - 60_000);
    expect(waitMs(6, 0, limit, lock, 1500)).toBe(500);
    expect(waitMs(6, 0, limit, lock, 2500)).toBe(0);
    expect(waitMs(10, 0, limit, lock, lock)).toBe(0);
  });
});

describe('sign-in throttling', () => {
  it('slows an account after repeated failures, then locks it for the lock period, whatever the address', async () => {
    await createUser(t.app, businessId, { email: 'target@acme.test', password: 'right password' });
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await attempt('target@acme.test', 'wrong', nextAddress())).statusCode);
    expect(statuses).toEqual([401, 401, 401]);

    // The 4th attempt must wait 1 s after the 3rd failure, even with the right password, from anywhere.
    const slowed = await attempt('target@acme.test', 'right password', nextAddress());
    expect(slowed.statusCode).toBe(429);
    expect(slowed.headers['retry-after']).toBe('1');
    expect(slowed.json()).toEqual({
      error: { code: 'too_many_attempts', message: 'too many failed sign-ins; try again in 1 s' },
    });
    clock.advance(1000);
    expect((await attempt('target@acme.test', 'wrong', nextAddress())).statusCode).toBe(401);
    clock.advance(1000);
    expect((await attempt('target@acme.test', 'wrong', nextAddress())).statusCode).toBe(429);
    clock.advance(1000);
    expect((await attempt('target@acme.test', 'wrong', nextAddress())).statusCode).toBe(401);

    // Five failures: locked for 15 minutes, the right password too.
    const locked = await attempt('target@acme.test', 'right password', nextAddress());
    expect(locked.statusCode).toBe(429);
    expect(locked.headers['retry-after']).toBe(String(15 * 60));
    clock.advance(14 * MINUTE);
    const still = await attempt('target@acme.test', 'right password', nextAddress());
    expect(still.statusCode).toBe(429);
    expect(still.headers['retry-after']).toBe('60');

    clock.advance(MINUTE);
    expect((await attempt('target@acme.test', 'right password', nextAddress())).statusCode).toBe(200);
    // Success clears the account's count: three more failures before the next delay.
    for (let i = 0; i < 3; i++)
      expect((await attempt('target@acme.test', 'wrong', nextAddress())).statusCode).toBe(401);
    expect((await attempt('target@acme.test', 'wrong', nextAddress())).statusCode).toBe(429);
  });

  it('throttles an unknown email as a known one', async () => {
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await attempt('ghost@acme.test', 'wrong', nextAddress())).statusCode);
    expect(statuses).toEqual([401, 401, 401, 429]);
  });

  it('slows, then locks, an address that fails on many accounts, and not other addresses', async () => {
    const from = nextAddress();
    const statuses = [];
    for (let i = 0; i < 7; i++) {
      statuses.push((await attempt(`spray${i}@acme.test`, 'wrong', from)).statusCode);
      clock.advance(2000);
    }
    // From the 7th failure on the address waits 1 s, 2 s...; the test's clock moved 2 s between attempts.
    expect(statuses).toEqual([401, 401, 401, 401, 401, 401, 401]);
    expect((await attempt('spray7@acme.test', 'wrong', from)).statusCode).toBe(401);
    const locked = await attempt('spray8@acme.test', 'wrong', from);
    expect(locked.statusCode).toBe(429);
    expect(locked.headers['retry-after']).toBe(String(15 * 60));
    expect((await attempt('spray8@acme.test', 'wrong', nextAddress())).statusCode).toBe(401);
    clock.advance(15 * MINUTE);
    expect((await attempt('spray9@acme.test', 'wrong', from)).statusCode).toBe(401);
  });

  it('counts attempts sent at once as they arrive, so none passes the limit unchecked', async () => {
    await createUser(t.app, businessId, { email: 'burst@acme.test', password: 'right password' });
    const answers = await Promise.all(
      Array.from({ length: 12 }, () => attempt('burst@acme.test', 'wrong', nextAddress())),
    );
    const statuses = answers.map((res) => res.statusCode).sort();
    expect(statuses.filter((s) => s === 401)).toHaveLength(3);
    expect(statuses.filter((s) => s === 429)).toHaveLength(9);
  });

  it('is shared by every server process on the database', async () => {
    const other = engine === 'postgres' ? await openDatabase({ ...t.postgres!, poolSize: 2 }) : undefined;
    const second = await buildApp(t.config, {
      database: other ?? t.database,
      logger: false,
      workers: false,
      clock,
    });
    await second.ready();
    try {
      await createUser(t.app, businessId, { email: 'shared@acme.test', password: 'right password' });
      const statuses = [];
      for (const app of [t.app, second, t.app, second])
        statuses.push((await attempt('shared@acme.test', 'wrong', nextAddress(), app)).statusCode);
      expect(statuses).toEqual([401, 401, 401, 429]);
    } finally {
      await second.close();
      await other?.close();
    }
  });

  it('forgets failure counts older than the lock period when it cleans up', async () => {
    await attempt('old@acme.test', 'wrong', nextAddress());
    const count = async () =>
      (await t.database.db.selectFrom('dashboard_sign_in_failures').select('key').execute()).length;
    expect(await count()).toBeGreaterThan(0);
    clock.advance(16 * MINUTE);
    const removed = await t.app.services.dashboardSessions.deleteExpired();
    expect(removed.failures).toBeGreaterThan(0);
    expect(await count()).toBe(0);
  });
});
