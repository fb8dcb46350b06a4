import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../../src/app.ts';
import { insertContact } from '../../helpers/factories.ts';
import { buildTestApp, type TestApp } from '../../helpers/test-app.ts';
import { createTenant, type Tenant } from '../../helpers/tenants.ts';
import { WINDOW } from './export-helpers.ts';

const redisUrl = process.env.TEST_REDIS_URL ?? process.env.REDIS_URL;
const stores: [string, Record<string, string>][] = [
  ['database', {}],
  ...(redisUrl ? [['redis', { REDIS_URL: redisUrl }] as [string, Record<string, string>]] : []),
];

describe.each(stores)('rate limits (%s store)', (_store, storeEnv) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp({ ...storeEnv, RATE_LIMIT_EXPORTS_PER_MINUTE: '3', RATE_LIMIT_EVENTS_PER_MINUTE: '2' });
  });
  afterAll(() => t.close());

  const get = (tenant: Tenant, url: string, app = t.app) => app.inject({ method: 'GET', url, headers: tenant.headers });

  it('shares 3 a minute between GET /messages and the timeline, with the headers on every answer', async () => {
    const tenant = await createTenant(t.app);
    const contact = await insertContact(t.database.db, tenant.businessId, {});
    const answers = [
      await get(tenant, `/external/v2/messages?${WINDOW}`),
      await get(tenant, `/external/v2/contacts/${contact.id}/timeline`),
      await get(tenant, `/external/v2/messages?since=nonsense`),
      await get(tenant, `/external/v2/contacts/${contact.id}/timeline`),
      await get(tenant, `/external/v2/messages?${WINDOW}`),
    ];
    expect(answers.map((a) => a.statusCode)).toEqual([200, 200, 400, 429, 429]);
    answers.forEach((a, i) => {
      expect(a.headers['ratelimit-policy']).toBe('"exports";q=3;w=60');
      const m = /^"exports";r=(\d+);t=(\d+)$/.exec(String(a.headers.ratelimit));
      expect(m, String(a.headers.ratelimit)).not.toBeNull();
      expect(Number(m![1])).toBe(Math.max(0, 2 - i));
      expect(Number(m![2])).toBeGreaterThanOrEqual(1);
      expect(Number(m![2])).toBeLessThanOrEqual(60);
    });
    const limited = answers[3];
    expect(limited.json()).toEqual({ error: { code: 'rate_limited', message: expect.stringContaining('rate limit') } });
    expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(answers[0].headers['retry-after']).toBeUndefined();
  });

  it('counts GET /events apart, and each business apart', async () => {
    const tenant = await createTenant(t.app, 'Events');
    const other = await createTenant(t.app, 'Other');
    for (let i = 0; i < 3; i++) await get(tenant, `/external/v2/messages?${WINDOW}`);
    const events = [];
    for (let i = 0; i < 3; i++) events.push(await get(tenant, `/external/v2/events?${WINDOW}`));
    expect(events.map((e) => e.statusCode)).toEqual([200, 200, 429]);
    expect(events[0].headers['ratelimit-policy']).toBe('"events";q=2;w=60');
    expect(events[1].headers.ratelimit).toMatch(/^"events";r=0;t=\d+$/);
    expect((await get(other, `/external/v2/events?${WINDOW}`)).statusCode).toBe(200);
    expect((await get(other, `/external/v2/messages?${WINDOW}`)).statusCode).toBe(200);
  });

  it('is shared by every server process on the same store', async () => {
    const second = await buildApp(t.config, { database: t.database, logger: false, workers: false });
    await second.ready();
    try {
      const tenant = await createTenant(t.app, 'Shared');
      const statuses = [];
      for (const app of [t.app, second, t.app, second])
        statuses.push((await get(tenant, `/external/v2/messages?${WINDOW}`, app)).statusCode);
      expect(statuses).toEqual([200, 200, 200, 429]);
    } finally {
      await second.close();
    }
  });

  it('leaves other endpoints unlimited and without the headers', async () => {
    const tenant = await createTenant(t.app, 'Others');
    const contact = await insertContact(t.database.db, tenant.businessId, {});
    for (let i = 0; i < 5; i++) {
      const res = await get(tenant, `/external/v2/contacts/${contact.id}/messages`);
      expect(res.statusCode).toBe(200);
      expect(res.headers.ratelimit).toBeUndefined();
    }
  });
});

describe('rate limit windows', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp({ RATE_LIMIT_EXPORTS_PER_MINUTE: '1', RATE_LIMIT_WINDOW_SECONDS: '1' });
  });
  afterAll(() => t.close());

  it('opens again when the window ends', async () => {
    const tenant = await createTenant(t.app);
    const get = () => t.app.inject({ method: 'GET', url: `/external/v2/messages?${WINDOW}`, headers: tenant.headers });
    expect((await get()).statusCode).toBe(200);
    const second = await get();
    expect(second.statusCode).toBe(429);
    expect(second.headers['ratelimit-policy']).toBe('"exports";q=1;w=1');
    await new Promise((r) => setTimeout(r, Number(second.headers['retry-after']) * 1000 + 50));
    expect((await get()).statusCode).toBe(200);
  });
});
